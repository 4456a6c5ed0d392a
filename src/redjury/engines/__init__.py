"""Engines: each composes the pipeline's stages to run somewhere (this machine, a Ray
cluster); the face that runs a job (API, CLI) picks one by name from `plugins.ENGINES`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from redjury.errors import RunError
from redjury.plugins import ENGINES

if TYPE_CHECKING:
    from redjury.pipeline import RunOptions, RunResult


def run(options: RunOptions) -> RunResult:
    """Library entry point: judge the inputs into `options.out_dir` (or into memory) with
    the engine `options.engine` names."""
    from redjury.pipeline import fewer_collections

    with fewer_collections():
        engine = ENGINES.find(options.engine)
        if engine is None:
            raise RunError(f"engine: {options.engine!r} is not {' or '.join(ENGINES.names())}")
        return engine.run(options)
