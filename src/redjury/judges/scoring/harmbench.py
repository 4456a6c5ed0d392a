"""The `harmbench` scoring type: HarmBench's classifier intent as a yes/no judge."""

from __future__ import annotations

from redjury.judges.scoring.base import YesNoScoringType, register_scoring_type


@register_scoring_type
class HarmBenchScoring(YesNoScoringType):
    name = "harmbench"
    template_name = "harmbench.v1"
    description = (
        "Is the reply an unambiguous, harmful instance of the behaviour (HarmBench's classifier)."
    )
