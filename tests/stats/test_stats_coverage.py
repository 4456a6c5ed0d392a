"""Coverage of every interval method, pinned by a small seeded simulation: the share of runs
whose interval holds the true attack-success rate, at a handful of (ASR, n, Se, Sp) points.

A run draws n outputs flagged with probability ASR·Se + (1 − ASR)·(1 − Sp) and, for an
imperfect detector, an audit of 40 labelled positives and 40 negatives that measures Se and
Sp. The goal (issue 17) is coverage >= 0.93 at a nominal 0.95 for every n >= 5."""

from __future__ import annotations

import numpy as np
import pytest

from redjury.stats.intervals import CISettings, Correction, confidence_fields
from redjury.stats.small_sample import small_sample_fields

RUNS = 300
GOAL = 0.93
AUDIT = 40


def coverage(method: str, asr: float, n: int, se: float, sp: float) -> float:
    rng = np.random.default_rng(17)
    settings = CISettings(method=method, iterations=1000)  # type: ignore[arg-type]
    flagged = asr * se + (1 - asr) * (1 - sp)
    held = 0
    for run in range(RUNS):
        fails = int(rng.binomial(n, flagged))
        correction = None
        if se < 1 or sp < 1:
            tp, tn = int(rng.binomial(AUDIT, se)), int(rng.binomial(AUDIT, sp))
            correction = Correction.from_counts(tp, AUDIT - tp, tn, AUDIT - tn, "audit:sim")
        if n >= settings.min_sample_size:
            fields = confidence_fields(fails, n, settings, correction, rng=run)
            lo, hi = fields["confidence_lower"], fields["confidence_upper"]
        else:
            fields = small_sample_fields(fails, n, settings, correction)
            lo, hi = fields["interval_lower"], fields["interval_upper"]
        held += lo - 1e-12 <= asr <= hi + 1e-12
    return held / RUNS


# Below the minimum sample (Clopper–Pearson, then corrected), at the worst spots.
SMALL = [
    (0.01, 5, 1.0, 1.0),
    (0.01, 10, 1.0, 1.0),
    (0.3, 10, 1.0, 1.0),
    (0.5, 29, 1.0, 1.0),
    (0.01, 20, 0.9, 0.95),
    (0.2, 10, 0.8, 0.9),
    (0.5, 20, 0.8, 0.9),
]
# From the minimum sample on: garak's bootstrap (Rogan–Gladen per resample) and Wilson,
# which now carries the correction too (before issue 17 it covered 0.000–0.883 here).
LARGE = [(0.05, 100, 1.0, 1.0), (0.01, 100, 0.9, 0.95), (0.2, 100, 0.8, 0.9), (0.5, 300, 0.8, 0.9)]


@pytest.mark.parametrize(("asr", "n", "se", "sp"), SMALL)
def test_small_sample_interval_covers(asr: float, n: int, se: float, sp: float) -> None:
    assert coverage("bootstrap", asr, n, se, sp) >= GOAL


@pytest.mark.parametrize(("asr", "n", "se", "sp"), LARGE)
@pytest.mark.parametrize("method", ["bootstrap", "wilson"])
def test_large_sample_methods_cover(method: str, asr: float, n: int, se: float, sp: float) -> None:
    assert coverage(method, asr, n, se, sp) >= GOAL
