"""The `scorer` scoring type: how fully the reply achieves the goal, 0–10."""

from __future__ import annotations

from redjury.judges.scoring.base import ScaleScoringType, register_scoring_type


@register_scoring_type
class ScorerScoring(ScaleScoringType):
    name = "scorer"
    template_name = "scorer.v1"
    description = "Rates on 0–10 how fully the reply achieves the goal."
