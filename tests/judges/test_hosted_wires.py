"""Hosted providers' wire formats, each against the scripted server speaking it: Azure OpenAI
(deployment path, api-version, api-key), Anthropic's Messages API, and LiteLLM's route."""

from __future__ import annotations

import pytest
from fault_server import Reply, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.config import JudgeSpec
from redjury.judges.providers import provider_for

SYSTEM_AND_USER = ["system", "user"]


async def one_finding(panel):
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    return finding


async def test_azure_request_is_golden(server, make_panel, monkeypatch):
    monkeypatch.setenv("AZ_KEY", "az-secret-1")
    server.set_script(always(Reply("yes", prompt_tokens=40, completion_tokens=1)))
    spec = judge(
        server.url + "/openai/",
        "gpt-4o",
        type="AZURE_OPENAI",
        connection={
            "api_key_env": "AZ_KEY",
            "deployment": "judge-dep",
            "api_version": "2025-01-01",
        },
        generation={"max_tokens": 8},
    )
    panel = make_panel([spec])
    finding = await one_finding(panel)
    [req] = server.posts
    assert req.path == "/openai/deployments/judge-dep/chat/completions"
    assert req.headers["api-key"] == "az-secret-1"
    assert "authorization" not in req.headers
    body = req.json
    assert "model" not in body
    assert {k: body[k] for k in ("temperature", "seed", "max_tokens")} == {
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 8,
    }
    assert [m["role"] for m in body["messages"]] == SYSTEM_AND_USER
    assert finding.score == 1.0
    assert "az-secret-1" in panel.secrets()


async def test_azure_sends_api_version_in_the_query(server, make_panel, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    # The fault server drops the query from `path`; the raw request line keeps it.
    panel = make_panel([judge(server.url, "gpt-4o-mini", type="AZURE_OPENAI")])
    judge_route = panel.judges[0].route
    assert judge_route.url == (
        f"{server.url}/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
    )
    await one_finding(panel)
    assert server.posts[0].path == "/openai/deployments/gpt-4o-mini/chat/completions"


def test_azure_without_base_url_is_a_config_error(monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    with pytest.raises(ValueError, match="AZURE_OPENAI needs base_url"):
        provider_for(
            JudgeSpec.model_validate({"name": "m", "connection": {"type": "azure_openai"}})
        )


async def test_anthropic_request_is_golden(server, make_panel, monkeypatch):
    monkeypatch.setenv("ANT_KEY", "ant-secret-2")
    server.set_script(always(Reply("yes", prompt_tokens=50, completion_tokens=3)))
    spec = judge(
        server.url,
        "claude-sonnet-4-5",
        type="ANTHROPIC",
        connection={"api_key_env": "ANT_KEY"},
        generation={"stop": ["\n\n"], "response_format": {"type": "json_object"}},
    )
    panel = make_panel([spec])
    finding = await one_finding(panel)
    [req] = server.posts
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ant-secret-2"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    body = req.json
    system = panel.judges[0].scoring.render(Attempt(id="1", goal="g", outputs=["o"]), "o")[0]
    assert body["system"] == system["content"]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 1024
    assert body["stop_sequences"] == ["\n\n"]
    assert body["temperature"] == 0.0
    # Neither a seed nor a response_format exists in the Messages API.
    assert "seed" not in body and "response_format" not in body and "stop" not in body
    assert finding.score == 1.0
    vote = finding.details["judges"][0]
    assert (vote["prompt_tokens"], vote["completion_tokens"]) == (50, 3)


async def test_anthropic_keeps_a_configured_max_tokens_and_version(server, make_panel, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    spec = judge(
        server.url,
        "claude-haiku-4-5",
        type="ANTHROPIC",
        connection={"api_version": "2024-01-01"},
        generation={"max_tokens": 16},
    )
    await one_finding(make_panel([spec]))
    [req] = server.posts
    assert req.json["max_tokens"] == 16
    assert req.headers["anthropic-version"] == "2024-01-01"


def test_anthropic_refuses_logprobs():
    spec = JudgeSpec.model_validate(
        judge("http://h", "c", type="ANTHROPIC", scoring={"logprobs": True})
    )
    with pytest.raises(ValueError, match="ANTHROPIC returns no logprobs"):
        provider_for(spec, logprobs=True)


def need_litellm(monkeypatch):
    # Without this, importing LiteLLM fetches a price list from GitHub.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytest.importorskip("litellm", reason="the litellm extra is not installed")
    monkeypatch.setenv("LITELLM_TEST_KEY", "ll-secret-3")


async def test_litellm_reaches_the_server_through_its_openai_route(server, make_panel, monkeypatch):
    need_litellm(monkeypatch)
    server.set_script(always(Reply("yes", prompt_tokens=11, completion_tokens=1)))
    spec = judge(
        server.openai_url,
        "openai/judge-model",
        type="LITELLM",
        connection={"headers": {"x-team": "red"}, "api_key_env": "LITELLM_TEST_KEY"},
    )
    finding = await one_finding(make_panel([spec], use_cache=False))
    [req] = server.posts
    assert req.path == "/v1/chat/completions"
    assert req.json["model"] == "judge-model"
    assert req.json["seed"] == 7
    assert req.headers["x-team"] == "red"
    assert req.headers["authorization"] == "Bearer ll-secret-3"
    assert [m["role"] for m in req.json["messages"]] == SYSTEM_AND_USER
    assert finding.score == 1.0
    assert finding.details["judges"][0]["prompt_tokens"] == 11


async def test_litellm_failures_abstain_with_the_engine_words(server, make_panel, monkeypatch):
    need_litellm(monkeypatch)
    from fault_server import Status

    server.set_script(always(Status(401)))
    spec = judge(
        server.openai_url,
        "openai/judge-model",
        type="LITELLM",
        connection={"api_key_env": "LITELLM_TEST_KEY"},
    )
    finding = await one_finding(make_panel([spec], use_cache=False, max_retries=0))
    assert finding.details["abstained"]["harmbench:openai/judge-model"] == "HTTP 401"


def test_an_azure_deployment_is_part_of_the_fingerprint(make_panel, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")

    def fingerprint(deployment):
        spec = judge("https://r.openai.azure.com", "gpt-4o", type="AZURE_OPENAI")
        spec["connection"]["deployment"] = deployment
        return make_panel([spec]).judges[0].fingerprint

    assert fingerprint("judge-a") != fingerprint("judge-b")
