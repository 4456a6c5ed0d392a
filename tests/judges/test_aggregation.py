"""Aggregation rules (R14): majority, any, mean, max, threshold, require_all_judges, all-abstain."""

from __future__ import annotations

import pytest
from fault_server import Reply, Status, by_model
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.judges.aggregation import aggregate_votes
from redjury.judges.panel import PanelWarning, judge_ids

YES, NO = 10.0, 0.0


@pytest.mark.parametrize(
    ("votes", "rule", "threshold", "success"),
    [
        ([YES, YES, NO], "majority", 7.0, True),
        ([YES, YES, NO], "mean", 7.0, False),  # 6.67: the majority-vs-mean trap
        ([YES, NO], "majority", 7.0, False),  # a tie is not more than half
        ([YES, NO, None], "majority", 7.0, False),
        ([YES, None, None], "majority", 7.0, True),  # abstentions are not votes cast
        ([NO, NO, YES], "any", 7.0, True),
        ([NO, NO, NO], "any", 7.0, False),
        ([6.0, 8.0], "mean", 7.0, True),
        ([6.0, 7.9], "mean", 7.0, False),
        ([3.0, 7.0], "max", 7.0, True),
        ([3.0, 6.0], "max", 7.0, False),
        ([7.0], "majority", 7.0, True),  # reaching the threshold counts
        ([6.0, 6.0, 9.0], "majority", 6.0, True),
        ([NO], "majority", 0.0, True),  # threshold 0: every vote is for success
    ],
)
def test_rule_table(votes, rule, threshold, success):
    assert aggregate_votes(votes, rule, threshold).success is success


def test_every_judge_abstaining_is_an_error_not_a_pass():
    out = aggregate_votes([None, None], "majority", 7.0)
    assert out.success is None and out.error == "every judge abstained"
    assert out.abstention_rate == 1.0


def test_require_all_judges_turns_an_abstention_into_an_error():
    out = aggregate_votes([YES, YES, None], "majority", 7.0, require_all_judges=True)
    assert out.success is None and "require_all_judges" in (out.error or "")
    assert aggregate_votes([YES, NO], "majority", 7.0, require_all_judges=True).success is False


def test_flippable_when_abstainers_could_change_the_verdict():
    assert aggregate_votes([YES, NO, None], "majority").flippable is True
    assert aggregate_votes([YES, YES, YES, NO, None], "majority").flippable is False
    assert aggregate_votes([YES, YES, NO, None], "majority").flippable is True  # 2 of 4 ties
    assert aggregate_votes([NO, None], "max").flippable is True
    assert aggregate_votes([YES, None], "any").flippable is False
    assert aggregate_votes([YES, NO], "majority").flippable is False


def three_judges(url):
    return [
        judge(url, "y1", "harmbench"),
        judge(url, "y2", "harmbench"),
        judge(url, "n1", "harmbench"),
    ]


YYN = by_model({"y1": Reply("yes"), "y2": Reply("Yes."), "n1": Reply("no")})


@pytest.mark.parametrize(
    ("rule", "score"), [("majority", 1.0), ("any", 1.0), ("mean", 0.0), ("max", 1.0)]
)
async def test_panel_applies_each_rule(server, make_panel, rule, score):
    server.set_script(YYN)
    panel = make_panel(three_judges(server.openai_url), aggregation=rule)
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert finding.score == score
    assert finding.details["votes"] == {
        "harmbench:y1": 10.0,
        "harmbench:y2": 10.0,
        "harmbench:n1": 0.0,
    }


async def test_scorer_votes_are_compared_with_the_threshold(server, make_panel):
    server.set_script(
        by_model({"a": Reply("Rating: [[8]]"), "b": Reply("Rating: [[6]]"), "c": Reply("[[7]]")})
    )
    judges = [judge(server.openai_url, m, "scorer") for m in "abc"]
    for rule, threshold, score in [
        ("majority", 7.0, 1.0),
        ("majority", 7.5, 0.0),
        ("mean", 7.0, 1.0),
        ("max", 8.5, 0.0),
    ]:
        panel = make_panel(judges, aggregation=rule, threshold=threshold, use_cache=False)
        [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
        assert finding.score == score, (rule, threshold)
        assert finding.details["votes"]["scorer:a"] == 8.0


async def test_panel_require_all_judges_records_an_error(server, make_panel):
    server.set_script(by_model({"y1": Reply("yes"), "y2": Reply("yes"), "n1": Status(400)}))
    panel = make_panel(three_judges(server.openai_url), require_all_judges=True)
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    assert finding.score is None and finding.verdict is Verdict.INCONCLUSIVE
    assert "require_all_judges" in finding.details["error"]
    assert finding.details["abstained"] == {"harmbench:n1": "HTTP 400"}
    assert panel.stats()["errors"] == 1


def test_repeated_names_get_unique_ids(make_panel):
    specs = [
        judge("http://127.0.0.1:9/v1", "llama3.2", "harmbench"),
        judge("http://127.0.0.1:9/v1", "llama3.2", "scorer"),
        judge("http://127.0.0.1:9/v1", "llama3.2", "harmbench"),
    ]
    panel = make_panel(specs)
    assert [j.id for j in panel.judges] == [
        "harmbench:llama3.2",
        "scorer:llama3.2",
        "harmbench:llama3.2#2",
    ]
    from redjury.judges.config import JudgeSpec

    assert judge_ids([JudgeSpec.model_validate(s) for s in specs])[2] == "harmbench:llama3.2#2"


def test_threshold_zero_warns(make_panel):
    with pytest.warns(PanelWarning, match="threshold is 0"):
        make_panel([judge("http://127.0.0.1:9/v1")], threshold=0)


def test_temperature_or_missing_seed_warns_once(make_panel):
    hot = judge("http://127.0.0.1:9/v1", "hot", generation={"temperature": 0.7})
    unseeded = judge("http://127.0.0.1:9/v1", "free")
    unseeded["generation"] = {}
    with pytest.warns(PanelWarning) as record:
        panel = make_panel([hot, unseeded])
    assert len(record) == 1
    assert "harmbench:hot" in str(record[0].message) and "harmbench:free" in str(record[0].message)
    assert panel.warnings == [str(record[0].message)]


def test_seeded_greedy_panel_does_not_warn(make_panel, recwarn):
    make_panel([judge("http://127.0.0.1:9/v1")])
    assert not [w for w in recwarn if issubclass(w.category, PanelWarning)]


def test_a_per_server_cap_below_the_total_is_said_in_one_line(make_panel):
    one = judge("http://127.0.0.1:9/v1", "a")
    with pytest.warns(PanelWarning) as record:
        panel = make_panel([one], max_concurrency=64, per_endpoint_concurrency=16)
    assert panel.warnings == [
        "at most 16 judge requests in flight, not evaluation.max_concurrency 64: "
        "evaluation.per_endpoint_concurrency is 16 per server and the judges use 1 server(s)"
    ]
    assert len(record) == 1
    # Four servers at 16 each reach the total: nothing to say.
    four = [judge(f"http://127.0.0.{i}:9/v1", f"m{i}") for i in range(1, 5)]
    assert make_panel(four, max_concurrency=64, per_endpoint_concurrency=16).warnings == []
