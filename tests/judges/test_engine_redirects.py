"""No credential follows a redirect: a judge or preflight request that is redirected is not
followed; the vote abstains naming the redirect, and the preflight reports it."""

from __future__ import annotations

import pytest
from fault_server import FaultServer, Redirect, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.preflight import preflight

SECRET = "sk-redirect-secret-7"

# (connection type, config, the header that carries the key)
CONNECTIONS = [
    ("OPENAI", {"api_key_env": "JUDGE_KEY"}, "authorization"),
    ("ANTHROPIC", {"api_key_env": "JUDGE_KEY"}, "x-api-key"),
    ("AZURE_OPENAI", {"api_key_env": "JUDGE_KEY"}, "api-key"),
    ("OPENAI", {"headers": {"x-gateway-token": SECRET}}, "x-gateway-token"),
]


def _spec(url: str, kind: str, connection: dict) -> dict:
    return judge(url, "gpt-judge", type=kind, connection=connection)


@pytest.mark.parametrize(("kind", "connection", "header"), CONNECTIONS)
@pytest.mark.parametrize("code", [302, 307])
async def test_a_redirected_judge_request_abstains_and_sends_nothing_elsewhere(
    server, second_server, make_panel, monkeypatch, kind, connection, header, code
):
    monkeypatch.setenv("JUDGE_KEY", SECRET)
    elsewhere = f"{second_server.url}/v1/chat/completions?token=leak"
    server.set_script(always(Redirect(elsewhere, code)))
    panel = make_panel([_spec(server.url, kind, connection)])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    assert server.count == 1
    assert second_server.requests == []
    assert SECRET in server.posts[0].headers[header]
    reason = finding.details["abstained"]["harmbench:gpt-judge"]
    assert reason == (
        f"HTTP {code}: redirect to {second_server.url}/v1/chat/completions not followed "
        "(point base_url at the server that answers)"
    )
    assert finding.score is None


@pytest.mark.parametrize(("kind", "connection", "header"), CONNECTIONS)
async def test_the_preflight_reports_a_redirect_and_follows_none(
    second_server, make_panel, monkeypatch, kind, connection, header
):
    monkeypatch.setenv("JUDGE_KEY", SECRET)
    with FaultServer(redirect=(302, f"{second_server.url}/v1/models")) as first:
        panel = make_panel([_spec(first.url, kind, connection)])
        [failure] = await preflight(panel.judges)
        await panel.aclose()
        assert first.requests and SECRET in first.requests[0].headers[header]
    assert second_server.requests == []
    assert failure.cause.startswith(f"HTTP 302: redirect to {second_server.url}/v1/models")


async def test_a_relative_redirect_is_not_followed_either(server, make_panel):
    server.set_script(always(Redirect("/elsewhere", 301)))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    assert server.count == 1
    reason = finding.details["abstained"]["harmbench:judge-a"]
    assert reason.startswith(f"HTTP 301: redirect to {server.url}/elsewhere not followed")


async def test_the_server_check_names_a_redirect(second_server, make_panel):
    with FaultServer(redirect=(302, f"{second_server.url}/v1/models")) as first:
        panel = make_panel([judge(first.openai_url)])
        status = await panel.check_servers()
        await panel.aclose()
    assert second_server.requests == []
    [cause] = status.values()
    assert cause is not None and cause.startswith(f"HTTP 302: redirect to {second_server.url}")
