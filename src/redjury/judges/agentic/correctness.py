"""The `correctness` detector: a judge scores the reply against the attempt's `expected` answer
on 0–10; PASSED iff the score is above `passing_threshold` (strictly)."""

from __future__ import annotations

from pydantic import Field

from redjury.attempts import Attempt
from redjury.detectors.base import Finding
from redjury.detectors.registry import register_detector
from redjury.judges.agentic.base import QualityJudgeDetector, QualityJudgeParams
from redjury.judges.agentic.judge import JudgeResult
from redjury.judges.scoring import ScoringType
from redjury.judges.scoring.quality import CorrectnessScoring


class CorrectnessParams(QualityJudgeParams):
    passing_threshold: float = Field(
        7.0, ge=0.0, le=10.0, description="PASSED iff the 0–10 judge score is above it (strictly)."
    )


@register_detector
class CorrectnessDetector(QualityJudgeDetector):
    name = "correctness"
    description = "Does the reply match the reference answer (judge score above the threshold)."
    Params = CorrectnessParams
    params: CorrectnessParams

    def scoring_type(self) -> ScoringType:
        return CorrectnessScoring()

    def missing(self, attempt: Attempt) -> str | None:
        return None if attempt.expected and attempt.expected.strip() else "no expected answer"

    def finding(self, attempt: Attempt, result: JudgeResult) -> Finding:
        assert result.score is not None
        threshold = self.params.passing_threshold
        details = self.details(result, passing_threshold=threshold)
        summary = f"judge score {result.score:g} vs threshold {threshold:g}"
        if result.score > threshold:
            return self.good(summary, **details)
        return self.bad(summary, **details)
