"""Batch APIs for offline judging (`connection.batch: true`): a judge's requests gather into a
spool file on disk, go to the provider as one batch job (OpenAI and Azure: Files + Batches;
Anthropic: Message Batches), are polled with a growing wait, and come back through the
provider's own `read`, so the answer checks of live answers apply unchanged.

`BatchQueue.send` stands in for the HTTP call of one request: it returns the answer body
the live endpoint would have returned, or raises `JudgeCallError` with the cause (the judge
abstains). The batch ids go to the run folder's `judge_batches.json` before any wait, so a
run killed mid-batch resumes the same batches: a request whose id a recorded batch holds
waits for that batch and is never sent again.

Before each upload and create an intent is recorded there (a token, the request count, the
time, the spool), then the uploaded file; the token names the upload and goes with the create
(OpenAI/Azure `metadata`). A run stopped inside the create finds its batch in the provider's
listing and adopts it; it creates only where the listing proves there is none, and stops
(`BatchRefusal`) where it cannot tell. A run stopped inside the upload finds the file by its
name in the provider's file listing and adopts it rather than upload again; a recorded file
the provider no longer has is uploaded again from the spool, kept until the batch id is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson

from redjury.errors import RedjuryError
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
# The metadata key an OpenAI/Azure batch carries its intent's token under.
TOKEN_KEY = "redjury_intent"
# Resuming an intent (a create whose answer was never recorded): pages of the provider's
# batch listing read at most, and the seconds between the intent and the batch's
# `created_at` that still match (clocks differ; Anthropic keeps nothing else to match by).
MAX_LIST_PAGES = 20
CLOCK_SLACK_S = 120.0


class BatchError(JudgeCallError):
    """A batch call failed for good; every request it held abstains with this cause.
    `status`: the HTTP status of the answer that said so, where one did."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BatchRefusal(RedjuryError, ValueError):
    """A recorded create whose batch the provider's listing cannot name for sure: the run
    stops rather than pay for the requests twice."""


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
        self.save()

    def save(self) -> None:
        """Rewrite the record (an entry changed in place: an intent got its batch id)."""
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

    # The batch listing (GET), newest first: the preflight's check and an intent's resume.
    list_path = ""
    page_size = 100
    # Whether the create reads the spool (kept until the batch id is recorded).
    creates_from_spool = False

    def url(self, path: str) -> str:
        return self.base + path

    def list_url(self, limit: int, after: str | None = None) -> str:
        params: dict[str, Any] = {"limit": limit}
        if after:
            params[self.after_param] = after
        return _with_query(self.url(self.list_path), params)

    after_param = "after"
    # Whether the requests go up as a file the create names (OpenAI, Azure).
    uploads = False

    async def upload(self, http: BatchHTTP, spool: Path, token: str) -> str:
        """Upload the spool under the intent's name; the file's id."""
        raise NotImplementedError

    async def find_upload(self, http: BatchHTTP, entry: dict[str, Any]) -> tuple[list[str], bool]:
        """The ids of the files the provider lists as the intent's upload, and whether the
        bounded listing reached back to the intent's time."""
        raise NotImplementedError

    async def file_gone(self, http: BatchHTTP, error: BatchError, file_id: str) -> bool:
        """Whether a failed create failed because the provider no longer has `file_id`."""
        return False

    async def create(self, http: BatchHTTP, entry: dict[str, Any], spool: Path | None) -> str:
        """Create the batch of a recorded intent; its id."""
        raise NotImplementedError

    def matches(self, batch: dict[str, Any], entry: dict[str, Any], known: set[str]) -> bool:
        raise NotImplementedError

    def created_at(self, batch: dict[str, Any]) -> float | None:
        raise NotImplementedError

    async def listing(self, http: BatchHTTP, since: float) -> AsyncIterator[dict[str, Any]]:
        """The provider's batches created from `since` on, newest first; BatchRefusal when
        the bounded listing ends before it reaches `since` (it cannot prove an absence)."""
        after = None
        for _ in range(MAX_LIST_PAGES):
            page = await http.call("GET", self.list_url(self.page_size, after))
            items = page.get("data")
            if not isinstance(items, list):
                raise BatchError(
                    f"malformed response: the batch listing of {public_url(self.base)}"
                )
            oldest = None
            for item in items:
                if isinstance(item, dict):
                    oldest = self.created_at(item)
                    yield item
            if not page.get("has_more") or not items or (oldest is not None and oldest < since):
                return
            after = page.get("last_id") or items[-1].get("id")
        raise BatchRefusal(
            f"the listing of {public_url(self.base)} holds more than {MAX_LIST_PAGES} pages "
            "of batches newer than the stopped create"
        )

    async def find(
        self, http: BatchHTTP, entry: dict[str, Any], known: set[str]
    ) -> list[dict[str, Any]]:
        """The provider's batches that could be the intent's: none proves it has none."""
        since = float(entry["intent_at"]) - CLOCK_SLACK_S
        found = []
        async for batch in self.listing(http, since):
            made = self.created_at(batch)
            if made is not None and made < since:
                continue
            if self.matches(batch, entry, known) and isinstance(batch.get("id"), str):
                found.append(batch)
        return found

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

    list_path = "/batches"

    def url(self, path: str) -> str:
        return self.base + path + self.query

    uploads = True
    # Files per page of the file listing: a page of file objects within MAX_CONTROL_BYTES.
    file_page = 1000

    async def upload(self, http: BatchHTTP, spool: Path, token: str) -> str:
        with open(spool, "rb") as f:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", f, filename=upload_name(token), content_type="application/jsonl")
            uploaded = await http.call("POST", self.url("/files"), form, retry=False)
        return _field(uploaded, "id", "the uploaded file")

    def files_url(self, after: str | None) -> str:
        params: dict[str, Any] = {"purpose": "batch", "limit": self.file_page, "order": "desc"}
        if after:
            params["after"] = after
        return _with_query(self.url("/files"), params)

    async def find_upload(self, http: BatchHTTP, entry: dict[str, Any]) -> tuple[list[str], bool]:
        # Newest first: the intent's upload is at most a few pages down, made after it.
        want = (upload_name(entry["token"]), "batch", entry.get("bytes"))
        since = float(entry["intent_at"]) - CLOCK_SLACK_S
        found: list[str] = []
        after = None
        for _ in range(MAX_LIST_PAGES):
            page = await http.call("GET", self.files_url(after))
            items = page.get("data")
            if not isinstance(items, list):
                raise BatchError(f"malformed response: the file listing of {public_url(self.base)}")
            for item in (i for i in items if isinstance(i, dict)):
                made = item.get("created_at")
                if isinstance(made, int | float) and made < since:
                    return found, True
                if (item.get("filename"), item.get("purpose"), item.get("bytes")) == want:
                    found += [item["id"]] if isinstance(item.get("id"), str) else []
            if not page.get("has_more") or not items:
                return found, True
            after = page.get("last_id") or items[-1].get("id")
        return found, False

    async def file_gone(self, http: BatchHTTP, error: BatchError, file_id: str) -> bool:
        # OpenAI answers a create naming a file it does not have as its Files API answers an
        # unknown file: 404 `invalid_request_error` "No such File object: <id>" (400 from
        # some deployments). Retrieving the file tells that apart from any other refusal.
        if error.status not in (400, 404):
            return False
        try:
            await http.call("GET", self.url(f"/files/{file_id}"))
        except BatchError as probe:
            return probe.status == 404
        return False

    async def create(self, http: BatchHTTP, entry: dict[str, Any], spool: Path | None) -> str:
        create = {
            "input_file_id": entry["input_file_id"],
            "endpoint": self.endpoint,
            "completion_window": "24h",
            "metadata": {TOKEN_KEY: entry["token"]},
        }
        # Not retried: a create lost on the way may have been made (the resume finds it).
        batch = await http.call(
            "POST", self.url("/batches"), dumps_json(create), json=True, retry=False
        )
        return _field(batch, "id", "the created batch")

    def matches(self, batch: dict[str, Any], entry: dict[str, Any], known: set[str]) -> bool:
        # The uploaded file is the intent's own: a batch made from it is the intent's.
        metadata = batch.get("metadata")
        token = metadata.get(TOKEN_KEY) if isinstance(metadata, dict) else None
        file_id = entry.get("input_file_id")
        return (file_id is not None and batch.get("input_file_id") == file_id) or (
            token == entry["token"]
        )

    def created_at(self, batch: dict[str, Any]) -> float | None:
        made = batch.get("created_at")
        return float(made) if isinstance(made, int | float) else None

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
    list_path = "/messages/batches"
    page_size = 1000
    after_param = "after_id"
    creates_from_spool = True

    def line(self, custom_id: str, body: bytes) -> bytes:
        return b'{"custom_id":' + dumps_json(custom_id) + b',"params":' + body + b"}\n"

    def matches(self, batch: dict[str, Any], entry: dict[str, Any], known: set[str]) -> bool:
        # A Message Batch keeps nothing of ours but its size (custom ids show only in the
        # results): a batch not recorded, made near the intent, with as many requests.
        made = self.created_at(batch)
        counts = batch.get("request_counts")
        if made is None or not isinstance(counts, dict) or batch.get("id") in known:
            return False
        total = sum(v for v in counts.values() if isinstance(v, int))
        near = abs(made - float(entry["intent_at"])) <= CLOCK_SLACK_S
        return near and total == entry["requests"]

    def created_at(self, batch: dict[str, Any]) -> float | None:
        made = batch.get("created_at")
        try:
            return datetime.fromisoformat(str(made).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None

    async def create(self, http: BatchHTTP, entry: dict[str, Any], spool: Path | None) -> str:
        # The requests as one JSON body, streamed from the spool to a file and from it.
        assert spool is not None  # the queue creates from a kept spool only
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
        return _field(batch, "id", "the created batch")

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


def _with_query(url: str, params: dict[str, Any]) -> str:
    """`url` with `params` added to any query it has (Azure's `api-version`)."""
    return url + ("&" if "?" in url else "?") + urlencode(params)


def upload_name(token: str) -> str:
    """The name an intent's upload goes by at the provider: how a resume finds it."""
    return f"redjury-{token}.jsonl"


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
                raise BatchError(f"HTTP {status} from {public_url(url)}{_message(body)}", status)
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
    # An intent being resumed: the bodies asked for, sent again if the provider has none.
    bodies: dict[str, bytes] = field(default_factory=dict)
    # Why the run must stop (BatchRefusal) rather than send these requests again.
    refusal: str | None = None


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
        self._sweep()

    def _sweep(self) -> None:
        """Remove what a stopped run left in `judge_batches/` (spools, results, create
        bodies) but the spools of intents not yet resolved: a run folder is one run's at a
        time, and the run's own spools are made after this."""
        work = self.folder / "judge_batches" if self.folder is not None else None
        if work is None or not work.is_dir():
            return
        kept = {
            str(b["spool"])
            for b in self.ledger.batches
            if b.get("spool") and "id" not in b and "abandoned_at" not in b
        }
        for path in work.iterdir():
            if path.is_file() and path.name not in kept:
                path.unlink(missing_ok=True)

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
            if "id" not in entry and ("token" not in entry or "abandoned_at" in entry):
                continue
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
            if sub is not None and sub.refusal is not None:
                self.waiting.pop(cid, None)
                raise BatchRefusal(sub.refusal)
            if sub is not None:
                if "id" not in sub.entry:
                    sub.bodies[cid] = body
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
            elif "id" not in sub.entry and not await self._resume(sub):
                return
            await self._fetch(sub, await self._wait(sub))
        except BatchRefusal as exc:
            sub.refusal = str(exc)
            self._fail(sub, sub.refusal, refused=True)
        except JudgeCallError as exc:
            self._fail(sub, str(exc))
        except Exception as exc:  # a bug or a disk error: the requests abstain, named
            self._fail(sub, f"batch failed: {type(exc).__name__}: {exc}")

    async def _create(self, sub: _Submitted, spool: _Spool) -> None:
        """Record the intent (fsynced), upload (OpenAI) and record the file, create, record
        the batch id: a run stopped in between finds the file and the batch (`_resume`)."""
        sub.entry = {
            "queue": self.queue_key,
            "judge": self.name,
            "provider": self.wire.kind,
            "token": uuid.uuid4().hex,
            "intent_at": time.time(),
            "requests": len(spool.ids),
            "bytes": spool.size,
            "custom_ids": spool.ids,
        }
        if self.folder is not None:  # kept until the batch id is recorded (`_made`)
            sub.entry["spool"] = spool.path.name
        try:
            self.ledger.add(sub.entry)
            if self.wire.uploads:
                token = sub.entry["token"]
                self._uploaded(sub, await self.wire.upload(self.http, spool.path, token))
            self._made(sub, await self._create_batch(sub, spool.path))
        finally:
            if self.folder is None:
                spool.path.unlink(missing_ok=True)

    def _uploaded(self, sub: _Submitted, file_id: str) -> None:
        sub.entry["input_file_id"] = file_id
        self.ledger.save()

    async def _create_batch(self, sub: _Submitted, spool: Path | None) -> str:
        """Create the recorded intent's batch; a file the provider no longer has (expired,
        deleted) is uploaded again from the spool under the same token, once."""
        try:
            return await self.wire.create(self.http, sub.entry, spool)
        except BatchError as exc:
            gone = sub.entry.get("input_file_id")
            if not gone or not await self.wire.file_gone(self.http, exc, gone):
                raise
        self.say(
            f"judge {self.name}: file {gone} of intent {sub.entry['token']} is gone at "
            f"{public_url(self.wire.base)}: uploading its requests again"
        )
        if not await self._upload(sub, spool, gone=gone):
            cause = self._gone_cause(sub.entry, gone)
            self.say(f"judge {self.name}: {cause}")
            raise BatchError(cause)
        return await self.wire.create(self.http, sub.entry, spool)

    def _gone_cause(self, entry: dict[str, Any], file_id: str) -> str:
        where = self.ledger.path or LEDGER_NAME
        return (
            f"batch_input_gone: file {file_id} holding these requests is gone at "
            f"{public_url(self.wire.base)} and so is its spool ({entry.get('spool')}): no "
            "batch of them was or can be made; run into a new --out folder to judge them in a "
            f"new batch (and delete intent {entry['token']} from {where})"
        )

    async def _upload(self, sub: _Submitted, spool: Path | None, gone: str | None = None) -> bool:
        """Give a recorded intent its file: the upload a stopped run made and never recorded
        (the one the provider lists under the intent's name), else the spool uploaded now.
        False where there is neither."""
        entry = sub.entry
        name = upload_name(entry["token"])
        if "bytes" not in entry and spool is not None and spool.is_file():  # an older record
            entry["bytes"] = spool.stat().st_size
        try:
            found, whole = await self.wire.find_upload(self.http, entry)
        except BatchError as exc:
            found, whole = [], False
            self.say(f"judge {self.name}: the file listing failed ({exc}); not looking for {name}")
        found = [f for f in found if f != gone]
        if len(found) == 1:
            self.say(f"judge {self.name}: file {found[0]} ({name}) adopted")
            self._uploaded(sub, found[0])
            return True
        if spool is None or not spool.is_file():
            return False
        file_id = await self.wire.upload(self.http, spool, entry["token"])
        self._uploaded(sub, file_id)
        if len(found) > 1:
            self.say(
                f"judge {self.name}: {len(found)} files named {name} ({', '.join(found)}): "
                f"none adopted, uploaded again as {file_id}"
            )
        elif not whole:
            self.say(
                f"judge {self.name}: the file listing of {public_url(self.wire.base)} ends "
                f"before intent {entry['token']}: uploaded again as {file_id} (an upload of "
                "a stopped run may be left there)"
            )
        return True

    def _made(self, sub: _Submitted, batch_id: str, how: str = "submitted") -> None:
        spool = sub.entry.pop("spool", None)
        sub.entry |= {"id": batch_id, "submitted_at": time.time()}
        self.ledger.save()
        if spool is not None:  # and the create body made from it (Anthropic)
            for path in (self._work_dir() / spool, (self._work_dir() / spool).with_suffix(".json")):
                path.unlink(missing_ok=True)
        if how == "submitted":
            self.creates += 1
        count = sub.entry["requests"]
        self.say(f"judge {self.name}: batch {batch_id} {how} ({count} requests)")

    async def _resume(self, sub: _Submitted) -> bool:
        """An intent without a batch id (the run stopped inside its upload or create): adopt
        the provider's batch that is its, else create it now (uploading first where the
        upload was never recorded), else (nothing to create from) send its requests again;
        False then. BatchRefusal when the listing names several."""
        entry = sub.entry
        name = entry.get("spool")
        spool = self._work_dir() / str(name) if name else None
        if spool is not None and not spool.is_file():
            spool = None
        if self.wire.uploads and "input_file_id" not in entry:
            # Stopped before its file was recorded: no create was sent, no batch to find.
            if not await self._upload(sub, spool):
                self._abandon(sub)
                return False
        elif await self._adopt(sub):
            return True
        elif self.wire.creates_from_spool and spool is None:
            self._abandon(sub)
            return False
        # The intent's time is the new create's: Anthropic's next resume matches by it.
        entry["intent_at"] = time.time()
        self.ledger.save()
        self._made(sub, await self._create_batch(sub, spool))
        return True

    async def _adopt(self, sub: _Submitted) -> bool:
        """Record the provider's batch of the intent as its own; False where the listing
        proves there is none, BatchRefusal where it cannot tell which."""
        entry = sub.entry
        known = {b["id"] for b in self.ledger.batches if isinstance(b.get("id"), str)}
        try:
            found = await self.wire.find(self.http, entry, known)
        except BatchRefusal as exc:
            raise BatchRefusal(self._refusal(entry, str(exc))) from None
        # Another unresolved intent the same batch could be (Anthropic: as many requests,
        # as near in time) makes it as ambiguous as a second batch.
        rivals = [
            b
            for b in self.ledger.batches
            if b is not entry and b.get("provider") == self.wire.kind and "token" in b
            if "id" not in b and "abandoned_at" not in b
        ]
        if len(found) > 1 or any(self.wire.matches(f, r, known) for f in found for r in rivals):
            ids = ", ".join(f["id"] for f in found)
            url = public_url(self.wire.base)
            lists = f"{url} lists {len(found)} batches that could be it: {ids}"
            if len(found) == 1:
                lists = (
                    f"{url} lists one batch ({ids}) that could be it or another stopped create's"
                )
            raise BatchRefusal(self._refusal(entry, lists))
        if found:
            self._made(sub, found[0]["id"], how="adopted")
            return True
        return False

    def _refusal(self, entry: dict[str, Any], why: str) -> str:
        where = self.ledger.path or LEDGER_NAME
        return (
            f"{where}: judge {self.name}: a run stopped while creating a batch of "
            f"{entry['requests']} requests (intent {entry['token']}) and {why}; write the "
            'right batch id as the entry\'s "id" (or cancel them and delete the entry) and '
            "run again: nothing was resubmitted"
        )

    def _abandon(self, sub: _Submitted) -> None:
        """The provider provably has no batch of this intent and it cannot be created from
        what is kept: its requests go to a new batch."""
        sub.entry["abandoned_at"] = time.time()
        self.ledger.save()
        bodies, sub.bodies = sub.bodies, {}
        self._unmap(sub)
        for cid, body in bodies.items():
            if cid in self.waiting:
                self._enqueue(cid, body)

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

    def _fail(self, sub: _Submitted, cause: str, *, refused: bool = False) -> None:
        """Every request of `sub` still waiting abstains with `cause` (or, `refused`, stops
        the run with it)."""
        for cid in list(sub.ids):
            futures = self.waiting.pop(cid, None)
            for future in futures or ():
                if not future.done():
                    error = BatchRefusal(cause) if refused else JudgeCallError(cause)
                    future.set_exception(error)
        if not refused:  # a refused intent stays: its requests are never sent again
            self._unmap(sub)

    def _unmap(self, sub: _Submitted) -> None:
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
