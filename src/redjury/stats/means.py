"""The mean of per-reply graded scores (e.g. StrongREJECT's, in [0, 1]) with a percentile
bootstrap interval, as the eval row reports it beside the thresholded vote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# Resampled values drawn per block: bounds memory for long runs (8 bytes each).
_BLOCK_VALUES = 4_000_000


def bootstrap_mean(
    values: Sequence[float], *, level: float = 0.95, iterations: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """{"mean", "ci": [lo, hi], "n"}; the interval is None for fewer than two values."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return {"mean": None, "ci": None, "n": 0}
    mean = round(float(x.mean()), 6)
    if n < 2:
        return {"mean": mean, "ci": None, "n": n}
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK_VALUES // n)
    means: list[np.ndarray] = []
    left = iterations
    while left > 0:
        b = min(left, per_block)
        means.append(x[rng.integers(0, n, size=(b, n))].mean(axis=1))
        left -= b
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.concatenate(means), [alpha, 1.0 - alpha])
    return {"mean": mean, "ci": [round(float(lo), 6), round(float(hi), 6)], "n": n}
