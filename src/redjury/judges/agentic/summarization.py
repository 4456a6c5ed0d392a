"""The `summarization` detector: a judge grades the reply as a summary of the attempt's
`source` under a versioned rubric file; PASSED iff the grade reaches `passing_threshold`."""

from __future__ import annotations

from pydantic import Field, field_validator

from redjury.attempts import Attempt
from redjury.detectors.base import DetectorParams, Finding
from redjury.detectors.registry import register_detector
from redjury.judges.agentic.base import QualityJudgeDetector, QualityJudgeParams
from redjury.judges.agentic.judge import JudgeResult
from redjury.judges.scoring import ScoringType
from redjury.judges.scoring.quality import Rubric, SummarizationScoring


class SummarizationParams(QualityJudgeParams):
    passing_threshold: float = Field(
        7.0, ge=0.0, le=10.0, description="PASSED iff the 0–10 grade reaches it (≥)."
    )
    rubric: str = Field(
        "summarization.v1",
        description="Rubric `NAME.vN` from resources/rubrics, or the path of a rubric .txt file.",
    )

    @field_validator("rubric")
    @classmethod
    def _rubric_exists(cls, value: str) -> str:
        try:
            Rubric(value)
        except OSError as exc:
            raise ValueError(f"no rubric {value!r}: {exc}") from None
        return value


@register_detector
class SummarizationDetector(QualityJudgeDetector):
    name = "summarization"
    description = "Does the summary preserve its source (graded under a versioned rubric)."
    Params = SummarizationParams
    params: SummarizationParams

    def __init__(self, params: DetectorParams | None = None) -> None:
        super().__init__(params)
        scoring = self.judge.scoring
        assert isinstance(scoring, SummarizationScoring)
        self.rubric = scoring.rubric

    def scoring_type(self) -> ScoringType:
        return SummarizationScoring(rubric=self.params.rubric)

    def missing(self, attempt: Attempt) -> str | None:
        return None if attempt.source and attempt.source.strip() else "no source text"

    def finding(self, attempt: Attempt, result: JudgeResult) -> Finding:
        assert result.score is not None
        threshold = self.params.passing_threshold
        details = self.details(
            result,
            passing_threshold=threshold,
            rubric=self.rubric.version,
            rubric_sha256=self.rubric.sha256,
        )
        summary = f"grade {result.score:g} vs threshold {threshold:g} ({self.rubric.version})"
        if result.score >= threshold:
            return self.good(summary, **details)
        return self.bad(summary, **details)
