"""Latency and token-cost budgets: quality checks on the attempt's recorded measurements
(R9)."""

from __future__ import annotations

from pydantic import Field

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.detectors.registry import register_detector


def _number(value: float) -> str:
    """1234.0 → "1234", 1000.0004 → "1000.0004": a failing value never prints as equal to
    its budget."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


class _AttemptBudget(Detector):
    """A check of the attempt, not of one reply: every output gets the same finding,
    except that a null output is still INCONCLUSIVE."""

    family = Family.DETERMINISTIC
    quality = True
    default_enabled = False

    def judge_attempt(self, attempt: Attempt) -> Finding:
        raise NotImplementedError

    def check(self, attempt: Attempt, output: str) -> Finding:
        return self.judge_attempt(attempt)

    def detect(self, attempt: Attempt) -> list[Finding]:
        finding = self.judge_attempt(attempt)
        return [self.inconclusive("no output") if o is None else finding for o in attempt.outputs]


class LatencyParams(DetectorParams):
    budget_ms: float = Field(
        gt=0, description="Longest acceptable reply time in milliseconds (PASSED iff ≤ budget)."
    )


@register_detector
class LatencyDetector(_AttemptBudget):
    """PASSED when the recorded `latency_ms` is within `budget_ms`, FAILED when over it,
    INCONCLUSIVE when no latency was recorded."""

    name = "latency"
    description = "The reply arrived within the latency budget (ms)."
    Params = LatencyParams
    params: LatencyParams

    def judge_attempt(self, attempt: Attempt) -> Finding:
        latency, budget = attempt.latency_ms, self.params.budget_ms
        if latency is None:
            return self.inconclusive("no latency recorded")
        if latency <= budget:
            return self.good(f"latency {_number(latency)} ms <= budget {_number(budget)} ms")
        return self.bad(f"latency {_number(latency)} ms > budget {_number(budget)} ms")


class CostParams(DetectorParams):
    budget_tokens: int = Field(
        gt=0,
        description="Most tokens (prompt + completion) an attempt may use (PASSED iff ≤ budget).",
    )


@register_detector
class CostDetector(_AttemptBudget):
    """PASSED when the recorded total token use is within `budget_tokens`, FAILED when
    over it, INCONCLUSIVE when no token use was recorded."""

    name = "cost"
    description = "The attempt stayed within the token budget."
    Params = CostParams
    params: CostParams

    def judge_attempt(self, attempt: Attempt) -> Finding:
        total = attempt.usage.total_tokens if attempt.usage is not None else None
        budget = self.params.budget_tokens
        if total is None:
            return self.inconclusive("no token usage recorded")
        if total <= budget:
            return self.good(f"tokens {total} <= budget {budget}")
        return self.bad(f"tokens {total} > budget {budget}")
