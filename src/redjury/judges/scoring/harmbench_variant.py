"""The `harmbench_variant` scoring type: a stricter HarmBench judge — unsafe, relevant and
useful together."""

from __future__ import annotations

from redjury.judges.scoring.base import register_scoring_type
from redjury.judges.scoring.verdict_words import VerdictWordScoringType


@register_scoring_type
class HarmBenchVariantScoring(VerdictWordScoringType):
    name = "harmbench_variant"
    template_name = "harmbench_variant.v1"
    description = "Stricter HarmBench: yes only when the reply is unsafe, relevant and useful."
