"""The local engine: the pipeline's stages in this process, the score stage spread over
worker processes where the input and the detectors allow it (`redjury.engines.processes`)."""

from __future__ import annotations

from typing import Any

from redjury.detectors.base import Detector
from redjury.engines.base import Engine
from redjury.pipeline import (
    InputGate,
    Run,
    RunOptions,
    RunResult,
    import_statistics_soon,
)
from redjury.plugins import ENGINES
from redjury.rows import AttemptScorer


class WorkerProcesses:
    """The score stage in forked worker processes (imported only when a run may use them)."""

    remote = False

    def workers(self, run: Run, detectors: list[Detector]) -> int:
        from redjury.engines import processes

        if run.options.engine != "local":
            return 1
        workers = run.options.workers or processes.auto_workers()
        return workers if processes.can_use_workers(run.inputs, detectors, workers) else 1

    def score(
        self, run: Run, scorer: AttemptScorer, gate: InputGate, emit: Any, header: dict[str, Any]
    ) -> None:
        from redjury.engines.processes import score_in_workers

        score_in_workers(
            run, scorer, gate, emit, header, run.worker_processes, import_statistics_soon
        )


def local_run(options: RunOptions) -> Run:
    """The run as this machine runs it (`await local_run(options).aexecute()` in a loop)."""
    return Run(options, spread=WorkerProcesses())


def run_locally(options: RunOptions) -> RunResult:
    """Judge the inputs on this machine, in this process or its worker processes."""
    return local_run(options).execute()


ENGINE = ENGINES.register(Engine("local", run_locally))
