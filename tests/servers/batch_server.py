"""A scripted batch API server for tests: OpenAI's Files + Batches (and Azure's `/openai/...`
with `api-version`) and Anthropic's Message Batches, as their API references describe them,
on real HTTP (aiohttp) in a thread of its own.

Each request is answered from its content: a prompt holding `ZZYES` is answered "Yes", one
holding `ZZERROR` fails alone (a 400 item / an `errored` result), one holding `ZZEXPIRE` is
left unanswered when the batch expires (the batch then ends `expired`); the rest "No".
A batch ends after `polls` status polls, or stays in progress while `hold` is set. Every
request is logged (method, path, query, headers, body); `creates` counts batches created.

The listings (`GET /v1/batches`, `GET /v1/messages/batches`) are newest first and paged as
documented (`limit`/`after` with `has_more`, `last_id`; Anthropic `after_id`); `page_cap`
lowers the largest page. With `stall_create` set, a create is made and then not answered
until it is cleared (a client killed meanwhile never learns the id); with `delay_create`
set, a create waits before it is read; the next `fail_creates` creates are refused (529)
and make nothing (with `fail_status`, 529 unless set). The next `fail_uploads` uploads are refused (500) and store nothing.
With `stall_upload` set, an upload is stored and then not answered until
it is cleared. With `key` set, a request without it gets 401.

Uploaded files are listed (`GET /v1/files`: `purpose`, `limit`, `order`, `after`, newest
first by default), retrieved and deleted as the Files API reference describes; `uploads`
counts uploads. A file that is not there (deleted, or dropped by `drop_inputs`, which deletes
the input file of the next creates as they arrive, as an expiry would) is answered as the
Files API answers an unknown file: 404, `invalid_request_error`, "No such File object: <id>";
a create naming one gets the same and makes nothing.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from typing import Any

from aiohttp import web


@dataclass
class Logged:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Batch:
    id: str
    kind: str
    requests: list[tuple[str, dict[str, Any]]]
    input_file_id: str | None = None
    polls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.time)


def _answer(params: dict[str, Any]) -> str:
    text = json.dumps(params)
    return "Yes" if "ZZYES" in text else "No"


class BatchServer:
    def __init__(self, polls: int = 2) -> None:
        self.polls = polls
        self.hold = False
        self.log: list[Logged] = []
        self.files: dict[str, bytes] = {}
        # The uploaded files' objects (not the results files), in upload order.
        self.file_objects: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, Batch] = {}
        self.creates = 0
        self.uploads = 0
        self.models = ["gpt-judge", "claude-j"]
        self.stall_create = False
        self.fail_creates = 0
        self.fail_status = 529
        self.delay_create = False
        self.stall_upload = False
        self.fail_uploads = 0
        self.drop_inputs = 0
        self.page_cap: int | None = None
        self.key: str | None = None
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> BatchServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application(client_max_size=300 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def requests(self, method: str | None = None, prefix: str = "") -> list[Logged]:
        return [
            r
            for r in self.log
            if (method is None or r.method == method) and r.path.startswith(prefix)
        ]

    # -- routing -----------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.log.append(
            Logged(
                request.method,
                request.path,
                request.query_string,
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        if self.key is not None and not any(
            request.headers.get(h, "").removeprefix("Bearer ") == self.key
            for h in ("authorization", "x-api-key", "api-key")
        ):
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        path = request.path.removeprefix("/openai").removeprefix("/v1")
        if request.method == "POST" and path == "/files" and self.fail_uploads:
            self.fail_uploads -= 1
            return web.json_response({"error": {"message": "upload failed"}}, status=500)
        if request.method == "POST" and path == "/files":
            answer = self._upload(request, body)
            while self.stall_upload:
                await asyncio.sleep(0.02)
            return answer
        if request.method == "GET" and path == "/files":
            return web.json_response(self._file_listing(request))
        if request.method == "POST" and path in ("/batches", "/messages/batches"):
            while self.delay_create:
                await asyncio.sleep(0.02)
            if self.fail_creates:
                self.fail_creates -= 1
                error = {"message": "overloaded" if self.fail_status == 529 else "refused"}
                return web.json_response({"error": error}, status=self.fail_status)
            if path == "/batches":
                file_id = json.loads(body)["input_file_id"]
                if self.drop_inputs:
                    self.drop_inputs -= 1
                    self.delete_file(file_id)
                if file_id not in self.file_objects:
                    return _no_such_file(file_id, "input_file_id")
                made = self._create_openai(request, json.loads(body))
            else:
                made = self._create_anthropic(json.loads(body))
            while self.stall_create:
                await asyncio.sleep(0.02)
            return made
        if request.method == "GET" and path in ("/batches", "/messages/batches"):
            return web.json_response(self._listing(request, path == "/batches"))
        if request.method == "GET" and path == "/models":
            # The preflight's model listing (a real run checks it before judging).
            return web.json_response({"data": [{"id": m, "type": "model"} for m in self.models]})
        parts = path.strip("/").split("/")
        if request.method == "GET" and parts[0] == "batches" and len(parts) == 2:
            return web.json_response(self._openai_status(self.batches[parts[1]]))
        if parts[0] == "files" and len(parts) == 2 and request.method in ("GET", "DELETE"):
            if parts[1] not in self.file_objects:
                return _no_such_file(parts[1], "file_id")
            if request.method == "DELETE":
                self.delete_file(parts[1])
                return web.json_response({"id": parts[1], "object": "file", "deleted": True})
            return web.json_response(self.file_objects[parts[1]])
        if request.method == "GET" and parts[0] == "files" and parts[2:] == ["content"]:
            return web.Response(body=self.files[parts[1]], content_type="application/octet-stream")
        if request.method == "GET" and parts[:2] == ["messages", "batches"]:
            batch = self.batches[parts[2]]
            if len(parts) == 4 and parts[3] == "results":
                return web.Response(body=self._anthropic_results(batch))
            return web.json_response(self._anthropic_status(batch, request))
        return web.json_response({"error": {"message": "not found"}}, status=404)

    def _listing(self, request: web.Request, openai: bool) -> dict[str, Any]:
        kind = "openai" if openai else "anthropic"
        newest = [b for b in reversed(self.batches.values()) if b.kind == kind]
        cap = min(self.page_cap or 10**6, 100 if openai else 1000)
        limit = min(int(request.query.get("limit", 20)), cap)
        after = request.query.get("after" if openai else "after_id")
        if after is not None:
            newest = newest[[b.id for b in newest].index(after) + 1 :]
        page = newest[:limit]
        data = [
            self._openai_object(b, self._state(b))
            if openai
            else self._anthropic_object(
                b, "ended" if self._state(b) == "completed" else "in_progress", None
            )
            for b in page
        ]
        listing = {
            "data": data,
            "has_more": len(newest) > limit,
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
        }
        return {"object": "list", **listing} if openai else listing

    def _state(self, batch: Batch) -> str:
        return "completed" if not self.hold and batch.polls > self.polls else "in_progress"

    def add_batch(self, kind: str, count: int, created: float | None = None) -> str:
        """A batch made by someone else (another run on the same key): `count` requests."""
        n = len(self.batches) + 1
        batch_id = f"batch_other_{n}" if kind == "openai" else f"msgbatch_other_{n:04d}"
        params = {"model": "m", "messages": [{"role": "user", "content": "other"}]}
        batch = Batch(batch_id, kind, [(f"o{i}", params) for i in range(count)])
        if created is not None:
            batch.created = created
        self.batches[batch_id] = batch
        return batch_id

    # -- Files -------------------------------------------------------------------------
    def add_file(self, filename: str, content: bytes, purpose: str = "batch") -> str:
        """A file uploaded by someone else (or by another tool on the same key)."""
        file_id = f"file-other-{len(self.file_objects) + 1}"
        self._store(file_id, filename, content, purpose)
        return file_id

    def delete_file(self, file_id: str) -> None:
        self.files.pop(file_id, None)
        self.file_objects.pop(file_id, None)

    def _store(self, file_id: str, filename: str, content: bytes, purpose: str) -> None:
        self.files[file_id] = content
        self.file_objects[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }

    def _file_listing(self, request: web.Request) -> dict[str, Any]:
        files = list(self.file_objects.values())
        if request.query.get("order", "desc") == "desc":
            files.reverse()
        purpose = request.query.get("purpose")
        files = [f for f in files if purpose is None or f["purpose"] == purpose]
        after = request.query.get("after")
        if after is not None:
            files = files[[f["id"] for f in files].index(after) + 1 :]
        cap = min(self.page_cap or 10**6, 10_000)
        limit = min(int(request.query.get("limit", 10_000)), cap)
        page = files[:limit]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(files) > limit,
        }

    # -- OpenAI ------------------------------------------------------------------------
    def _upload(self, request: web.Request, body: bytes) -> web.Response:
        # The body was read for the log; the form is parsed from it as a MIME message.
        head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
        message = BytesParser(policy=default).parsebytes(head + body)
        fields = {
            part.get_param("name", header="content-disposition"): part
            for part in message.iter_parts()
        }  # type: ignore[attr-defined]
        upload = fields["file"]
        content = upload.get_payload(decode=True)
        self.uploads += 1
        file_id = f"file-in-{self.uploads}"
        purpose = fields["purpose"].get_payload(decode=True).decode()
        self._store(file_id, upload.get_filename(), content, purpose)
        return web.json_response(self.file_objects[file_id])

    def _create_openai(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        self.creates += 1
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].splitlines() if x]
        batch = Batch(
            f"batch_{self.creates}",
            "openai",
            [(x["custom_id"], x["body"]) for x in lines],
            input_file_id=body["input_file_id"],
            extra={
                "endpoint": body["endpoint"],
                "completion_window": body["completion_window"],
                "metadata": body.get("metadata"),
            },
        )
        self.batches[batch.id] = batch
        return web.json_response(self._openai_object(batch, "validating"))

    def _openai_object(self, batch: Batch, status: str, **files: Any) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "input_file_id": batch.input_file_id,
            "created_at": int(batch.created),
            "status": status,
            "output_file_id": files.get("output"),
            "error_file_id": files.get("error"),
            "errors": None,
            "request_counts": files.get("counts")
            or {"total": len(batch.requests), "completed": 0, "failed": 0},
            **batch.extra,
        }

    def _ended(self, batch: Batch) -> bool:
        batch.polls += 1
        return not self.hold and batch.polls > self.polls

    def _openai_status(self, batch: Batch) -> dict[str, Any]:
        if not self._ended(batch):
            return self._openai_object(batch, "in_progress")
        expired = any("ZZEXPIRE" in json.dumps(p) for _, p in batch.requests)
        out, err = [], []
        for n, (cid, params) in enumerate(batch.requests, 1):
            text = json.dumps(params)
            base = {"id": f"batch_req_{n}", "custom_id": cid}
            if "ZZEXPIRE" in text:
                err.append(
                    {
                        **base,
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the "
                            "completion window expired.",
                        },
                    }
                )
            elif "ZZERROR" in text:
                err.append(
                    {
                        **base,
                        "response": {
                            "status_code": 400,
                            "request_id": f"req_{n}",
                            "body": {
                                "error": {
                                    "message": "Invalid value for 'max_tokens'.",
                                    "type": "invalid_request_error",
                                    "param": None,
                                    "code": None,
                                }
                            },
                        },
                        "error": None,
                    }
                )
            else:
                out.append({**base, "response": _openai_response(n, params), "error": None})
        files: dict[str, Any] = {
            "counts": {"total": len(batch.requests), "completed": len(out), "failed": len(err)}
        }
        for key, rows in (("output", out), ("error", err)):
            if rows:
                file_id = f"file-{key}-{batch.id}"
                self.files[file_id] = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
                files[key] = file_id
        return self._openai_object(batch, "expired" if expired else "completed", **files)

    # -- Anthropic ---------------------------------------------------------------------
    def _create_anthropic(self, body: dict[str, Any]) -> web.Response:
        self.creates += 1
        batch = Batch(
            f"msgbatch_{self.creates:04d}",
            "anthropic",
            [(r["custom_id"], r["params"]) for r in body["requests"]],
        )
        self.batches[batch.id] = batch
        return web.json_response(self._anthropic_object(batch, "in_progress", None))

    def _anthropic_object(self, batch: Batch, status: str, results_url: str | None) -> dict:
        n = len(batch.requests)
        ended = status == "ended"
        counts = {"processing": 0 if ended else n, "succeeded": 0, "errored": 0}
        counts |= {"canceled": 0, "expired": 0}
        if ended:
            for _, params in batch.requests:
                counts[_anthropic_fate(params)] += 1
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "results_url": results_url,
            "created_at": _rfc3339(batch.created),
            "expires_at": _rfc3339(batch.created + 86400),
            "ended_at": "2026-12-05T01:00:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
        }

    def _anthropic_status(self, batch: Batch, request: web.Request) -> dict[str, Any]:
        if not self._ended(batch):
            return self._anthropic_object(batch, "in_progress", None)
        url = f"{self.url}/v1/messages/batches/{batch.id}/results"
        return self._anthropic_object(batch, "ended", url)

    def _anthropic_results(self, batch: Batch) -> bytes:
        rows = []
        for n, (cid, params) in enumerate(batch.requests, 1):
            fate = _anthropic_fate(params)
            if fate == "succeeded":
                result: dict[str, Any] = {
                    "type": "succeeded",
                    "message": {
                        "id": f"msg_{n}",
                        "type": "message",
                        "role": "assistant",
                        "model": params["model"],
                        "content": [{"type": "text", "text": _answer(params)}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 30, "output_tokens": 1},
                    },
                }
            elif fate == "errored":
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "prompt is too long"},
                    },
                }
            else:
                result = {"type": fate}
            rows.append({"custom_id": cid, "result": result})
        return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _no_such_file(file_id: str, param: str) -> web.Response:
    error = {
        "message": f"No such File object: {file_id}",
        "type": "invalid_request_error",
        "param": param,
        "code": None,
    }
    return web.json_response({"error": error}, status=404)


def _anthropic_fate(params: dict[str, Any]) -> str:
    text = json.dumps(params)
    if "ZZERROR" in text:
        return "errored"
    if "ZZEXPIRE" in text:
        return "expired"
    if "ZZCANCEL" in text:
        return "canceled"
    return "succeeded"


def _openai_response(n: int, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "status_code": 200,
        "request_id": f"req_{n}",
        "body": {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "model": params.get("model", "deployment"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": _answer(params)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31},
        },
    }


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"
