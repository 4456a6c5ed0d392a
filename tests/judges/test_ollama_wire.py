"""Ollama's native /api/chat wire format, against the scripted server speaking it."""

from __future__ import annotations

from fault_server import Reply, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.config import JudgeSpec
from redjury.judges.providers import OllamaProvider, ollama_host


async def test_ollama_request_and_answer(server, make_panel):
    server.set_script(always(Reply("yes", prompt_tokens=33, completion_tokens=2)))
    spec = judge(
        server.url,
        "llama3.2",
        type="OLLAMA",
        generation={"max_tokens": 4, "stop": ["\n"]},
        options={"num_ctx": 4096},
    )
    panel = make_panel([spec])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    [req] = server.posts
    assert req.path == "/api/chat"
    body = req.json
    assert body["model"] == "llama3.2" and body["stream"] is False
    assert body["options"] == {
        "temperature": 0.0,
        "seed": 7,
        "num_predict": 4,
        "stop": ["\n"],
        "num_ctx": 4096,
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert finding.score == 1.0
    vote = finding.details["judges"][0]
    assert (vote["prompt_tokens"], vote["completion_tokens"]) == (33, 2)


async def test_ollama_json_schema_becomes_format(server, make_panel):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    spec = judge(
        server.url,
        "m",
        type="OLLAMA",
        generation={
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "v", "schema": schema},
            }
        },
    )
    server.set_script(always(Reply('{"answer": "no"}')))
    panel = make_panel([spec])
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert server.posts[0].json["format"] == schema
    assert finding.score == 0.0


async def test_ollama_host_is_the_default(server, make_panel, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.port}")
    spec = judge(server.url, "m", type="OLLAMA")
    del spec["connection"]["base_url"]
    panel = make_panel([spec])
    await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert server.count == 1


def test_ollama_host_forms(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert ollama_host() == "http://localhost:11434"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert ollama_host() == "http://0.0.0.0:11434"
    monkeypatch.setenv("OLLAMA_HOST", "https://ollama.example:443/")
    assert ollama_host() == "https://ollama.example:443"
    monkeypatch.delenv("OLLAMA_HOST")
    assert (
        OllamaProvider(
            JudgeSpec.model_validate({"name": "m", "connection": {"type": "ollama"}})
        ).base_url
        == "http://localhost:11434"
    )
