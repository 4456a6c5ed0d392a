"""The `on_topic` scoring type: does an attacker's prompt ask for the same thing as the goal.
Not a harm judge; the panel warns when it sits beside harm judges."""

from __future__ import annotations

from redjury.judges.scoring.base import register_scoring_type
from redjury.judges.scoring.verdict_words import VerdictWordScoringType


@register_scoring_type
class OnTopicScoring(VerdictWordScoringType):
    name = "on_topic"
    template_name = "on_topic.v1"
    description = "Not a harm judge: does the prompt ask for the same thing as the goal."
    # Without its own prompt the attempt's goal would stand in and the answer be a trivial yes.
    requires = ("goal", "prompt")
    harm_judge = False
