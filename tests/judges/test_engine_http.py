"""The engine's HTTP path (aiohttp): keep-alive reuse, statuses, retries, unreachable servers."""

from __future__ import annotations

from fault_server import Reply, Status, always, sequence
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.engine import JudgeCallError, JudgeEngine, retry_after_seconds


async def post_n(engine: JudgeEngine, url: str, n: int) -> list[bytes]:
    route = engine.route(url, "/chat/completions", {"content-type": "application/json"}, 5)
    try:
        return [await engine.post(route, b'{"model": "m", "messages": []}') for _ in range(n)]
    finally:
        await engine.aclose()


async def test_connections_are_reused_across_requests(server):
    server.set_script(always(Reply("no")))
    bodies = await post_n(JudgeEngine(), server.openai_url, 5)
    assert all(b'"content": "no"' in b for b in bodies)
    assert server.connections == 1
    first = server.posts[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["host"] == f"127.0.0.1:{server.port}"
    assert first.headers["content-type"] == "application/json"


async def test_url_credentials_travel_as_basic_auth_not_in_the_request_line(server):
    server.set_script(always(Reply("no")))
    url = server.openai_url.replace("http://", "http://someone:pa%3Ass%20w%C3%B6rd@")
    await post_n(JudgeEngine(), url, 1)
    (req,) = server.posts
    # RFC 7617 with UTF-8: base64 of "someone:pa:ss wörd".
    assert req.headers["authorization"] == "Basic c29tZW9uZTpwYTpzcyB3w7ZyZA=="
    assert req.path == "/v1/chat/completions" and "someone" not in req.headers["host"]


async def test_an_error_status_keeps_the_connection_usable(server):
    server.set_script(sequence([Status(503), Status(500)], then=Reply("no")))
    engine = JudgeEngine(retry_base_delay=0.01)
    await post_n(engine, server.openai_url, 1)
    assert server.count == 3
    assert server.connections == 1
    assert engine.stats.retries == 2


async def test_a_4xx_fails_at_once_with_its_status(server):
    server.set_script(always(Status(400)))
    engine = JudgeEngine(retry_base_delay=0.01)
    try:
        await post_n(engine, server.openai_url, 1)
    except JudgeCallError as exc:
        assert str(exc) == "HTTP 400"
    else:
        raise AssertionError("a 400 must fail")
    assert server.count == 1


async def test_refused_connection_is_retried_then_named():
    engine = JudgeEngine(retry_base_delay=0.01, max_retries=2)
    try:
        await post_n(engine, "http://127.0.0.1:9/v1", 1)
    except JudgeCallError as exc:
        assert str(exc) == "connect failed: ConnectionRefusedError after 2 retries"
    else:
        raise AssertionError("nothing listens on port 9")


def test_retry_after_forms():
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_a_very_long_retry_after_abstains_at_once(server, make_panel):
    server.set_script(always(Status(429, retry_after="3600")))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert server.count == 1
    assert finding.details["abstained"]["harmbench:judge-a"] == "HTTP 429 with Retry-After 3600s"


def test_a_url_that_is_not_http_is_refused():
    import pytest

    with pytest.raises(ValueError, match="not an http"):
        JudgeEngine().route("ftp://h/v1", "/x", {}, 1)
