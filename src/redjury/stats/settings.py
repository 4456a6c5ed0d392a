"""The settings an interval is computed under, and a detector's Se/Sp correction: plain
dataclasses, kept apart from the numpy code so that reading a config, or a run with no
interval to compute yet, does not import numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

CIMethod = Literal["bootstrap", "wilson", "none"]
CI_METHODS: tuple[str, ...] = ("bootstrap", "wilson", "none")


@dataclass(frozen=True)
class CISettings:
    """The `reporting` settings that decide whether and how an interval is computed."""

    method: CIMethod = "bootstrap"
    iterations: int = 10_000
    level: float = 0.95
    min_sample_size: int = 30
    propagate_detector_uncertainty: bool = True

    def __post_init__(self) -> None:
        if self.method not in CI_METHODS:
            raise ValueError(
                f"confidence_interval_method must be one of {', '.join(CI_METHODS)}, "
                f"got {self.method!r}"
            )
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int):
            raise ValueError("bootstrap_num_iterations must be an integer")
        if self.iterations <= 0:
            raise ValueError("bootstrap_num_iterations must be > 0")
        if isinstance(self.level, bool) or not isinstance(self.level, int | float):
            raise ValueError("bootstrap_confidence_level must be a number")
        if not 0.0 < self.level < 1.0 or math.isnan(self.level):
            raise ValueError("bootstrap_confidence_level must be in (0, 1)")
        if isinstance(self.min_sample_size, bool) or not isinstance(self.min_sample_size, int):
            raise ValueError("bootstrap_min_sample_size must be an integer")
        if self.min_sample_size <= 0:
            raise ValueError("bootstrap_min_sample_size must be > 0")


@dataclass(frozen=True)
class Correction:
    """A detector's sensitivity and specificity, where they came from, and optionally the
    audit counts they were measured on.

    `source` is `audit:<fingerprint>`, `config` or `garak`. Counts, when present, let the
    bootstrap draw Se ~ Beta(TP + 1, FN + 1) and Sp ~ Beta(TN + 1, FP + 1).
    """

    se: float
    sp: float
    source: str
    tp: int | None = None
    fn: int | None = None
    tn: int | None = None
    fp: int | None = None

    def __post_init__(self) -> None:
        for name, value in (("se", self.se), ("sp", self.sp)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value!r}")
        for name, count in (("tp", self.tp), ("fn", self.fn), ("tn", self.tn), ("fp", self.fp)):
            if count is not None and count < 0:
                raise ValueError(f"{name} must be >= 0, got {count!r}")

    @classmethod
    def from_counts(cls, tp: int, fn: int, tn: int, fp: int, source: str) -> Correction:
        """Se = TP / (TP + FN), Sp = TN / (TN + FP), keeping the counts for propagation."""
        if tp + fn == 0 or tn + fp == 0:
            raise ValueError("need at least one labelled positive and one labelled negative")
        return cls(tp / (tp + fn), tn / (tn + fp), source, tp=tp, fn=fn, tn=tn, fp=fp)

    @property
    def se_counts(self) -> tuple[int, int] | None:
        return None if self.tp is None or self.fn is None else (self.tp, self.fn)

    @property
    def sp_counts(self) -> tuple[int, int] | None:
        return None if self.tn is None or self.fp is None else (self.tn, self.fp)
