"""Batch APIs for offline judging (`connection.batch: true`): a judge's requests gather into a
spool file on disk, go to the provider as one batch job (OpenAI and Azure: Files + Batches;
Anthropic: Message Batches), are polled with a growing wait, and come back through the
provider's own `read`, so the answer checks of live answers apply unchanged.

`BatchQueue.send` stands in for the HTTP call of one request: it returns the answer body
the live endpoint would have returned, or raises `JudgeCallError` with the cause (the judge
abstains). The batch ids go to the run folder's `judge_batches.json` before any wait, so a
run killed mid-batch resumes the same batches: a request whose id a recorded batch holds
waits for that batch and is never sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from redjury.judges.config import ConnectionType
from redjury.judges.engine import JudgeCallError, JudgeEngine, Route, _call_error, public_url
from redjury.judges.providers import Provider, dumps_json

LEDGER_NAME = "judge_batches.json"
BATCH_TYPES = (ConnectionType.OPENAI, ConnectionType.AZURE_OPENAI, ConnectionType.ANTHROPIC)
# The providers' own caps on one batch: requests, and bytes of the upload.
MAX_REQUESTS = {"openai": 50_000, "azure": 100_000, "anthropic": 100_000}
MAX_UPLOAD_BYTES = {"openai": 200 * 2**20, "azure": 200 * 2**20, "anthropic": 256 * 2**20}
MAX_POLL_S = 300.0
# Bytes of one control answer (a batch object, a file object).
MAX_CONTROL_BYTES = 2**20
CONTROL_RETRIES = 4


class BatchError(JudgeCallError):
    """A batch call failed for good; every request it held abstains with this cause."""


# -- the record in the run folder -------------------------------------------------------------


class BatchLedger:
    """The batches submitted from one run folder: `judge_batches.json`, rewritten atomically
    after each submission. Without a folder (an in-memory run) nothing is kept."""

    def __init__(self, folder: Path | None) -> None:
        self.path = folder / LEDGER_NAME if folder is not None else None
        self.batches: list[dict[str, Any]] = []
        if self.path is not None and self.path.exists():
            self.batches = _read_ledger(self.path)

    def recorded(self, queue_key: str) -> list[dict[str, Any]]:
        return [b for b in self.batches if b.get("queue") == queue_key]

    def add(self, entry: dict[str, Any]) -> None:
        self.batches.append(entry)
        if self.path is None:
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(orjson.dumps({"version": 1, "batches": self.batches}))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def _read_ledger(path: Path) -> list[dict[str, Any]]:
    try:
        data = orjson.loads(path.read_bytes())
        batches = data["batches"]
        if not isinstance(batches, list) or not all(isinstance(b, dict) for b in batches):
            raise TypeError
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ValueError(
            f"{path}: not a judge batch record ({type(exc).__name__}); move it away to "
            "submit the requests again (the batches it named would be paid twice)"
        ) from None
    return batches


# -- the wire formats -------------------------------------------------------------------------


class BatchWire:
    """How one provider's batch endpoints are called and read."""

    kind = ""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.base = provider.base_url

    def line(self, custom_id: str, body: bytes) -> bytes:
        raise NotImplementedError

    def url(self, path: str) -> str:
        return self.base + path

    async def submit(self, http: BatchHTTP, spool: Path, count: int) -> dict[str, Any]:
        raise NotImplementedError

    async def poll(self, http: BatchHTTP, batch_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def status(self, batch: dict[str, Any]) -> tuple[str, bool, str]:
        """(status, ended, progress text) of a batch object."""
        raise NotImplementedError

    async def results(self, http: BatchHTTP, batch: dict[str, Any], folder: Path) -> list[Path]:
        raise NotImplementedError

    def outcome(self, item: dict[str, Any]) -> tuple[str, bytes | str]:
        """(custom_id, answer body) or (custom_id, abstention cause) of one results line."""
        raise NotImplementedError

    def ended_cause(self, batch: dict[str, Any]) -> str:
        """Why a request the ended batch gave no line for is unanswered."""
        raise NotImplementedError


class OpenAIBatchWire(BatchWire):
    kind = "openai"
    # The path each JSONL line names, and the batch's `endpoint`.
    endpoint = "/v1/chat/completions"
    query = ""

    def line(self, custom_id: str, body: bytes) -> bytes:
        head = {"custom_id": custom_id, "method": "POST", "url": self.endpoint}
        return dumps_json(head)[:-1] + b',"body":' + body + b"}\n"

    def url(self, path: str) -> str:
        return self.base + path + self.query

    async def submit(self, http: BatchHTTP, spool: Path, count: int) -> dict[str, Any]:
        with open(spool, "rb") as f:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field(
                "file", f, filename="redjury-requests.jsonl", content_type="application/jsonl"
            )
            uploaded = await http.call("POST", self.url("/files"), form, retry=False)
        file_id = _field(uploaded, "id", "the uploaded file")
        create = {
            "input_file_id": file_id,
            "endpoint": self.endpoint,
            "completion_window": "24h",
        }
        batch = await http.call("POST", self.url("/batches"), dumps_json(create), json=True)
        return {"id": _field(batch, "id", "the created batch"), "input_file_id": file_id}

    async def poll(self, http: BatchHTTP, batch_id: str) -> dict[str, Any]:
        return await http.call("GET", self.url(f"/batches/{batch_id}"))

    def status(self, batch: dict[str, Any]) -> tuple[str, bool, str]:
        status = str(batch.get("status"))
        counts = batch.get("request_counts") or {}
        progress = (
            f"{counts.get('completed', 0)} completed, {counts.get('failed', 0)} failed "
            f"of {counts.get('total', '?')}"
        )
        return status, status in ("completed", "failed", "expired", "cancelled"), progress

    async def results(self, http: BatchHTTP, batch: dict[str, Any], folder: Path) -> list[Path]:
        paths = []
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if file_id:
                dest = folder / f"{batch['id']}.{key}.jsonl"
                await http.download(self.url(f"/files/{file_id}/content"), dest)
                paths.append(dest)
        return paths

    def outcome(self, item: dict[str, Any]) -> tuple[str, bytes | str]:
        custom_id = str(item.get("custom_id"))
        error = item.get("error")
        response = item.get("response") or {}
        if error:
            return custom_id, _coded("batch item failed", error)
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return custom_id, dumps_json(body)
        detail = (body or {}).get("error") if isinstance(body, dict) else None
        cause = f"batch item failed: HTTP {status}"
        return custom_id, _coded(cause, detail) if isinstance(detail, dict) else cause

    def ended_cause(self, batch: dict[str, Any]) -> str:
        status = batch.get("status")
        if status == "expired":
            return "batch_expired: the batch ended before this request was answered"
        if status == "cancelled":
            return "batch_cancelled"
        errors = ((batch.get("errors") or {}).get("data")) or []
        if status == "failed" and errors and isinstance(errors[0], dict):
            return _coded("batch failed", errors[0])
        return f"batch {status}: no result for this request"


class AzureBatchWire(OpenAIBatchWire):
    """Azure OpenAI: `/openai/files`, `/openai/batches` with `api-version`; lines name the
    deployment as the model and `/chat/completions` as the URL."""

    kind = "azure"
    endpoint = "/chat/completions"

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        conn = provider.spec.connection
        version = conn.api_version or "2024-10-21"
        self.base = provider.base_url + "/openai"
        self.query = f"?api-version={version}"
        self.deployment = conn.deployment or provider.spec.name

    def line(self, custom_id: str, body: bytes) -> bytes:
        payload = orjson.loads(body)
        payload["model"] = self.deployment
        return super().line(custom_id, dumps_json(payload))


class AnthropicBatchWire(BatchWire):
    kind = "anthropic"

    def line(self, custom_id: str, body: bytes) -> bytes:
        return b'{"custom_id":' + dumps_json(custom_id) + b',"params":' + body + b"}\n"

    async def submit(self, http: BatchHTTP, spool: Path, count: int) -> dict[str, Any]:
        # The requests as one JSON body, streamed from the spool to a file and from it.
        body_path = spool.with_suffix(".json")
        with open(spool, "rb") as src, open(body_path, "wb") as dst:
            dst.write(b'{"requests":[')
            for i, line in enumerate(src):
                dst.write(b"," + line.rstrip(b"\n") if i else line.rstrip(b"\n"))
            dst.write(b"]}")
        try:
            with open(body_path, "rb") as f:
                batch = await http.call(
                    "POST", self.url("/messages/batches"), f, json=True, retry=False
                )
        finally:
            body_path.unlink(missing_ok=True)
        return {"id": _field(batch, "id", "the created batch")}

    async def poll(self, http: BatchHTTP, batch_id: str) -> dict[str, Any]:
        return await http.call("GET", self.url(f"/messages/batches/{batch_id}"))

    def status(self, batch: dict[str, Any]) -> tuple[str, bool, str]:
        status = str(batch.get("processing_status"))
        c = batch.get("request_counts") or {}
        progress = ", ".join(
            f"{c.get(k, 0)} {k}"
            for k in ("succeeded", "errored", "expired", "canceled", "processing")
        )
        return status, status == "ended", progress

    async def results(self, http: BatchHTTP, batch: dict[str, Any], folder: Path) -> list[Path]:
        # The key goes only to the judge's own server: a results_url elsewhere is not used.
        own = self.url(f"/messages/batches/{batch['id']}/results")
        given = batch.get("results_url")
        url = given if isinstance(given, str) and _same_origin(given, self.base) else own
        dest = folder / f"{batch['id']}.results.jsonl"
        await http.download(url, dest)
        return [dest]

    def outcome(self, item: dict[str, Any]) -> tuple[str, bytes | str]:
        custom_id = str(item.get("custom_id"))
        result = item.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return custom_id, dumps_json(result["message"])
        if kind == "errored":
            inner = (result.get("error") or {}).get("error") or {}
            detail = f"{inner.get('type', 'error')}: {inner.get('message', '')}".rstrip(": ")
            return custom_id, f"batch item errored: {detail}"
        if kind == "expired":
            return custom_id, "batch_expired: the batch ended before this request was answered"
        if kind == "canceled":
            return custom_id, "batch_canceled"
        return custom_id, f"batch item: unknown result type {kind!r}"

    def ended_cause(self, batch: dict[str, Any]) -> str:
        return "batch ended without a result for this request"


WIRES: dict[ConnectionType, type[BatchWire]] = {
    ConnectionType.OPENAI: OpenAIBatchWire,
    ConnectionType.AZURE_OPENAI: AzureBatchWire,
    ConnectionType.ANTHROPIC: AnthropicBatchWire,
}


def _field(obj: dict[str, Any], name: str, what: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise BatchError(f"malformed response: {what} has no {name}")
    return value


def _coded(prefix: str, error: Any) -> str:
    if not isinstance(error, dict):
        return prefix
    code, message = error.get("code") or error.get("type"), error.get("message")
    return f"{prefix}: " + ": ".join(str(p) for p in (code, message) if p)


def _same_origin(url: str, base: str) -> bool:
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


# -- HTTP for the batch endpoints -------------------------------------------------------------


class BatchHTTP:
    """The control calls and downloads of one judge's batches, on the engine's session, its
    TLS and proxy; the judge's headers; a few retries on 429, 5xx and connection faults."""

    def __init__(self, engine: JudgeEngine, route: Route, max_download: int) -> None:
        self.engine = engine
        self.route = route
        self.max_download = max_download
        self.headers = {k: v for k, v in route.headers.items() if k.lower() != "content-type"}

    async def call(
        self, method: str, url: str, data: Any = None, *, json: bool = False, retry: bool = True
    ) -> dict[str, Any]:
        headers = dict(self.headers)
        if json:
            headers["content-type"] = "application/json"
        for attempt in range(CONTROL_RETRIES + 1):
            status, body = await self._once(method, url, data, headers)
            if status < 300:
                try:
                    obj = orjson.loads(body)
                except orjson.JSONDecodeError:
                    raise BatchError(f"malformed response from {public_url(url)}") from None
                if not isinstance(obj, dict):
                    raise BatchError(f"malformed response from {public_url(url)}")
                return obj
            # An upload is not sent twice: its body was a file already read.
            if not retry or attempt == CONTROL_RETRIES or (400 <= status < 500 and status != 429):
                raise BatchError(f"HTTP {status} from {public_url(url)}{_message(body)}")
            await asyncio.sleep(min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    async def _once(
        self, method: str, url: str, data: Any, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        ep = self.route.endpoint
        try:
            async with self.engine.session().request(
                method,
                url,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.route.timeout),
                ssl=ep.ssl if ep.ssl is not None else True,
                proxy=ep.proxy,
                allow_redirects=False,
            ) as resp:
                body = await resp.content.read(MAX_CONTROL_BYTES + 1)
                return resp.status, body[:MAX_CONTROL_BYTES]
        except Exception as exc:
            error = _call_error(exc, self.route)
            raise BatchError(str(getattr(error, "reason", error))) from None

    async def download(self, url: str, dest: Path) -> None:
        """Stream a results file to `dest`, at most `max_download` bytes."""
        ep = self.route.endpoint
        try:
            async with self.engine.session().get(
                url,
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_read=self.route.timeout),
                ssl=ep.ssl if ep.ssl is not None else True,
                proxy=ep.proxy,
                allow_redirects=False,
            ) as resp:
                if resp.status >= 300:
                    raise BatchError(f"HTTP {resp.status} from {public_url(url)}")
                size = 0
                with open(dest, "wb") as f:
                    async for chunk in resp.content.iter_chunked(2**16):
                        size += len(chunk)
                        if size > self.max_download:
                            raise BatchError(
                                f"results of {public_url(url)} over {self.max_download} bytes"
                            )
                        f.write(chunk)
        except JudgeCallError:
            raise
        except Exception as exc:
            error = _call_error(exc, self.route)
            raise BatchError(str(getattr(error, "reason", error))) from None


def _message(body: bytes) -> str:
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return ": " + error["message"][:300]
    return ""


# -- the queue --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Submitted:
    entry: dict[str, Any]
    ids: set[str]
    task: asyncio.Task[None] | None = None


@dataclass(slots=True)
class _Spool:
    path: Path
    file: IO[bytes]
    ids: list[str] = field(default_factory=list)
    size: int = 0


class BatchQueue:
    """One judge's batch requests: gathered, submitted, polled, fetched, handed out."""

    def __init__(
        self,
        name: str,
        queue_key: str,
        provider: Provider,
        engine: JudgeEngine,
        route: Route,
        key_of: Callable[[bytes], str],
        *,
        max_answer_bytes: int,
        say: Callable[[str], None] | None = None,
    ) -> None:
        conn = provider.spec.connection
        self.name = name
        self.queue_key = queue_key
        self.wire = WIRES[ConnectionType(conn.type)](provider)
        self.key_of = key_of
        self.size = min(conn.batch_size, MAX_REQUESTS[self.wire.kind])
        self.max_bytes = MAX_UPLOAD_BYTES[self.wire.kind]
        self.gather_s = conn.batch_gather
        self.poll_s = conn.batch_poll
        self.max_wait = conn.batch_max_wait
        self.max_answer_bytes = max_answer_bytes
        self.http = BatchHTTP(engine, route, max_download=self.size * max_answer_bytes)
        self.say = say or _stderr
        self.ledger = BatchLedger(None)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.folder: Path | None = None
        self.waiting: dict[str, list[asyncio.Future[bytes]]] = {}
        self.answers: dict[str, bytes | str] = {}
        self.by_id: dict[str, _Submitted] = {}
        self.submitted: list[_Submitted] = []
        self.spool: _Spool | None = None
        self._last = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._loaded = False
        self.creates = 0

    def use_folder(self, folder: Path | None) -> None:
        """Keep the batch record in `folder` (a run folder) and resume what it names."""
        self.ledger = BatchLedger(folder)
        self.folder = folder
        self._loaded = False

    def _work_dir(self) -> Path:
        if self.folder is not None:
            path = self.folder / "judge_batches"
            path.mkdir(parents=True, exist_ok=True)
            return path
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="redjury-batch-")
        return Path(self._tmp.name)

    def _load(self) -> None:
        self._loaded = True
        for entry in self.ledger.recorded(self.queue_key):
            sub = _Submitted(entry, set(entry.get("custom_ids") or ()))
            self.submitted.append(sub)
            for cid in sub.ids:
                self.by_id[cid] = sub

    async def send(self, body: bytes) -> bytes:
        """The answer body for one request, once its batch has ended; JudgeCallError else."""
        if not self._loaded:
            self._load()
        cid = self.key_of(body)
        answer = self.answers.pop(cid, None)
        if answer is not None:
            return _answer(answer)
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        twins = self.waiting.setdefault(cid, [])
        twins.append(future)
        if len(twins) == 1:
            sub = self.by_id.get(cid)
            if sub is not None:
                self._watch(sub)
            else:
                self._enqueue(cid, body)
        return _answer(await future)

    def _enqueue(self, cid: str, body: bytes) -> None:
        line = self.wire.line(cid, body)
        spool = self.spool
        if spool is not None and spool.size + len(line) > self.max_bytes:
            self._submit_now()
            spool = None
        if spool is None:
            fd, name = tempfile.mkstemp(suffix=".jsonl", dir=self._work_dir())
            spool = self.spool = _Spool(Path(name), os.fdopen(fd, "wb"))
        spool.file.write(line)
        spool.ids.append(cid)
        spool.size += len(line)
        self._last = time.monotonic()
        if len(spool.ids) >= self.size:
            self._submit_now()
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_when_quiet())

    async def _flush_when_quiet(self) -> None:
        while self.spool is not None:
            quiet = time.monotonic() - self._last
            if quiet >= self.gather_s:
                self._submit_now()
                return
            await asyncio.sleep(self.gather_s - quiet)

    def _submit_now(self) -> None:
        spool, self.spool = self.spool, None
        if spool is None:
            return
        spool.file.close()
        sub = _Submitted({}, set(spool.ids))
        for cid in spool.ids:
            self.by_id[cid] = sub
        self.submitted.append(sub)
        sub.task = asyncio.ensure_future(self._run(sub, spool))

    def _watch(self, sub: _Submitted) -> None:
        if sub.task is None:
            sub.task = asyncio.ensure_future(self._run(sub, None))

    async def _run(self, sub: _Submitted, spool: _Spool | None) -> None:
        try:
            if spool is not None:
                await self._create(sub, spool)
            await self._fetch(sub, await self._wait(sub))
        except JudgeCallError as exc:
            self._fail(sub, str(exc))
        except Exception as exc:  # a bug or a disk error: the requests abstain, named
            self._fail(sub, f"batch failed: {type(exc).__name__}: {exc}")

    async def _create(self, sub: _Submitted, spool: _Spool) -> None:
        try:
            made = await self.wire.submit(self.http, spool.path, len(spool.ids))
        finally:
            spool.path.unlink(missing_ok=True)
        self.creates += 1
        sub.entry = {
            "queue": self.queue_key,
            "judge": self.name,
            "provider": self.wire.kind,
            **made,
            "submitted_at": time.time(),
            "requests": len(spool.ids),
            "custom_ids": spool.ids,
        }
        self.ledger.add(sub.entry)
        self.say(f"judge {self.name}: batch {made['id']} submitted ({len(spool.ids)} requests)")

    async def _wait(self, sub: _Submitted) -> dict[str, Any]:
        """Poll until the batch ends or the wait runs out; the final batch object."""
        batch_id = sub.entry["id"]
        # From now: a resumed run waits its own max_wait for a batch an earlier run sent.
        deadline = time.time() + self.max_wait
        delay = self.poll_s
        shown = ""
        while True:
            batch = await self.wire.poll(self.http, batch_id)
            status, ended, progress = self.wire.status(batch)
            line = f"judge {self.name}: batch {batch_id} {status}: {progress}"
            if line != shown:
                self.say(line)
                shown = line
            if ended:
                return batch
            left = deadline - time.time()
            if left <= 0:
                raise BatchError(
                    f"batch_timeout: batch {batch_id} still {status} after "
                    f"{self.max_wait:g}s (connection.batch_max_wait); it stays recorded"
                )
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 1.5, MAX_POLL_S)

    async def _fetch(self, sub: _Submitted, batch: dict[str, Any]) -> None:
        paths = await self.wire.results(self.http, batch, self._work_dir())
        try:
            for path in paths:
                self._read_results(path, sub)
        finally:
            for path in paths:
                path.unlink(missing_ok=True)
        self._fail(sub, self.wire.ended_cause(batch))

    def _read_results(self, path: Path, sub: _Submitted) -> None:
        with open(path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    item = orjson.loads(raw)
                    cid, outcome = self.wire.outcome(item)
                except (orjson.JSONDecodeError, AttributeError, TypeError):
                    continue
                if cid not in sub.ids:
                    continue
                self._hand_out(cid, outcome)

    def _hand_out(self, cid: str, outcome: bytes | str) -> None:
        futures = self.waiting.pop(cid, None)
        if not futures:
            # Asked for later (a resumed run), or never again: kept until asked.
            self.answers[cid] = outcome
            return
        for future in futures:
            if not future.done():
                future.set_result(outcome)  # type: ignore[arg-type]

    def _fail(self, sub: _Submitted, cause: str) -> None:
        """Every request of `sub` still waiting abstains with `cause`."""
        for cid in list(sub.ids):
            futures = self.waiting.pop(cid, None)
            for future in futures or ():
                if not future.done():
                    future.set_exception(JudgeCallError(cause))
        # A request asked again later waits for a new batch: this one is done with.
        for cid in sub.ids:
            if self.by_id.get(cid) is sub:
                del self.by_id[cid]
        sub.ids = set()

    async def aclose(self) -> None:
        tasks = [s.task for s in self.submitted if s.task is not None and not s.task.done()]
        if self._flusher is not None:
            tasks.append(self._flusher)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.spool is not None:
            self.spool.file.close()
            self.spool.path.unlink(missing_ok=True)
            self.spool = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _answer(outcome: bytes | str) -> bytes:
    if isinstance(outcome, str):
        raise JudgeCallError(outcome)
    return outcome


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
