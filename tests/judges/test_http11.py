"""The lean HTTP/1.1 client: response framing, keep-alive reuse, and stale connections."""

from __future__ import annotations

import asyncio

import pytest
from fault_server import Reply, Status, always

from redjury.judges.engine import retry_after_seconds
from redjury.judges.http11 import ConnectionPool, TransportError, _Conn, _read_response


async def read(raw: bytes):
    reader = asyncio.StreamReader()
    reader.feed_data(raw)
    reader.feed_eof()
    return await _read_response(reader)


async def test_content_length_body_and_keep_alive():
    response, keep = await read(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")
    assert (response.status, response.body, keep) == (200, b"ok", True)


async def test_chunked_body_with_trailer():
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
    response, keep = await read(raw)
    assert response.body == b"abcde" and keep


async def test_body_delimited_by_close_is_not_reused():
    response, keep = await read(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
    assert response.body == b"until the end" and not keep


@pytest.mark.parametrize(
    "head", [b"HTTP/1.1 200 OK\r\nConnection: close\r\n", b"HTTP/1.0 200 OK\r\n"]
)
async def test_connection_close_or_http10_is_not_reused(head):
    _, keep = await read(head + b"Content-Length: 0\r\n\r\n")
    assert not keep


async def test_headers_are_case_insensitive():
    response, _ = await read(
        b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\ncontent-length: 0\r\n\r\n"
    )
    assert response.header("retry-after") == "3"


@pytest.mark.parametrize("raw", [b"", b"HTTP/1.1 200 OK\r\nContent-Le", b"garbage\r\n\r\n"])
async def test_broken_responses_are_transport_errors(raw):
    with pytest.raises(TransportError):
        await read(raw)


async def test_connections_are_reused_across_requests(server):
    server.set_script(always(Reply("no")))
    pool = ConnectionPool(server.openai_url)
    head = pool.head("POST", "/chat/completions", {"content-type": "application/json"})
    for _ in range(5):
        response = await pool.request(head, b"{}", 5)
        assert response.status == 200
    assert len(pool._idle) == 1
    assert server.posts[0].path == "/v1/chat/completions"
    assert server.posts[0].headers["host"] == f"127.0.0.1:{server.port}"
    await pool.aclose()


async def test_an_error_status_keeps_the_connection_usable(server):
    server.set_script(always(Status(503, retry_after="1")))
    pool = ConnectionPool(server.url)
    head = pool.head("POST", "/api/chat", {})
    assert (await pool.request(head, b"{}", 5)).status == 503
    assert (await pool.request(head, b"{}", 5)).status == 503
    assert len(pool._idle) == 1
    await pool.aclose()


async def test_a_connection_the_server_closed_is_not_reused():
    reader = asyncio.StreamReader()
    reader.feed_eof()

    class Writer:
        def is_closing(self) -> bool:
            return False

    assert not _Conn(reader, Writer()).usable(0.0)  # type: ignore[arg-type]


async def test_refused_connection_is_a_transport_error():
    pool = ConnectionPool("http://127.0.0.1:9")
    with pytest.raises(TransportError, match="connect failed"):
        await pool.request(pool.head("POST", "/x", {}), b"", 2)


def test_retry_after_forms():
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_a_very_long_retry_after_abstains_at_once(server, make_panel):
    from judge_specs import judge

    from redjury.attempts import Attempt

    server.set_script(always(Status(429, retry_after="3600")))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert server.count == 1
    assert finding.details["abstained"]["harmbench:judge-a"] == "HTTP 429 with Retry-After 3600s"
