"""Scoring types of the agentic quality detectors (correctness, faithfulness, summarization,
toxicity). Not registered as panel types: their "yes" is not an attack's success."""

from __future__ import annotations

import hashlib
from importlib.resources import files
from pathlib import Path
from typing import ClassVar

from redjury.attempts import Attempt
from redjury.judges.config_checks import read_named_file
from redjury.judges.scoring.base import ScaleScoringType
from redjury.judges.scoring.verdict_words import VerdictWordScoringType, require_fields

# What the template shows where the attempt recorded no question.
NOT_RECORDED = "(not recorded)"


def quality_values(attempt: Attempt, output: str, requires: tuple[str, ...]) -> dict[str, str]:
    """Template fields for a quality judge: unlike a harm judge it needs no goal (a summary or a
    toxicity check has none), only the fields it `requires`."""
    require_fields(attempt, requires)
    question = attempt.prompt or attempt.goal or NOT_RECORDED
    return {
        "goal": attempt.goal or question,
        "output": output,
        "prompt": question,
        "goal_context": attempt.goal_context or "",
        "context": "\n\n".join(attempt.context or ()),
        "expected": attempt.expected or "",
        "source": attempt.source or "",
    }


class CorrectnessScoring(ScaleScoringType):
    name = "correctness"
    template_name = "correctness.v1"
    description = "0–10: how correct the reply is against the reference answer."
    requires: ClassVar[tuple[str, ...]] = ("expected",)

    def values(self, attempt: Attempt, output: str) -> dict[str, str]:
        return quality_values(attempt, output, self.requires)


class FaithfulnessScoring(VerdictWordScoringType):
    name = "faithfulness"
    template_name = "faithfulness.v1"
    description = "Is every factual claim of the reply supported by the retrieved context."
    requires = ("context",)
    harm_judge = False

    def values(self, attempt: Attempt, output: str) -> dict[str, str]:
        return quality_values(attempt, output, self.requires)


class ToxicityScoring(VerdictWordScoringType):
    name = "toxicity"
    template_name = "toxicity.v1"
    description = "Is the reply toxic or hateful."

    def values(self, attempt: Attempt, output: str) -> dict[str, str]:
        return quality_values(attempt, output, self.requires)


class Rubric:
    """A versioned rubric file: `NAME.vN` from resources/rubrics, or a path to a .txt file."""

    def __init__(self, name: str) -> None:
        if name.endswith(".txt") or "/" in name:
            path = Path(name)
            self.version = path.stem
            self.text = read_named_file(path, "rubric")
        else:
            self.version = name
            res = files("redjury") / "resources" / "rubrics" / f"{name}.txt"
            self.text = res.read_text(encoding="utf-8")
        self.sha256 = hashlib.sha256(self.text.encode()).hexdigest()


class SummarizationScoring(ScaleScoringType):
    """Grades a summary against its source; the rubric text is appended to the instruction."""

    name = "summarization"
    template_name = "summarization.v1"
    description = "0–10 grade of a summary against its source, under a versioned rubric."
    requires: ClassVar[tuple[str, ...]] = ("source",)

    def __init__(
        self,
        system_prompt: str | None = None,
        template_path: str | None = None,
        rubric: str = "summarization.v1",
    ) -> None:
        super().__init__(system_prompt, template_path)
        self.rubric = Rubric(rubric)
        self._system = self._system.rstrip() + "\n\n[RUBRIC]\n" + self.rubric.text.strip()

    @property
    def version(self) -> str:
        # The rubric decides the grade as much as the template: both go into the fingerprint.
        return f"{self.template.name}+{self.rubric.version}"

    def values(self, attempt: Attempt, output: str) -> dict[str, str]:
        return quality_values(attempt, output, self.requires)
