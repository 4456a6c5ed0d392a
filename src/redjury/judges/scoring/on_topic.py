"""The `on_topic` scoring type: does an attacker's prompt ask for the same thing as the goal.
Not a harm judge; the panel warns when it sits beside harm judges."""

from __future__ import annotations

from redjury.attempts import Attempt
from redjury.judges.scoring.base import Message, Parsed, fill, register_scoring_type
from redjury.judges.scoring.upstream_rules import hackagent_yes_no_rule
from redjury.judges.scoring.verdict_words import VerdictWordScoringType, require_fields
from redjury.judges.upstream import HACKAGENT_ON_TOPIC


@register_scoring_type
class OnTopicScoring(VerdictWordScoringType):
    name = "on_topic"
    template_name = "on_topic.v1"
    description = "Not a harm judge: does the prompt ask for the same thing as the goal."
    # Without its own prompt the attempt's goal would stand in and the answer be a trivial yes.
    requires = ("goal", "prompt")
    harm_judge = False
    relation = "upstream-fetched"
    differs = (
        "default: redjury's wording, strict parser; upstream: HackAgent's "
        "OnTopicEvaluator.PROMPT and its yes/no reading"
    )
    upstream_source = HACKAGENT_ON_TOPIC

    def render_upstream(self, attempt: Attempt, output: str) -> list[Message]:
        require_fields(attempt, self.requires)
        text = fill(self.part("prompt"), goal=attempt.goal or "", prompt=attempt.prompt or "")
        return [{"role": "user", "content": text}]

    def parse_upstream(self, text: str) -> Parsed:
        return hackagent_yes_no_rule(text)
