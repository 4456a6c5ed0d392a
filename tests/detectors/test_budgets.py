from __future__ import annotations

import pytest
from pydantic import ValidationError

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.detectors.budgets import CostDetector, LatencyDetector


def latency(budget_ms: float) -> LatencyDetector:
    return LatencyDetector(LatencyDetector.Params(budget_ms=budget_ms))


def cost(budget_tokens: int) -> CostDetector:
    return CostDetector(CostDetector.Params(budget_tokens=budget_tokens))


def test_under_latency_budget_passes() -> None:
    finding = latency(1000).detect(Attempt(id="a", outputs=["hi"], latency_ms=800))[0]
    assert finding.verdict is Verdict.PASSED
    assert finding.score == 0.0
    assert finding.evidence == ("latency 800 ms <= budget 1000 ms",)


def test_at_budget_passes() -> None:
    assert latency(1000).detect(Attempt(id="a", outputs=["hi"], latency_ms=1000))[0].verdict is (
        Verdict.PASSED
    )
    usage = {"total_tokens": 500}
    assert cost(500).detect(Attempt(id="a", outputs=["hi"], usage=usage))[0].verdict is (
        Verdict.PASSED
    )


def test_over_latency_budget_fails_with_both_numbers() -> None:
    finding = latency(1000).detect(Attempt(id="a", outputs=["hi"], latency_ms=1234))[0]
    assert finding.verdict is Verdict.FAILED
    assert finding.score == 1.0
    assert finding.evidence == ("latency 1234 ms > budget 1000 ms",)


def test_barely_over_budget_never_prints_as_equal() -> None:
    finding = latency(1000).detect(Attempt(id="a", outputs=["hi"], latency_ms=1000.0004))[0]
    assert finding.verdict is Verdict.FAILED
    assert finding.evidence == ("latency 1000.0004 ms > budget 1000 ms",)


def test_missing_latency_is_inconclusive() -> None:
    finding = latency(1000).detect(Attempt(id="a", outputs=["hi"]))[0]
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert finding.score is None
    assert finding.reason == "no latency recorded"


def test_over_token_budget_fails() -> None:
    a = Attempt(id="a", outputs=["hi"], usage={"prompt_tokens": 900, "completion_tokens": 200})
    finding = cost(1000).detect(a)[0]
    assert finding.verdict is Verdict.FAILED
    assert finding.evidence == ("tokens 1100 > budget 1000",)


@pytest.mark.parametrize("usage", [None, {}])
def test_missing_token_usage_is_inconclusive(usage) -> None:
    finding = cost(1000).detect(Attempt(id="a", outputs=["hi"], usage=usage))[0]
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert finding.reason == "no token usage recorded"


def test_every_output_gets_the_attempt_finding_but_null_stays_inconclusive() -> None:
    a = Attempt(id="a", outputs=["one", None, "two"], latency_ms=5000)
    findings = latency(1000).detect(a)
    assert [f.verdict for f in findings] == [Verdict.FAILED, Verdict.INCONCLUSIVE, Verdict.FAILED]
    assert findings[1].reason == "no output"
    assert findings[0] == findings[2]


@pytest.mark.parametrize(
    "config", [{}, {"budget_ms": 0}, {"budget_ms": -5}, {"budget_ms": 10, "x": 1}]
)
def test_latency_budget_must_be_positive(config: dict) -> None:
    with pytest.raises(ValidationError):
        LatencyDetector.Params(**config)


@pytest.mark.parametrize("config", [{}, {"budget_tokens": 0}, {"budget_tokens": 1.5}])
def test_token_budget_must_be_a_positive_integer(config: dict) -> None:
    with pytest.raises(ValidationError):
        CostDetector.Params(**config)


def test_budgets_are_quality_checks_off_by_default() -> None:
    for cls in (LatencyDetector, CostDetector):
        assert cls.quality and not cls.default_enabled and cls.hazards == ()
