"""A lean HTTP/1.1 keep-alive client on asyncio streams, one connection pool per server.

httpx's pool cost ~10 ms of CPU per request at 64 open connections in our benchmark (its
pool scans and polls every connection on each request); this one costs ~0.1 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

# A server closes an idle keep-alive connection after a while (uvicorn: 5 s); reusing one
# it already closed costs a failed request, so older idle connections are dropped first.
IDLE_REUSE_S = 4.0


class TransportError(Exception):
    """The connection failed or the server broke the protocol; worth a retry."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def header(self, name: str) -> str | None:
        value = self.headers.get(name.encode())
        return value.decode("latin-1") if value is not None else None


class _Conn:
    __slots__ = ("reader", "writer", "idle_since")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        return (
            not self.reader.at_eof()
            and not self.writer.is_closing()
            and now - self.idle_since < IDLE_REUSE_S
        )

    def abort(self) -> None:
        self.writer.transport.abort()


class ConnectionPool:
    """Keep-alive connections to one server; the caller bounds how many are in use at once."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        default_port = (self.tls and self.port == 443) or (not self.tls and self.port == 80)
        self.host_header = self.host if default_port else f"{self.host}:{self.port}"
        self._ssl = ssl.create_default_context() if self.tls else None
        self._idle: list[_Conn] = []

    def head(self, method: str, path: str, headers: dict[str, str]) -> bytes:
        """The request head up to the content length, rendered once per route."""
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"host: {self.host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
        return ("\r\n".join(lines) + "\r\ncontent-length: ").encode("latin-1")

    async def _connect(self) -> _Conn:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self._ssl, limit=1 << 20
            )
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"connect failed: {type(exc).__name__}") from exc
        return _Conn(reader, writer)

    async def request(self, head: bytes, body: bytes, timeout: float) -> Response:
        """Send one request on an idle or new connection and read the whole response."""
        conn = None
        now = time.monotonic()
        idle = self._idle
        while idle:
            candidate = idle.pop()
            if candidate.usable(now):
                conn = candidate
                break
            candidate.abort()
        try:
            async with asyncio.timeout(timeout):
                if conn is None:
                    conn = await self._connect()
                conn.writer.write(b"%s%d\r\n\r\n%s" % (head, len(body), body))
                response, keep = await _read_response(conn.reader)
        except TimeoutError:
            if conn is not None:
                conn.abort()
            raise
        except TransportError:
            if conn is not None:
                conn.abort()
            raise
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            if conn is not None:
                conn.abort()
            raise TransportError(f"connection error: {type(exc).__name__}") from exc
        if keep:
            conn.idle_since = time.monotonic()
            idle.append(conn)
        else:
            conn.writer.close()
        return response

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.writer.close()
        for conn in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await conn.writer.wait_closed()


async def _read_response(reader: asyncio.StreamReader) -> tuple[Response, bool]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        raise TransportError(
            "server closed the connection without a response"
            if not exc.partial
            else "truncated response head"
        ) from exc
    lines = head[:-4].split(b"\r\n")
    status_line = lines[0]
    if not status_line.startswith(b"HTTP/1."):
        raise TransportError("not an HTTP response")
    status = int(status_line[9:12])
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    keep = status_line[7:8] == b"1" and headers.get(b"connection", b"").lower() != b"close"
    if headers.get(b"transfer-encoding", b"").lower().endswith(b"chunked"):
        body = await _read_chunked(reader)
    elif b"content-length" in headers:
        body = await reader.readexactly(int(headers[b"content-length"]))
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:
        body = await reader.read()  # delimited by the server closing the connection
        keep = False
    return Response(status, headers, body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            # Trailers, if any, end with an empty line.
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
