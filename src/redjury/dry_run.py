"""What a run would do, checked without judging or writing anything: the inputs read
through, the detectors and judges it would build, and at most how many judge calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redjury.attempts import Attempt
from redjury.config import RunConfig, resolve_detectors
from redjury.detectors.base import Family
from redjury.inputs import InputSet, check_inputs, path_problem
from redjury.records import InputError, LineError


@dataclass
class RunPlan:
    attempts: int = 0
    outputs: int = 0  # outputs that are not null: the ones detectors and judges see
    bad_lines: list[LineError] = field(default_factory=list)
    total_bad: int = 0
    detectors: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)  # panel judges, `name at URL`
    model_backed: list[str] = field(default_factory=list)  # detectors asking a model

    @property
    def judge_calls(self) -> int:
        """At most this many judge calls (answers in the judge cache are not asked again)."""
        return self.outputs * (len(self.judges) + len(self.model_backed))


def plan_run(paths: list[Path], config: RunConfig, *, skip_bad_lines: bool = False) -> RunPlan:
    """Read every input and build every detector; raise what the run would raise."""
    for path in paths:
        if problem := path_problem(path):
            raise ValueError(f"{path}: {problem}")
    plan = RunPlan()
    _count_inputs(InputSet(list(paths)), plan)
    if plan.bad_lines and not skip_bad_lines:
        raise InputError(plan.bad_lines, plan.total_bad)
    if not plan.attempts:
        raise InputError([], 0, InputSet(list(paths)).empty_reason())
    for cls, _params in resolve_detectors(config):
        plan.detectors.append(cls.name)
        if cls.name == "guardrail" or cls.family is Family.AGENTIC:
            plan.model_backed.append(cls.name)
    for judge in config.evaluation.judges:
        plan.judges.append(f"{judge.name} at {judge.connection.base_url or 'the default URL'}")
    if plan.judges:
        plan.detectors.append("judge_panel")
    return plan


def _count_inputs(inputs: InputSet, plan: RunPlan) -> None:
    def count(attempt: Attempt) -> None:
        plan.outputs += sum(1 for o in attempt.outputs if o is not None)

    plan.attempts, plan.bad_lines, plan.total_bad = check_inputs(inputs, count)
