"""Nothing a judge sends becomes a vote unless it is readable and valid: logprobs, token
counts and JSON answers with a repeated key abstain with their cause, never vote safe."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from fault_server import RawBody, Reply, always
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.abstentions import UNREADABLE, abstention_cause
from redjury.judges.answer_checks import (
    InvalidAnswer,
    json_object_once,
    logprob_table,
    token_count,
)
from redjury.judges.asking import JudgeResult, in_range
from redjury.judges.cache import JudgeCache
from redjury.judges.config import JudgeSpec
from redjury.judges.providers import MalformedResponse, provider_for
from redjury.judges.scoring import get_scoring_type

LOGPROB_JUDGE = {"scoring": {"logprobs": True}}


async def one_vote(panel, output: str = "o"):
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=[output]))
    await panel.aclose()
    [vote] = finding.details["judges"]
    return finding, vote


@pytest.mark.parametrize(
    ("top", "cause"),
    [
        ({"Yes": "nan", "No": -0.1}, "is not a number"),
        ({"Yes": "-inf", "No": -0.1}, "is not a number"),
        ({"Yes": -0.01, "No": 5.0}, "above 0"),
        ({"Yes": -0.01, "No": 1000}, "above 0"),
        ({"Yes": -0.01, "No": -0.02}, "add up to"),
        ({"Yes": True, "No": -1.0}, "is not a number"),
    ],
)
async def test_garbage_logprobs_abstain_with_their_cause(server, make_panel, top, cause):
    server.set_script(always(Reply("Yes", top_logprobs=top)))
    finding, vote = await one_vote(make_panel([judge(server.openai_url, **LOGPROB_JUDGE)]))
    assert vote["score"] is None
    assert cause in vote["abstain_reason"]
    assert abstention_cause(vote["abstain_reason"]) == UNREADABLE
    assert finding.score is None  # an error, never HELD


async def test_an_exponent_overflow_in_a_logprob_abstains_and_the_run_goes_on(server, make_panel):
    body = (
        b'{"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [{"token": "Yes",'
        b' "logprob": 1e400, "top_logprobs": [{"token": "Yes", "logprob": -1e999},'
        b' {"token": "No", "logprob": 1000}]}]}}]}'
    )
    server.set_script(always(RawBody(body)))
    finding, vote = await one_vote(make_panel([judge(server.openai_url, **LOGPROB_JUDGE)]))
    assert vote["score"] is None and finding.score is None


async def test_valid_logprobs_still_vote(server, make_panel):
    top = {"Yes": math.log(0.2), "No": math.log(0.8)}
    server.set_script(always(Reply("No", top_logprobs=top)))
    _, vote = await one_vote(make_panel([judge(server.openai_url, **LOGPROB_JUDGE)]))
    assert vote["score"] == pytest.approx(2.0)


async def test_a_json_answer_with_its_verdict_key_twice_abstains(server, make_panel):
    server.set_script(always(Reply('{"answer": "yes", "answer": "no"}')))
    finding, vote = await one_vote(make_panel([judge(server.openai_url)]))
    assert vote["score"] is None
    assert "repeats a key" in vote["abstain_reason"]
    assert abstention_cause(vote["abstain_reason"]) == UNREADABLE
    assert finding.score is None


@pytest.mark.parametrize(
    ("count", "cause"),
    [
        ("1e300", "outside"),
        (str(2**63), "outside"),
        ("-3000000", "outside"),
        ("2.5", "not a whole number"),
        ('"20"', "not a number"),
    ],
)
async def test_impossible_token_counts_abstain_and_the_cache_still_writes(
    server, make_panel, tmp_path, count, cause
):
    body = (
        '{"choices": [{"message": {"content": "yes"}}], '
        f'"usage": {{"prompt_tokens": {count}, "completion_tokens": 1}}}}'
    ).encode()
    server.set_script(always(RawBody(body)))
    cache = tmp_path / "c.sqlite"
    panel = make_panel([judge(server.openai_url)], cache=cache)
    finding, vote = await one_vote(panel)
    assert vote["score"] is None and cause in vote["abstain_reason"]
    assert panel.stats()["prompt_tokens"] >= 0
    panel.close()
    assert sqlite3.connect(cache).execute("SELECT count(*) FROM judgements").fetchone() == (0,)


def test_token_counts_in_range_are_ints():
    assert token_count(None, "n") == 0
    assert token_count(20.0, "n") == 20
    assert token_count(2**53, "n") == 2**53
    for bad in (-1, 2**53 + 1, math.nan, math.inf, True, "3", [1]):
        with pytest.raises(InvalidAnswer):
            token_count(bad, "n")


def test_a_logprob_table_is_a_distribution():
    assert logprob_table([("Yes", 0.0000001), ("No", -30)]) == {"Yes": 0.0, "No": -30.0}
    with pytest.raises(InvalidAnswer, match="listed twice"):
        logprob_table([("Yes", -1), ("Yes", -2)])
    with pytest.raises(InvalidAnswer, match="not text"):
        logprob_table([(1, -1)])
    with pytest.raises(InvalidAnswer, match="not finite"):
        logprob_table([("Yes", 10**400)])


def test_json_answers_with_repeats_are_refused_at_any_depth():
    assert json_object_once('{"answer": "yes", "why": {"a": 1}}') == {
        "answer": "yes",
        "why": {"a": 1},
    }
    assert json_object_once('{"a": "say \\"hi\\"", "b": "\\u0022"}')["b"] == '"'
    for text in ('{"answer": "yes", "answer": "no"}', '{"x": {"k": 1, "k": 2}}'):
        with pytest.raises(InvalidAnswer):
            json_object_once(text)


def test_a_plugin_score_outside_the_scale_abstains():
    from redjury.judges.scoring import Parsed

    assert in_range(Parsed(7.0)).score == 7.0
    for bad in (math.nan, math.inf, -1.0, 10.5):
        assert in_range(Parsed(bad)).score is None


# -- property: any body, any answer text → a valid score or an abstention ----------------
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
TOKENS = st.sampled_from(["Yes", "No", " yes", "no", "safe", "unsafe", "x"])


def _openai_like(text, usage, top):
    choice = {"message": {"content": text}}
    if top is not None:
        choice["logprobs"] = {
            "content": [{"token": "t", "logprob": 0, "top_logprobs": [dict(p) for p in top]}]
        }
    return {"choices": [choice], "usage": usage}


LOGPROB_ITEMS = st.lists(
    st.fixed_dictionaries({"token": TOKENS | JSON_VALUES, "logprob": JSON_VALUES}), max_size=5
)
ANSWERS = [
    "yes",
    "No",
    '{"answer": "yes", "answer": "no"}',
    '{"rating": 11}',
    '{"rating": 1e400}',
    "Rating: [[7]]",
    "unsafe\nS1",
    "Refused: 0\nConvincing: 5\nSpecific: 5",
]


def _dumps(value) -> bytes:
    return json.dumps(value, default=str).encode()


BODIES = st.one_of(
    st.binary(max_size=200),
    JSON_VALUES.map(_dumps),
    st.builds(
        _openai_like,
        st.one_of(st.text(max_size=80), JSON_VALUES, st.sampled_from(ANSWERS)),
        st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), JSON_VALUES),
        st.none() | LOGPROB_ITEMS,
    ).map(_dumps),
)
TYPES = ["harmbench", "scorer", "llamaguard", "strongreject"]


def _provider(logprobs: bool):
    spec = JudgeSpec.model_validate(judge("http://127.0.0.1:9/v1"))
    return provider_for(spec, logprobs=logprobs)


PROVIDERS = {flag: _provider(flag) for flag in (False, True)}
SCORINGS = {name: get_scoring_type(name)() for name in TYPES}


@settings(max_examples=300, deadline=None)
@given(body=BODIES, logprobs=st.booleans(), kind=st.sampled_from(TYPES))
def test_any_judge_answer_is_a_valid_vote_or_an_abstention(body, logprobs, kind):
    provider, scoring = PROVIDERS[logprobs], SCORINGS[kind]
    try:
        answer = provider.read(body)
    except MalformedResponse:
        return  # the judge abstains
    assert 0 <= answer.prompt_tokens <= 2**53 and 0 <= answer.completion_tokens <= 2**53
    if logprobs and answer.top_logprobs is not None:
        parsed = in_range(scoring.parse_logprobs(answer.top_logprobs))
    else:
        parsed = in_range(scoring.read(answer.text))
    if parsed.score is None:
        assert parsed.reason
        return
    assert math.isfinite(parsed.score) and 0.0 <= parsed.score <= 10.0
    result = JudgeResult(parsed.score, parsed.label, answer.text, None, 0.0, 1, 1)
    cache = JudgeCache(":memory:")
    cache.put(b"k", "j", result.to_cache())
    cache.flush()
    assert cache.get(b"k") is not None
