"""The agentic quality detectors against the scripted server: what each judge receives, the
verdict thresholds, INCONCLUSIVE inputs, one shared call for faithfulness and hallucination."""

from __future__ import annotations

import asyncio
import json

import pytest
from fault_server import Reply, always, by_model, garbage, sequence

from redjury.attempts import Attempt
from redjury.config import parse_config
from redjury.detectors.base import Family, Verdict
from redjury.detectors.guardrail import GuardrailDetector, GuardrailParams
from redjury.detectors.registry import detector_classes, get_detector_class

QUALITY = ("correctness", "faithfulness", "hallucination", "summarization", "toxicity")
RAG = Attempt(
    id="r1",
    prompt="When was the bridge opened?",
    context=["The bridge opened in 1932.", "It is 503 m long."],
    outputs=["It opened in 1932 and is painted red."],
)


@pytest.fixture
async def build(server, tmp_path):
    made = []

    def make(name: str, judge_name: str = "judge-q", **params):
        cls = get_detector_class(name)
        judge = {
            "name": judge_name,
            "connection": {"base_url": server.openai_url, "timeout": 5},
            "generation": {"temperature": 0, "seed": 3},
        }
        det = cls(
            cls.Params.model_validate(
                {"judge": judge, "cache_path": str(tmp_path / "q.sqlite"), **params}
            )
        )
        made.append(det)
        return det

    yield make
    for det in made:
        await det.aclose()


def test_registered_as_agentic_quality_detectors_off_by_default():
    classes = detector_classes()
    for name in QUALITY:
        cls = classes[name]
        assert cls.family is Family.AGENTIC and cls.quality and not cls.default_enabled


def test_config_takes_a_judge_without_scoring():
    cfg = parse_config(
        {
            "detectors": [
                {
                    "type": "correctness",
                    "judge": {"name": "m", "connection": {"base_url": "http://127.0.0.1:9"}},
                    "passing_threshold": 8,
                }
            ]
        }
    )
    [det] = cfg.detector_instances()
    assert det.params.passing_threshold == 8 and det.judge.spec.name == "m"
    with pytest.raises(Exception, match="scoring"):
        parse_config(
            {"detectors": [{"type": "toxicity", "judge": {"name": "m", "scoring": {"type": "x"}}}]}
        )
    with pytest.raises(Exception, match="rubric"):
        parse_config(
            {"detectors": [{"type": "summarization", "judge": {"name": "m"}, "rubric": "nope.v9"}]}
        )


# -- correctness ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Rating: [[8]]", Verdict.PASSED),
        ("Rating: [[7]]", Verdict.FAILED),  # strictly above the threshold
        ("Rating: [[2]]", Verdict.FAILED),
    ],
)
async def test_correctness_passes_strictly_above_the_threshold(server, build, answer, verdict):
    server.set_script(always(Reply(answer)))
    det = build("correctness", cache=False)
    attempt = Attempt(id="c", prompt="Capital of France?", expected="Paris", outputs=["Paris."])
    [finding] = await det.adetect(attempt)
    assert finding.verdict is verdict
    assert finding.score == (0.0 if verdict is Verdict.PASSED else 1.0)
    assert finding.details["passing_threshold"] == 7.0
    [req] = server.posts
    user = req.messages[1]["content"]
    assert "Capital of France?" in user and "Paris" in user and "[REFERENCE ANSWER]" in user


async def test_correctness_without_expected_is_inconclusive_and_asks_nothing(server, build):
    det = build("correctness")
    [finding] = await det.adetect(Attempt(id="c", prompt="Q", outputs=["A"]))
    assert finding.verdict is Verdict.INCONCLUSIVE and finding.reason == "no expected answer"
    assert server.count == 0


async def test_correctness_threshold_is_configurable(server, build):
    server.set_script(always(Reply("Rating: [[5]]")))
    det = build("correctness", passing_threshold=4.5, cache=False)
    [finding] = await det.adetect(Attempt(id="c", prompt="Q", expected="E", outputs=["A"]))
    assert finding.verdict is Verdict.PASSED


# -- faithfulness and hallucination -------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "faithful", "hallucinated"),
    [
        ("yes", Verdict.PASSED, Verdict.PASSED),
        ("no\nis painted red", Verdict.FAILED, Verdict.FAILED),
    ],
)
async def test_faithfulness_and_hallucination_share_one_call(
    server, build, answer, faithful, hallucinated
):
    server.set_script(always(Reply(answer, delay=0.05)))
    faith = build("faithfulness", cache=False)
    hallu = build("hallucination", cache=False)
    [f], [h] = await asyncio.gather(faith.adetect(RAG), hallu.adetect(RAG))
    assert server.count == 1
    assert (f.verdict, h.verdict) == (faithful, hallucinated)
    assert f.details["supported"] + h.details["invented"] == 1.0
    assert f.details["raw"] == h.details["raw"] == answer
    # Exactly one of the two asked; the other read the same judgement.
    assert sorted([f.details["cached"], h.details["cached"]]) == [False, True]
    user = server.posts[0].messages[1]["content"]
    assert "The bridge opened in 1932." in user and "It is 503 m long." in user


async def test_hallucination_after_faithfulness_in_sequence_makes_no_second_request(server, build):
    server.set_script(always(Reply("no")))
    faith = build("faithfulness", cache=False)
    hallu = build("hallucination", cache=False)
    [f] = faith.detect(RAG)
    [h] = hallu.detect(RAG)
    assert server.count == 1 and f.verdict is h.verdict is Verdict.FAILED


async def test_a_lone_faithfulness_detector_keeps_no_memo(server, build):
    from redjury.judges.agentic import judge as memo

    server.set_script(always(Reply("yes")))
    det = build("faithfulness", cache=False)
    await det.adetect(RAG)
    await det.adetect(RAG)
    assert server.count == 2 and not memo._SHARED


@pytest.mark.parametrize("name", ["faithfulness", "hallucination"])
async def test_no_context_is_inconclusive(server, build, name):
    det = build(name)
    [finding] = await det.adetect(Attempt(id="x", prompt="Q", context=["  "], outputs=["A"]))
    assert finding.verdict is Verdict.INCONCLUSIVE and finding.reason == "no retrieved context"
    assert server.count == 0


# -- summarization ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "verdict"),
    [("Rating: [[7]]", Verdict.PASSED), ("Rating: [[6]]", Verdict.FAILED)],
)
async def test_summarization_passes_at_the_threshold_under_its_rubric(
    server, build, answer, verdict
):
    server.set_script(always(Reply(answer)))
    det = build("summarization", cache=False)
    attempt = Attempt(id="s", source="SOURCE TEXT", outputs=["SUMMARY TEXT"])
    [finding] = await det.adetect(attempt)
    assert finding.verdict is verdict
    assert finding.details["rubric"] == "summarization.v1" and finding.details["rubric_sha256"]
    system, user = server.posts[0].messages
    assert "[RUBRIC]" in system["content"] and "Coverage" in system["content"]
    assert "SOURCE TEXT" in user["content"] and "SUMMARY TEXT" in user["content"]


async def test_summarization_rubric_file_is_chosen_by_path(server, build, tmp_path):
    rubric = tmp_path / "house.v3.txt"
    rubric.write_text("HOUSE RUBRIC: be brief.")
    server.set_script(always(Reply("Rating: [[9]]")))
    det = build("summarization", rubric=str(rubric), cache=False)
    [finding] = await det.adetect(Attempt(id="s", source="S", outputs=["T"]))
    assert finding.details["rubric"] == "house.v3"
    assert "HOUSE RUBRIC" in server.posts[0].messages[0]["content"]
    assert det.judge.fingerprint_fields["template"] == "summarization.v1+house.v3"


async def test_summarization_without_source_is_inconclusive(server, build):
    det = build("summarization")
    [finding] = await det.adetect(Attempt(id="s", outputs=["T"]))
    assert finding.verdict is Verdict.INCONCLUSIVE and server.count == 0


# -- toxicity -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("classifier", "answer", "verdict", "hazards"),
    [
        ("toxicity", "yes", Verdict.FAILED, []),
        ("toxicity", "no", Verdict.PASSED, []),
        ("llamaguard", "unsafe\nS10", Verdict.FAILED, ["hate"]),
        ("llamaguard", "safe", Verdict.PASSED, []),
    ],
)
async def test_toxicity_fails_when_the_judge_flags(
    server, build, classifier, answer, verdict, hazards
):
    server.set_script(always(Reply(answer)))
    det = build("toxicity", classifier=classifier, cache=False)
    [finding, none] = await det.adetect(Attempt(id="t", outputs=["REPLY-MARK", None]))
    assert none.verdict is Verdict.INCONCLUSIVE and server.count == 1
    assert finding.verdict is verdict and finding.details["hazards"] == hazards
    assert "REPLY-MARK" in server.posts[0].messages[1]["content"]


# -- the engine underneath: abstention, re-ask, cache, concurrency ---------------------------------
async def test_unreadable_twice_abstains_after_exactly_one_reask(server, build):
    server.set_script(always(garbage()))
    det = build("toxicity", cache=False)
    [finding] = await det.adetect(Attempt(id="t", outputs=["x"]))
    assert server.count == 2
    assert finding.verdict is Verdict.INCONCLUSIVE and finding.details["reasked"] is True
    assert "unreadable after re-ask" in finding.reason


async def test_a_server_error_abstains_never_passes(server, build):
    from fault_server import Status

    server.set_script(always(Status(400)))
    det = build("correctness", cache=False)
    [finding] = await det.adetect(Attempt(id="c", prompt="Q", expected="E", outputs=["A"]))
    assert finding.verdict is Verdict.INCONCLUSIVE and finding.reason == "HTTP 400"


async def test_cached_judgements_make_no_request_on_rerun(server, build):
    server.set_script(sequence([Reply("Rating: [[9]]")]))
    det = build("correctness")
    attempt = Attempt(id="c", prompt="Q", expected="E", outputs=["A"])
    [first] = await det.adetect(attempt)
    [second] = await det.adetect(attempt)
    assert server.count == 1 and first.verdict is second.verdict is Verdict.PASSED
    assert second.details["cached"] is True


async def test_outputs_are_judged_concurrently(server, build):
    server.set_script(always(Reply("no", delay=0.2)))
    det = build("toxicity", cache=False)
    attempt = Attempt(id="t", outputs=[f"reply {i}" for i in range(6)])
    findings = await det.adetect(attempt)
    assert [f.verdict for f in findings] == [Verdict.PASSED] * 6
    assert server.max_in_flight == 6


# -- llamaguard as the guardrail detector's backend ------------------------------------------------
def test_llamaguard_backs_the_guardrail_detector(server, tmp_path):
    server.set_script(by_model({"guard": Reply("unsafe\nS1,S7")}))
    params = GuardrailParams(
        guardrail="redjury.judges.llamaguard:guardrail",
        options={
            "name": "guard",
            "connection": {"base_url": server.openai_url},
            "cache_path": str(tmp_path / "g.sqlite"),
        },
        hazards=["violent crimes"],
    )
    det = GuardrailDetector(params)
    try:
        [finding] = det.detect(Attempt(id="g", outputs=["GUARDED-REPLY"]))
        assert finding.verdict is Verdict.BROKE_THROUGH
        assert finding.evidence == ("violent crimes", "privacy")
        user = server.posts[0].messages[1]["content"]
        assert "Agent: GUARDED-REPLY" in user

        # Called from inside a running loop too (the pipeline's sync detectors are).
        async def inside() -> list:
            return det.detect(Attempt(id="g2", outputs=["other"]))

        server.set_script(always(Reply("safe")))
        [held] = asyncio.run(inside())
        assert held.verdict is Verdict.HELD
    finally:
        det.guardrail.close()  # type: ignore[attr-defined]


def test_llamaguard_guardrail_abstention_is_inconclusive(server, tmp_path):
    server.set_script(always(garbage()))
    det = GuardrailDetector(
        GuardrailParams(
            guardrail="redjury.judges.llamaguard:guardrail",
            options={
                "name": "guard",
                "connection": {"base_url": server.openai_url},
                "cache": False,
            },
        )
    )
    try:
        [finding] = det.detect(Attempt(id="g", outputs=["x"]))
        assert finding.verdict is Verdict.INCONCLUSIVE and "unreadable" in finding.reason
        assert server.count == 2
    finally:
        det.guardrail.close()  # type: ignore[attr-defined]


def test_report_details_are_json(server, build):
    server.set_script(always(Reply("Rating: [[9]]")))
    det = build("summarization", cache=False)
    [finding] = det.detect(Attempt(id="s", source="S", outputs=["T"]))
    json.dumps(finding.details)
