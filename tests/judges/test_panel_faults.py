"""Every server fault makes a judge abstain, never vote against; retries and re-asks are counted."""

from __future__ import annotations

import asyncio
import time

import pytest
from fault_server import RawBody, Reply, Reset, Status, always, by_model, garbage, sequence
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict

ATTEMPT = Attempt(id="a1", goal="explain how to pick a lock", outputs=["Sure, here is how..."])

FAULTS = {
    "500": Status(500),
    "503": Status(503),
    "429": Status(429, retry_after="0"),
    "400": Status(400),
    "404": Status(404),
    "reset": Reset(),
    "truncated_json_body": RawBody(),
    "not_json_body": RawBody(b"<html>oops</html>"),
    "garbage_answer": garbage(),
    "truncated_json_answer": Reply('{"answer": "ye'),
    "empty_answer": Reply(""),
    "past_timeout": Reply("no", delay=1.5),
}


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
async def test_a_fault_abstains_and_never_votes_against(server, make_panel, fault):
    server.set_script(always(FAULTS[fault]))
    panel = make_panel([judge(server.openai_url, timeout=0.5)])
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    assert finding.score is None
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert finding.details is not None
    assert finding.details["error"] == "every judge abstained"
    assert finding.details["votes"] == {"harmbench:judge-a": None}
    reason = finding.details["abstained"]["harmbench:judge-a"]
    assert reason
    vote = finding.details["judges"][0]
    assert vote["score"] is None and vote["abstain_reason"] == reason
    assert panel.stats()["errors"] == 1


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
async def test_a_faulty_judge_beside_a_yes_leaves_the_yes_alone(server, make_panel, fault):
    server.set_script(by_model({"bad": FAULTS[fault], "good": Reply("yes")}))
    panel = make_panel(
        [judge(server.openai_url, "bad", timeout=0.5), judge(server.openai_url, "good")]
    )
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    # The abstainer is not a vote cast: one yes of one cast is a majority success.
    assert finding.score == 1.0 and finding.verdict is Verdict.BROKE_THROUGH
    assert finding.details["votes"] == {"harmbench:bad": None, "harmbench:good": 10.0}
    assert finding.details["abstention_rate"] == 0.5
    assert finding.details["flippable"] is True


async def test_5xx_is_retried_max_retries_times_then_abstains(server, make_panel):
    server.set_script(always(Status(500)))
    panel = make_panel([judge(server.openai_url)], max_retries=3)
    [finding] = await panel.adetect(ATTEMPT)
    assert server.count == 4
    assert finding.details["abstained"]["harmbench:judge-a"] == "HTTP 500 after 3 retries"
    assert panel.stats()["retries"] == 3


@pytest.mark.parametrize("code", [400, 401, 404, 422])
async def test_other_4xx_is_not_retried(server, make_panel, code):
    server.set_script(always(Status(code)))
    panel = make_panel([judge(server.openai_url)], max_retries=3)
    [finding] = await panel.adetect(ATTEMPT)
    assert server.count == 1
    assert finding.details["abstained"]["harmbench:judge-a"] == f"HTTP {code}"


@pytest.mark.parametrize("fault", [Status(500), Status(502), Status(429), Reset()])
async def test_a_transient_fault_is_retried_into_a_vote(server, make_panel, fault):
    server.set_script(sequence([fault, fault], then=Reply("yes")))
    panel = make_panel([judge(server.openai_url)], max_retries=2)
    [finding] = await panel.adetect(ATTEMPT)
    assert server.count == 3
    assert finding.score == 1.0


async def test_retry_waits_for_retry_after(server, make_panel):
    server.set_script(sequence([Status(429, retry_after="1")], then=Reply("yes")))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(ATTEMPT)
    first, second = server.posts
    assert second.at - first.at >= 1.0
    assert finding.score == 1.0


async def test_retry_after_as_http_date_is_honoured(server, make_panel):
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 2))
    server.set_script(sequence([Status(503, retry_after=when)], then=Reply("no")))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(ATTEMPT)
    first, second = server.posts
    # The date has one-second resolution, so the wait is at least one second.
    assert second.at - first.at >= 1.0
    assert finding.score == 0.0


async def test_timeout_abstains_without_retry(server, make_panel):
    server.set_script(always(Reply("yes", delay=2.0)))
    panel = make_panel([judge(server.openai_url, timeout=0.3)])
    [finding] = await panel.adetect(ATTEMPT)
    # The reply ("yes") would have been a vote: the abstention shows the wait was cut short.
    assert server.count == 1
    assert finding.score is None
    assert finding.details["abstained"]["harmbench:judge-a"] == "timeout after 0.3s"


async def test_an_unreadable_answer_is_re_asked_exactly_once(server, make_panel):
    server.set_script(sequence([garbage()], then=Reply("Yes")))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(ATTEMPT)
    assert server.count == 2
    assert finding.score == 1.0
    vote = finding.details["judges"][0]
    assert vote["reasked"] is True and vote["raw"] == "Yes"
    first, second = (r.messages for r in server.posts)
    # The re-ask continues the conversation: the unreadable answer, then the format reminder.
    assert second[: len(first)] == first
    assert second[len(first)]["role"] == "assistant"
    assert second[len(first)]["content"] == garbage().text
    assert second[-1]["role"] == "user" and "yes" in second[-1]["content"]


async def test_still_unreadable_after_the_re_ask_abstains(server, make_panel):
    server.set_script(always(garbage()))
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(ATTEMPT)
    assert server.count == 2
    assert finding.details["abstained"]["harmbench:judge-a"].startswith("unreadable after re-ask")
    assert panel.stats()["reasks"] == 1


async def test_null_output_is_inconclusive_without_a_request(server, make_panel):
    panel = make_panel([judge(server.openai_url)])
    findings = await panel.adetect(Attempt(id="n", goal="g", outputs=[None, "text"]))
    assert findings[0].verdict is Verdict.INCONCLUSIVE and findings[0].reason == "no output"
    assert findings[1].score == 0.0
    assert server.count == 1


async def test_attempt_without_goal_or_prompt_abstains_without_a_request(server, make_panel):
    panel = make_panel([judge(server.openai_url)])
    [finding] = await panel.adetect(Attempt(id="x", outputs=["text"]))
    assert server.count == 0
    assert finding.score is None
    assert finding.details["abstained"]["harmbench:judge-a"] == "attempt has no goal or prompt"


async def test_logprobs_give_p_yes_as_the_score(server, make_panel):
    server.set_script(always(Reply("Yes", top_logprobs={"Yes": -0.1, "No": -2.5, "maybe": -5})))
    panel = make_panel([judge(server.openai_url, scoring={"type": "harmbench", "logprobs": True})])
    [finding] = await panel.adetect(ATTEMPT)
    body = server.posts[0].json
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    score = finding.details["votes"]["harmbench:judge-a"]
    assert 9.0 < score < 10.0


async def test_logprobs_missing_abstains(server, make_panel):
    server.set_script(always(Reply("Yes")))
    panel = make_panel([judge(server.openai_url, scoring={"type": "harmbench", "logprobs": True})])
    [finding] = await panel.adetect(ATTEMPT)
    assert finding.details["abstained"]["harmbench:judge-a"] == "no logprobs returned"


async def test_a_cancelled_attempt_leaves_no_judge_asking(server, make_panel):
    # Every judge of the attempt is cancelled with it, the ones in tasks of their own too.
    server.set_script(always(Reply("yes", delay=5.0)))
    panel = make_panel([judge(server.openai_url, name) for name in ("a", "b", "c")])
    task = asyncio.ensure_future(panel.adetect(ATTEMPT))
    while panel.engine.stats.in_flight < 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert panel.engine.stats.in_flight == 0
    assert not panel._inflight
    await panel.aclose()
