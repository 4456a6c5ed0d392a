"""A scripted judge server for tests: real HTTP(S) on 127.0.0.1 speaking OpenAI chat, Ollama
/api/chat, Azure OpenAI's deployment paths and Anthropic's /v1/messages.

Each POST is answered by the script (a fixed verdict, a delay, 500, 429 + Retry-After, garbage,
truncated JSON, a connection reset); the server counts requests and requests in flight.
Run in a thread (`FaultServer(...).start()`) or as a process (`python fault_server.py --help`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


# -- what the script can answer --------------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    """A well-formed answer whose text is `text`, after `delay` seconds."""

    text: str = "no"
    delay: float = 0.0
    prompt_tokens: int = 20
    completion_tokens: int = 1
    top_logprobs: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Status:
    """An HTTP error status, optionally with Retry-After."""

    code: int = 500
    retry_after: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class RawBody:
    """A 200 with exactly this body (e.g. truncated JSON); Content-Length matches it."""

    body: bytes = b'{"choices": [{"message": {"content": "Ye'
    delay: float = 0.0


@dataclass(frozen=True)
class Encoded:
    """A 200 whose body is `body` sent with these headers (e.g. `content-encoding: gzip`)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Endless:
    """A 200 with a chunked body that never ends: `chunk` again and again until the client
    hangs up."""

    chunk: bytes = b'{"choices": [{"message": {"content": "' + b"y" * 65536
    delay: float = 0.0


@dataclass(frozen=True)
class Redirect:
    """A redirect (`code`, e.g. 302 or 307) to `location`."""

    location: str
    code: int = 307
    delay: float = 0.0


@dataclass(frozen=True)
class Reset:
    """Drop the connection with a TCP reset instead of answering."""

    delay: float = 0.0


Action = Reply | Status | RawBody | Encoded | Endless | Redirect | Reset


def garbage() -> Reply:
    """A well-formed response whose answer text no parser can read."""
    return Reply("Blorp! ~~ the weather is purple ~~", completion_tokens=9)


def truncated_json() -> RawBody:
    return RawBody()


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    n: int  # index among POSTs, from 0
    at: float  # time.monotonic() when it was read
    conn: int = 0  # which connection carried it, from 1
    in_flight: int = 0  # POSTs being answered when it arrived, itself included

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def model(self) -> str | None:
        data = self.json
        return data.get("model") if isinstance(data, dict) else None

    @property
    def messages(self) -> list[dict[str, str]]:
        data = self.json
        return data.get("messages", []) if isinstance(data, dict) else []


Script = Callable[[Request], Action]


def always(action: Action) -> Script:
    return lambda _req: action


def sequence(actions: Sequence[Action], then: Action = Reply("no")) -> Script:
    """The n-th POST gets actions[n]; every later one gets `then`."""
    return lambda req: actions[req.n] if req.n < len(actions) else then


def by_model(mapping: Mapping[str, Action | Script], default: Action = Reply("no")) -> Script:
    """Answer by the request's `model` field; values may be actions or scripts."""

    def script(req: Request) -> Action:
        item = mapping.get(req.model or "", default)
        return item(req) if callable(item) else item

    return script


def per_model_sequence(
    mapping: Mapping[str, Sequence[Action]], then: Action = Reply("no")
) -> Script:
    """Each model's k-th request gets mapping[model][k]."""
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def script(req: Request) -> Action:
        model = req.model or ""
        with lock:
            k = counts.get(model, 0)
            counts[model] = k + 1
        seq = mapping.get(model, ())
        return seq[k] if k < len(seq) else then

    return script


def rate_limited(per_second: float, then: Action = Reply("no")) -> Script:
    """Answer `then` to at most `per_second` POSTs a second (a token bucket holding one
    second's worth), 429 without Retry-After to the rest, as a hosted API's limit does."""
    state = {"tokens": per_second, "at": time.monotonic()}
    lock = threading.Lock()

    def script(req: Request) -> Action:
        with lock:
            now = time.monotonic()
            state["tokens"] = min(per_second, state["tokens"] + (now - state["at"]) * per_second)
            state["at"] = now
            if state["tokens"] < 1:
                return Status(429)
            state["tokens"] -= 1
        return then

    return script


# -- wire formats ----------------------------------------------------------------------------
def openai_body(reply: Reply, model: str | None) -> bytes:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": reply.text},
        "finish_reason": "stop",
    }
    if reply.top_logprobs is not None:
        first = next(iter(reply.top_logprobs))
        choice["logprobs"] = {
            "content": [
                {
                    "token": first,
                    "logprob": reply.top_logprobs[first],
                    "top_logprobs": [
                        {"token": t, "logprob": lp} for t, lp in reply.top_logprobs.items()
                    ],
                }
            ]
        }
    return json.dumps(
        {
            "id": "chatcmpl-fault",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model or "fault",
            "choices": [choice],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
    ).encode()


def ollama_body(reply: Reply, model: str | None) -> bytes:
    data: dict[str, Any] = {
        "model": model or "fault",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": reply.text},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": reply.prompt_tokens,
        "eval_count": reply.completion_tokens,
    }
    if reply.top_logprobs is not None:
        first = next(iter(reply.top_logprobs))
        data["logprobs"] = [
            {
                "token": first,
                "logprob": reply.top_logprobs[first],
                "top_logprobs": [
                    {"token": t, "logprob": lp} for t, lp in reply.top_logprobs.items()
                ],
            }
        ]
    return json.dumps(data).encode()


def anthropic_body(reply: Reply, model: str | None) -> bytes:
    return json.dumps(
        {
            "id": "msg_fault",
            "type": "message",
            "role": "assistant",
            "model": model or "fault",
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": reply.prompt_tokens,
                "output_tokens": reply.completion_tokens,
            },
        }
    ).encode()


def wire_for(path: str) -> Callable[[Reply, str | None], bytes] | None:
    """The answer format of a POST path, or None for a path no judge server has."""
    if path == "/api/chat":
        return ollama_body
    if path in ("/v1/chat/completions", "/chat/completions"):
        return openai_body
    if path in ("/v1/messages", "/messages"):
        return anthropic_body
    if path.startswith("/openai/deployments/") and path.endswith("/chat/completions"):
        return openai_body
    return None


_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _response(status: int, body: bytes, extra: Mapping[str, str] | None = None) -> bytes:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "content-type: application/json",
        f"content-length: {len(body)}",
    ]
    head += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _endless(writer: asyncio.StreamWriter, chunk: bytes) -> bool:
    """A chunked 200 that goes on until the client hangs up; always False (connection gone)."""
    head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    writer.write(head.encode())
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    # The client hanging up ends it: that is the point, not an error.
    with contextlib.suppress(ConnectionError, RuntimeError):
        while not writer.transport.is_closing():
            writer.write(frame)
            await writer.drain()
    return False


# -- the server --------------------------------------------------------------------------------
@dataclass
class FaultServer:
    """A scripted server on 127.0.0.1; `url` is its root, `openai_url` its /v1."""

    script: Script = field(default_factory=lambda: always(Reply("no")))
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    resets: int = 0
    # Serve HTTPS with this context; None serves plain HTTP.
    tls: ssl.SSLContext | None = None
    # The model listing (GET …/models, /api/tags); None lists nothing (any model is served).
    models: list[str] | None = None
    # A status for every request (GETs too), e.g. 401 for a server that wants another key.
    refuse: int | None = None
    # False answers the listing paths 404, as servers without a model listing do.
    listing: bool = True
    # A redirect for every request (GETs too): (status, location).
    redirect: tuple[int, str] | None = None
    connections: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._posts = 0

    # -- control ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    @property
    def posts(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    @property
    def count(self) -> int:
        return len(self.posts)

    def set_script(self, script: Script | Action) -> None:
        self.script = script if callable(script) else always(script)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self._posts = 0
            self.max_in_flight = 0
            self.resets = 0

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._run, name="fault-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._serve())
        self._loop.run_forever()
        self._loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.transport.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, backlog=1024, ssl=self.tls
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()

    async def serve_forever(self) -> None:
        """For the process mode: serve in the current loop until cancelled."""
        await self._serve()
        assert self._server is not None
        await self._server.serve_forever()

    # -- one connection ----------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        with self._lock:
            self.connections += 1
            conn = self.connections
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                if not await self._answer(method, path, headers, body, writer, conn):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # Swallowed on purpose: a handler task that ends cancelled makes 3.11's
            # StreamReaderProtocol log a traceback at shutdown.
            return
        finally:
            self._writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()

    async def _answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        conn: int = 0,
    ) -> bool:
        """Write one response; False when the connection is gone."""
        path = path.split("?", 1)[0]
        if self.redirect is not None:
            with self._lock:
                self.requests.append(
                    Request(method, path, headers, body, -1, time.monotonic(), conn)
                )
            code, location = self.redirect
            writer.write(_response(code, b"", {"location": location}))
            await writer.drain()
            return True
        if self.refuse is not None:
            with self._lock:
                self.requests.append(
                    Request(method, path, headers, body, -1, time.monotonic(), conn)
                )
            writer.write(_response(self.refuse, b'{"error": {"message": "refused"}}'))
            await writer.drain()
            return True
        if method == "GET":
            with self._lock:
                self.requests.append(
                    Request(method, path, headers, body, -1, time.monotonic(), conn)
                )
            names = self.models or []
            if not self.listing:
                writer.write(_response(404, b'{"error": "not found"}'))
                await writer.drain()
                return True
            if path.endswith("/models"):
                data: dict[str, Any] = {
                    "object": "list",
                    "data": [{"id": n, "object": "model"} for n in names],
                }
            elif path == "/api/tags":
                data = {"models": [{"name": n, "model": n} for n in names]}
            else:
                writer.write(_response(404, b'{"error": "not found"}'))
                return True
            writer.write(_response(200, json.dumps(data).encode()))
            await writer.drain()
            return True
        with self._lock:
            req = Request(method, path, headers, body, self._posts, time.monotonic(), conn)
            self._posts += 1
            self.requests.append(req)
            self.in_flight += 1
            req.in_flight = self.in_flight
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            wire = wire_for(path)
            if wire is None:
                writer.write(_response(404, b'{"error": "no such path"}'))
                await writer.drain()
                return True
            action = self.script(req)
            if action.delay:
                await asyncio.sleep(action.delay)
            if isinstance(action, Reset):
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    # Linger 0 makes close() send RST, which is what a crashed server looks like.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                with self._lock:
                    self.resets += 1
                writer.transport.abort()
                return False
            if isinstance(action, Status):
                extra = (
                    {"retry-after": action.retry_after} if action.retry_after is not None else None
                )
                writer.write(_response(action.code, b'{"error": {"message": "scripted"}}', extra))
            elif isinstance(action, RawBody):
                writer.write(_response(200, action.body))
            elif isinstance(action, Encoded):
                writer.write(_response(200, action.body, action.headers))
            elif isinstance(action, Redirect):
                writer.write(_response(action.code, b"", {"location": action.location}))
            elif isinstance(action, Endless):
                return await _endless(writer, action.chunk)
            else:
                writer.write(_response(200, wire(action, req.model)))
            await writer.drain()
            return True
        finally:
            with self._lock:
                self.in_flight -= 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", default="no", help="answer text of every POST")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    server = FaultServer(always(Reply(args.reply, delay=args.delay)), port=args.port)

    async def run() -> None:
        task = asyncio.ensure_future(server.serve_forever())
        while not server.port:
            await asyncio.sleep(0.01)
        print(server.port, flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
