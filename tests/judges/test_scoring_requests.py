"""Every scoring type's rendered request, as the scripted server receives it: a golden body per
type, which attempt fields reach the judge, and exactly one re-ask per unreadable answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fault_server import Reply, always, garbage, sequence
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.judges.scoring import scoring_types

GOLDEN = Path(__file__).parent / "golden_scoring"
# REDJURY_REGOLD=1 rewrites the golden files from what the server received.
REGOLD = os.environ.get("REDJURY_REGOLD") == "1"

FULL = Attempt(
    id="a1",
    goal="GOAL-MARK",
    prompt="PROMPT-MARK",
    goal_context="GCTX-MARK",
    context=["CTX-MARK-1", "CTX-MARK-2"],
    expected="EXP-MARK",
    source="SRC-MARK",
    outputs=["OUT-MARK"],
)
MARKS = {
    "goal": "GOAL-MARK",
    "prompt": "PROMPT-MARK",
    "goal_context": "GCTX-MARK",
    "context": "CTX-MARK-1",
    "expected": "EXP-MARK",
    "source": "SRC-MARK",
    "output": "OUT-MARK",
}
# Which attempt fields each type's judge receives (the rest must not leak into the request).
FIELDS = {
    "harmbench": {"goal", "goal_context", "output"},
    "harmbench_variant": {"goal", "goal_context", "output"},
    "jailbreakbench": {"goal", "output"},
    "nuanced": {"goal", "output"},
    "on_topic": {"goal", "prompt"},
    "rag_outcome": {"goal", "prompt", "context", "output"},
    "scorer": {"goal", "output"},
    "strongreject": {"goal", "output"},
    "llamaguard": {"prompt", "output"},
}
# A readable answer per type, and the score it gives.
ANSWERS = {
    "harmbench": ("yes", 10.0),
    "harmbench_variant": ("no", 0.0),
    "jailbreakbench": ("unsafe", 10.0),
    "nuanced": ("yes", 10.0),
    "on_topic": ("yes", 10.0),
    "rag_outcome": ("SUCCESS", 10.0),
    "scorer": ("Rating: [[7]]", 7.0),
    "strongreject": ("Refused: 0\nConvincing: 3\nSpecific: 5", 7.5),
    "llamaguard": ("unsafe\nS2", 10.0),
}


def test_every_registered_type_is_covered_here():
    # Built-ins only: other tests register throwaway types in the same process.
    builtin = {n for n, c in scoring_types().items() if c.__module__.startswith("redjury.")}
    assert builtin == set(FIELDS) == set(ANSWERS)


@pytest.mark.parametrize("kind", sorted(FIELDS))
async def test_rendered_request_is_golden(server, make_panel, kind):
    server.set_script(always(Reply(ANSWERS[kind][0])))
    panel = make_panel([judge(server.openai_url, "judge-a", kind)])
    [finding] = await panel.adetect(FULL)
    await panel.aclose()
    [req] = server.posts
    assert req.path == "/v1/chat/completions"
    body = req.json
    path = GOLDEN / f"{kind}.json"
    if REGOLD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    assert body == json.loads(path.read_text()), f"request of {kind} differs from {path.name}"
    assert finding.details["votes"] == {f"{kind}:judge-a": ANSWERS[kind][1]}


@pytest.mark.parametrize("kind", sorted(FIELDS))
async def test_judge_receives_exactly_its_fields(server, make_panel, kind):
    server.set_script(always(Reply(ANSWERS[kind][0])))
    panel = make_panel([judge(server.openai_url, "judge-a", kind)], use_cache=False)
    await panel.adetect(FULL)
    await panel.aclose()
    [system, user] = server.posts[0].messages
    assert (system["role"], user["role"]) == ("system", "user")
    received = {name for name, mark in MARKS.items() if mark in user["content"]}
    assert received == FIELDS[kind]
    # Inputs go in the user turn only; the instruction never carries attempt data.
    assert not any(mark in system["content"] for mark in MARKS.values())


@pytest.mark.parametrize("kind", sorted(FIELDS))
async def test_one_reask_per_unreadable_answer_then_abstain(server, make_panel, kind):
    server.set_script(always(garbage()))
    panel = make_panel([judge(server.openai_url, "judge-a", kind)], use_cache=False)
    [finding] = await panel.adetect(FULL)
    await panel.aclose()
    assert server.count == 2
    assert finding.verdict is Verdict.INCONCLUSIVE
    vote = finding.details["judges"][0]
    assert vote["score"] is None and vote["reasked"] is True
    assert "unreadable after re-ask" in vote["abstain_reason"]
    # The re-ask continues the conversation: the first answer, then the type's re-ask text.
    second = server.posts[1].messages
    assert second[:2] == server.posts[0].messages
    assert second[2] == {"role": "assistant", "content": garbage().text}
    assert second[3]["role"] == "user" and second[3]["content"]


@pytest.mark.parametrize("kind", sorted(FIELDS))
async def test_a_readable_reask_answer_is_the_vote(server, make_panel, kind):
    server.set_script(sequence([Reply(""), Reply(ANSWERS[kind][0])]))
    panel = make_panel([judge(server.openai_url, "judge-a", kind)], use_cache=False)
    [finding] = await panel.adetect(FULL)
    await panel.aclose()
    assert server.count == 2
    assert finding.details["votes"] == {f"{kind}:judge-a": ANSWERS[kind][1]}


@pytest.mark.parametrize(
    ("kind", "attempt", "reason"),
    [
        ("on_topic", Attempt(id="1", goal="G", outputs=["O"]), "attempt has no prompt"),
        (
            "rag_outcome",
            Attempt(id="1", goal="G", prompt="Q", outputs=["O"]),
            "attempt has no retrieved context",
        ),
        (
            "rag_outcome",
            Attempt(id="1", prompt="Q", context=["C"], outputs=["O"]),
            "attempt has no goal",
        ),
        ("harmbench", Attempt(id="1", outputs=["O"]), "attempt has no goal or prompt"),
    ],
)
async def test_missing_input_abstains_without_a_request(server, make_panel, kind, attempt, reason):
    panel = make_panel([judge(server.openai_url, "judge-a", kind)])
    [finding] = await panel.adetect(attempt)
    await panel.aclose()
    assert server.count == 0
    assert finding.details["abstained"] == {f"{kind}:judge-a": reason}


async def test_contextual_harmbench_reads_the_goal_context_first(server, make_panel):
    panel = make_panel([judge(server.openai_url)], use_cache=False)
    await panel.adetect(FULL)
    await panel.adetect(Attempt(id="2", goal="GOAL-MARK", outputs=["OUT-MARK"]))
    await panel.aclose()
    with_ctx, without = (r.messages[1]["content"] for r in server.posts)
    assert with_ctx.index("[CONTEXT]") < with_ctx.index("GCTX-MARK") < with_ctx.index("[BEHAVIOR]")
    assert "[CONTEXT]" not in without and "GCTX-MARK" not in without
