"""How a judge's scoring can be changed: system_prompt, a whole template file, the completions
endpoint, structured output (a named JSON field), logprobs; and the panel's guards around types."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator

import pytest
from fault_server import FaultServer, Reply, Request, _response, always, sequence
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.judges.panel import PanelWarning
from redjury.judges.scoring import Template, get_scoring_type

ATTEMPT = Attempt(id="a1", goal="GOAL-MARK", prompt="PROMPT-MARK", outputs=["OUT-MARK"])
COMPLETION_PATHS = ("/v1/completions", "/api/generate")


class CompletionsServer(FaultServer):
    """The scripted server, also answering the raw-prompt endpoints of OpenAI and Ollama."""

    async def _answer(self, method, path, headers, body, writer, conn=None):  # type: ignore[no-untyped-def]
        if method != "POST" or path.split("?", 1)[0] not in COMPLETION_PATHS:
            return await super()._answer(method, path, headers, body, writer, conn)
        with self._lock:
            req = Request(method, path, headers, body, self._posts, time.monotonic())
            self._posts += 1
            self.requests.append(req)
        action = self.script(req)
        assert isinstance(action, Reply)
        if path == "/api/generate":
            data: dict = {"model": req.model, "response": action.text, "done": True}
            data |= {"prompt_eval_count": 11, "eval_count": 1}
        else:
            choice: dict = {"index": 0, "text": action.text, "finish_reason": "stop"}
            if action.top_logprobs is not None:
                choice["logprobs"] = {"top_logprobs": [dict(action.top_logprobs)]}
            usage = {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12}
            data = {"object": "text_completion", "choices": [choice], "usage": usage}
        writer.write(_response(200, json.dumps(data).encode()))
        await writer.drain()
        return True


@pytest.fixture
def raw_server() -> Iterator[CompletionsServer]:
    with CompletionsServer() as srv:
        yield srv


async def _judge_once(make_panel, spec, attempt=ATTEMPT):
    panel = make_panel([spec], use_cache=False)
    [finding] = await panel.adetect(attempt)
    await panel.aclose()
    return finding


# -- system_prompt and template ----------------------------------------------------------------
READABLE = {
    "nuanced": "no",
    "rag_outcome": "FAILURE",
    "strongreject": "Refused: 1\nConvincing: 1\nSpecific: 1",
    "llamaguard": "safe",
}


@pytest.mark.parametrize("kind", sorted(READABLE))
async def test_system_prompt_replaces_only_the_instruction(server, make_panel, kind):
    server.set_script(always(Reply(READABLE[kind])))
    attempt = Attempt(id="1", goal="G", prompt="P", context=["C"], outputs=["O"])
    await _judge_once(make_panel, judge(server.openai_url, kind=kind), attempt)
    spec = judge(server.openai_url, kind=kind, scoring={"system_prompt": "MY RULES"})
    await _judge_once(make_panel, spec, attempt)
    default, custom = (r.messages for r in server.posts)
    assert custom[0] == {"role": "system", "content": "MY RULES"}
    # Inputs and answer format stay, so the type's parser still reads the answer.
    assert custom[1] == default[1]
    answer = Template.load(f"{kind}.v1").sections["answer"]
    assert custom[1]["content"].endswith(answer)


async def test_a_template_file_replaces_the_whole_template(server, make_panel, tmp_path):
    path = tmp_path / "cls.v2.txt"
    path.write_text(
        "=== instruction ===\n<<SYS>>judge<</SYS>>\n=== inputs ===\n"
        "B={goal} G={output}\n=== answer ===\n[/INST]\n"
    )
    server.set_script(always(Reply("unsafe")))
    spec = judge(server.openai_url, kind="jailbreakbench", scoring={"template": str(path)})
    finding = await _judge_once(make_panel, spec)
    [req] = server.posts
    assert req.messages == [
        {"role": "system", "content": "<<SYS>>judge<</SYS>>"},
        {"role": "user", "content": "B=GOAL-MARK G=OUT-MARK\n\n[/INST]"},
    ]
    assert finding.score == 1.0


# -- completions endpoint --------------------------------------------------------------------
async def test_completions_mode_sends_one_raw_prompt(raw_server, make_panel):
    raw_server.set_script(always(Reply(" no")))
    spec = judge(raw_server.openai_url, kind="nuanced", scoring={"completions": True})
    finding = await _judge_once(make_panel, spec)
    [req] = raw_server.posts
    assert req.path == "/v1/completions"
    body = req.json
    assert "messages" not in body and body["model"] == "judge-a" and body["seed"] == 7
    t = Template.load("nuanced.v1").sections
    expected = t["instruction"] + "\n\n" + t["inputs"].format(goal="GOAL-MARK", output="OUT-MARK")
    assert body["prompt"] == expected + "\n\n" + t["answer"]
    assert finding.score == 0.0


async def test_completions_mode_reasks_once_with_the_answer_appended(raw_server, make_panel):
    raw_server.set_script(sequence([Reply("hmm"), Reply("yes")]))
    spec = judge(raw_server.openai_url, kind="harmbench_variant", scoring={"completions": True})
    finding = await _judge_once(make_panel, spec)
    first, second = (r.json["prompt"] for r in raw_server.posts)
    reask = Template.load("harmbench_variant.v1").sections["reask"]
    assert second == first + "\n\nhmm\n\n" + reask
    assert finding.score == 1.0


async def test_completions_mode_logprobs(raw_server, make_panel):
    top = {" yes": math.log(0.2), " no": math.log(0.6)}
    raw_server.set_script(always(Reply("no", top_logprobs=top)))
    spec = judge(
        raw_server.openai_url, kind="nuanced", scoring={"completions": True, "logprobs": True}
    )
    panel = make_panel([spec], use_cache=False)
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    assert raw_server.posts[0].json["logprobs"] == 5
    assert finding.details["votes"] == {"nuanced:judge-a": pytest.approx(2.5)}


async def test_completions_mode_on_ollama_is_raw_generate(raw_server, make_panel):
    raw_server.set_script(always(Reply("SUCCESS")))
    spec = judge(raw_server.url, kind="rag_outcome", type="OLLAMA", scoring={"completions": True})
    attempt = Attempt(id="1", goal="G", prompt="Q", context=["C"], outputs=["O"])
    finding = await _judge_once(make_panel, spec, attempt)
    [req] = raw_server.posts
    assert req.path == "/api/generate"
    assert (
        req.json["raw"] is True
        and req.json["stream"] is False
        and "[QUERY]\nQ" in req.json["prompt"]
    )
    assert finding.score == 1.0


# -- structured output ----------------------------------------------------------------------------
STRUCTURED = {
    "harmbench_variant": ('{"answer": "yes"}', 10.0),
    "rag_outcome": ('{"outcome": "FAILURE"}', 0.0),
    "strongreject": ('{"refused": 0, "convincing": 5, "specific": 3}', 7.5),
    "llamaguard": ('{"verdict": "unsafe", "categories": ["S10"]}', 10.0),
}


@pytest.mark.parametrize("kind", sorted(STRUCTURED))
async def test_response_format_schema_is_sent_and_its_field_read(server, make_panel, kind):
    cls = get_scoring_type(kind)
    fmt = cls.response_format()  # type: ignore[attr-defined]
    answer, score = STRUCTURED[kind]
    server.set_script(always(Reply(answer)))
    attempt = Attempt(id="1", goal="G", prompt="P", context=["C"], outputs=["O"])
    spec = judge(server.openai_url, kind=kind, generation={"response_format": fmt})
    finding = await _judge_once(make_panel, spec, attempt)
    sent = server.posts[0].json["response_format"]
    assert sent == fmt and sent["type"] == "json_schema"
    schema = sent["json_schema"]["schema"]
    # The field the parser reads is the one the schema requires.
    assert json.loads(answer).keys() <= set(schema["properties"])
    assert finding.details["votes"] == {f"{kind}:judge-a": score}


async def test_structured_answer_cut_off_is_reasked_once(server, make_panel):
    server.set_script(always(Reply('{"outcome": "SUCC')))
    attempt = Attempt(id="1", goal="G", prompt="P", context=["C"], outputs=["O"])
    finding = await _judge_once(make_panel, judge(server.openai_url, kind="rag_outcome"), attempt)
    assert server.count == 2 and finding.verdict is Verdict.INCONCLUSIVE


# -- logprobs ------------------------------------------------------------------------------------
async def test_logprob_mode_scores_p_yes_and_never_reasks(server, make_panel):
    top = {"Yes": math.log(0.45), "No": math.log(0.15), "The": math.log(0.4)}
    server.set_script(always(Reply("Yes", top_logprobs=top)))
    spec = judge(server.openai_url, kind="harmbench_variant", scoring={"logprobs": True})
    finding = await _judge_once(make_panel, spec)
    body = server.posts[0].json
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert finding.details["votes"] == {"harmbench_variant:judge-a": pytest.approx(7.5)}


async def test_logprob_mode_without_logprobs_abstains(server, make_panel):
    server.set_script(always(Reply("yes")))
    spec = judge(server.openai_url, kind="nuanced", scoring={"logprobs": True})
    finding = await _judge_once(make_panel, spec)
    assert server.count == 1
    assert finding.details["abstained"] == {"nuanced:judge-a": "no logprobs returned"}


# -- the panel's guards -------------------------------------------------------------------------
async def test_rag_inconclusive_abstains_without_a_reask(server, make_panel):
    server.set_script(always(Reply("INCONCLUSIVE")))
    attempt = Attempt(id="1", goal="G", prompt="P", context=["C"], outputs=["O"])
    finding = await _judge_once(make_panel, judge(server.openai_url, kind="rag_outcome"), attempt)
    assert server.count == 1
    assert finding.score is None and finding.verdict is Verdict.INCONCLUSIVE
    vote = finding.details["judges"][0]
    assert vote["vote"] == "INCONCLUSIVE" and vote["reasked"] is False
    assert vote["abstain_reason"] == "judge answered INCONCLUSIVE"


async def test_inconclusive_beside_a_no_is_an_abstention_not_a_vote(server, make_panel):
    from fault_server import by_model

    server.set_script(by_model({"a": Reply("INCONCLUSIVE"), "b": Reply("FAILURE")}))
    attempt = Attempt(id="1", goal="G", prompt="P", context=["C"], outputs=["O"])
    panel = make_panel(
        [judge(server.openai_url, "a", "rag_outcome"), judge(server.openai_url, "b", "rag_outcome")]
    )
    [finding] = await panel.adetect(attempt)
    await panel.aclose()
    assert finding.details["votes"] == {"rag_outcome:a": None, "rag_outcome:b": 0.0}
    assert finding.details["abstention_rate"] == 0.5


def test_on_topic_in_a_harm_panel_warns(server, make_panel):
    with pytest.warns(PanelWarning, match="not harm judges.*on_topic:judge-a"):
        make_panel([judge(server.openai_url, kind="on_topic"), judge(server.openai_url, "b")])


def test_an_on_topic_only_panel_does_not_warn(server, make_panel, recwarn):
    make_panel([judge(server.openai_url, kind="on_topic")])
    assert not [w for w in recwarn if issubclass(w.category, PanelWarning)]


def test_every_type_is_listed_by_detectors_list():
    from typer.testing import CliRunner

    from redjury.cli import app

    result = CliRunner().invoke(app, ["detectors", "list", "--json"])
    assert result.exit_code == 0, result.output
    names = {item["name"] for item in json.loads(result.output)}
    for kind in ("harmbench", "harmbench_variant", "jailbreakbench", "nuanced", "on_topic"):
        assert f"judge:{kind}" in names
    for kind in ("rag_outcome", "scorer", "strongreject", "llamaguard"):
        assert f"judge:{kind}" in names
    for name in ("correctness", "faithfulness", "hallucination", "summarization", "toxicity"):
        assert name in names


@pytest.mark.parametrize("kind", sorted(STRUCTURED))
def test_json_object_style_carries_the_same_schema(kind):
    cls = get_scoring_type(kind)
    openai = cls.response_format()  # type: ignore[attr-defined]
    llama = cls.response_format("json_object")  # type: ignore[attr-defined]
    assert llama == {"type": "json_object", "schema": openai["json_schema"]["schema"]}
