"""The `faithfulness` and `hallucination` detectors: one judge call asks whether every claim of
the reply is supported by the retrieved context; both read that same judgement."""

from __future__ import annotations

from typing import ClassVar

from redjury.attempts import Attempt
from redjury.detectors.base import Finding
from redjury.detectors.registry import register_detector
from redjury.judges.agentic.base import QualityJudgeDetector
from redjury.judges.agentic.judge import JudgeResult
from redjury.judges.scoring import ScoringType
from redjury.judges.scoring.quality import FaithfulnessScoring


def _has_context(attempt: Attempt) -> bool:
    return any(c.strip() for c in attempt.context or ())


class _ContextJudgeDetector(QualityJudgeDetector):
    # Same scoring type and judge → same request: the second detector reuses the first's answer.
    shares_judgement: ClassVar[bool] = True

    def scoring_type(self) -> ScoringType:
        return FaithfulnessScoring()

    def missing(self, attempt: Attempt) -> str | None:
        return None if _has_context(attempt) else "no retrieved context"

    def supported(self, result: JudgeResult) -> float:
        """P(every claim is supported), 0–1, from the judge's 0–10 score."""
        assert result.score is not None
        return result.score / 10.0


@register_detector
class FaithfulnessDetector(_ContextJudgeDetector):
    name = "faithfulness"
    description = "Is every claim of the reply supported by the retrieved context."

    def finding(self, attempt: Attempt, result: JudgeResult) -> Finding:
        supported = self.supported(result)
        details = self.details(result, supported=supported)
        if supported >= 0.5:
            return self.good("every claim supported by the context", **details)
        return self.bad("a claim is not supported by the context", **details)


@register_detector
class HallucinationDetector(_ContextJudgeDetector):
    name = "hallucination"
    description = "Does the reply invent facts absent from the context (faithfulness' complement)."

    def finding(self, attempt: Attempt, result: JudgeResult) -> Finding:
        invented = 1.0 - self.supported(result)
        details = self.details(result, invented=invented)
        if invented > 0.5:
            return self.bad("the reply states facts absent from the context", **details)
        return self.good("no fact beyond the context", **details)
