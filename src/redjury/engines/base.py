"""What an engine is: a name a run's options give (`local`, `ray`) and the function that
runs the pipeline's stages with it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redjury.pipeline import RunOptions, RunResult


@dataclass(frozen=True)
class Engine:
    """One way to run: `run(options)` judges the inputs into `options.out_dir` (or into
    memory), composing the pipeline's stages."""

    name: str
    run: Callable[[RunOptions], RunResult]
