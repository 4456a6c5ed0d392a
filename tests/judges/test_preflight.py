"""The preflight: one cheap request per judge server before judging; what stops a run and what
is left to the abstentions."""

from __future__ import annotations

from fault_server import Reply, Status, always
from judge_specs import judge

from redjury.judges.preflight import preflight, public_url


async def check(make_panel, *specs):
    panel = make_panel(list(specs), use_cache=False)
    try:
        return await preflight(panel.judges)
    finally:
        await panel.aclose()


async def test_a_listed_model_passes_with_one_get_and_no_post(server, make_panel):
    server.models = ["judge-a", "other"]
    assert await check(make_panel, judge(server.openai_url), judge(server.openai_url)) == []
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]


async def test_an_unknown_model_stops_when_the_server_says_404(server, make_panel):
    server.models = ["llama-3-8b", "qwen"]
    server.set_script(always(Status(404)))
    [failure] = await check(make_panel, judge(server.openai_url))
    assert failure.judge == "harmbench:judge-a"
    assert failure.cause == "unknown model 'judge-a' (the server lists 2: llama-3-8b, qwen)"
    # The one-token confirmation asked for one token.
    assert server.posts[0].json["max_tokens"] == 1


async def test_a_server_that_serves_any_name_is_not_refused(server, make_panel):
    # llama.cpp lists its one model under a file name and answers to any `model`.
    server.models = ["/models/judge.gguf"]
    server.set_script(always(Reply("OK")))
    assert await check(make_panel, judge(server.openai_url)) == []


async def test_ollama_names_match_with_their_latest_tag(server, make_panel):
    server.models = ["llama3.2:latest"]
    assert await check(make_panel, judge(server.url, "llama3.2", type="OLLAMA")) == []
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/api/tags")]


async def test_without_a_listing_one_token_is_asked_for(server, make_panel):
    server.listing = False
    assert await check(make_panel, judge(server.url, "llama3.2", type="OLLAMA")) == []
    [post] = server.posts
    assert post.path == "/api/chat"
    assert post.json["options"]["num_predict"] == 1
    assert "format" not in post.json


async def test_refused_credentials_stop_the_run(server, make_panel):
    server.refuse = 401
    [failure] = await check(make_panel, judge(server.openai_url))
    assert failure.cause.startswith("HTTP 401: the server refused the credentials")
    assert server.posts == []


async def test_an_unreachable_server_stops_the_run_without_retries(make_panel):
    [failure] = await check(make_panel, judge("http://127.0.0.1:9/v1"))
    assert failure.line() == (
        "judge harmbench:judge-a at http://127.0.0.1:9/v1: connect failed: ConnectionRefusedError"
    )


async def test_a_5xx_is_left_to_the_abstentions(server, make_panel):
    server.refuse = 503
    assert await check(make_panel, judge(server.openai_url)) == []


def test_public_url_drops_credentials_and_query():
    assert public_url("https://user:pw@h.example:8443/v1?key=s") == "https://h.example:8443/v1"
    assert public_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
