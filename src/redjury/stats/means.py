"""The mean of per-reply graded scores (e.g. StrongREJECT's) with a percentile bootstrap
interval, as the eval row reports it beside the thresholded vote, kept as a histogram of
distinct scores so memory does not grow with the replies."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

# numpy is imported where it is used: the tallies hold `GradedScores` from the start of a run,
# and a run forks its workers before numpy is loaded (see `redjury.stats`).

# Resampled values drawn per block: bounds memory for long runs (8 bytes each).
_BLOCK_VALUES = 4_000_000
# Up to this many replies the interval resamples reply by reply, as it always did (same
# figures for the same seed); above it, it resamples the histogram (a multinomial draw per
# resample), whose time grows with the distinct scores, not the replies.
PER_REPLY_MAX = 10_000
# Distinct scores kept per judge and score. StrongREJECT gives at most 9 (its rubric: refused
# 0-1, two items 1-5) or, with the upstream template, the few hundred that three single digits
# make; scores beyond this many distinct values (only from a foreign or edited report) count
# in the mean and n exactly, and the row says the interval is withheld.
MAX_DISTINCT = 65_536
# Finite floats are whole multiples of 2**-1074: sums in that unit are exact integers.
_UNIT_BITS = 1074


def _units(value: float) -> int:
    """A finite float as an exact integer count of 2**-1074."""
    num, den = value.as_integer_ratio()
    return num << (_UNIT_BITS - den.bit_length() + 1)


@dataclass(slots=True)
class GradedScores:
    """One judge's graded scores over a tally's replies: distinct score -> how many replies.

    Memory is bounded by `MAX_DISTINCT` whatever the replies; `merge` is order independent
    (the rows depend on the counts, never on the order they came in).
    """

    counts: dict[float, int] = field(default_factory=dict)
    # Scores kept outside the histogram (beyond MAX_DISTINCT distinct, or not finite): how
    # many, their exact sum in units of 2**-1074, and the sum of the non-finite ones.
    over: int = 0
    over_units: int = 0
    nonfinite: float = 0.0

    @classmethod
    def of(cls, values: Iterable[float]) -> GradedScores:
        scores = cls()
        for value in values:
            scores.add(float(value))
        return scores

    @property
    def n(self) -> int:
        return sum(self.counts.values()) + self.over

    def add(self, value: float, count: int = 1) -> None:
        """Count `count` replies that scored `value`."""
        value += 0.0  # -0.0 is 0.0
        counts = self.counts
        if value in counts:
            counts[value] += count
        elif len(counts) < MAX_DISTINCT and math.isfinite(value):
            counts[value] = count
        else:
            self.over += count
            if math.isfinite(value):
                self.over_units += count * _units(value)
            else:
                self.nonfinite += value

    def merge(self, other: GradedScores) -> None:
        """Add another tally's scores: as if they had been counted here."""
        for value, count in other.counts.items():
            self.add(value, count)
        self.over += other.over
        self.over_units += other.over_units
        self.nonfinite += other.nonfinite

    def exact_mean(self) -> float:
        """The mean from the exact sum (the same in any order), to the nearest float, then to
        6 decimals: what the per-reply mean gave wherever its float sum was exact (always
        for StrongREJECT, whose scores are multiples of 1/8)."""
        if self.nonfinite != 0.0:  # NaN or infinite: as a float sum would be
            return self.nonfinite
        units = sum(count * _units(value) for value, count in self.counts.items())
        return round(float(Fraction(units + self.over_units, self.n << _UNIT_BITS)), 6)

    def summary(
        self, *, level: float = 0.95, iterations: int = 2000, seed: int = 0
    ) -> dict[str, Any]:
        """{"mean", "ci": [lo, hi], "n"}; the interval is None for fewer than two replies,
        and withheld (None, with `ci_withheld` saying why) when scores were kept outside the
        histogram."""
        import numpy as np

        n = self.n
        if n == 0:
            return {"mean": None, "ci": None, "n": 0}
        if self.over:
            out: dict[str, Any] = {"mean": self.exact_mean(), "ci": None, "n": n}
            if n > 1:
                out["ci_withheld"] = (
                    "a score is not a finite number"
                    if self.nonfinite != 0.0
                    else f"more than {MAX_DISTINCT} distinct scores"
                )
            return out
        ordered = sorted(self.counts)
        values = np.array(ordered, dtype=np.float64)
        counts = np.array([self.counts[v] for v in ordered], dtype=np.int64)
        if n <= PER_REPLY_MAX:
            return _per_reply(np.repeat(values, counts), level, iterations, seed)
        draw = _histogram_draws(values, counts, n, np.random.default_rng(seed))
        ci = _percentiles(draw, max(1, _BLOCK_VALUES // values.size), iterations, level)
        return {"mean": self.exact_mean(), "ci": ci, "n": n}


def _per_reply(x: FloatArray, level: float, iterations: int, seed: int) -> dict[str, Any]:
    """The bootstrap of the sorted replies, each resample n replies drawn with replacement."""
    import numpy as np

    n = int(x.size)
    mean = round(float(x.mean()), 6)
    if n < 2:
        return {"mean": mean, "ci": None, "n": n}
    rng = np.random.default_rng(seed)

    def draw(b: int) -> FloatArray:
        means: FloatArray = x[rng.integers(0, n, size=(b, n))].mean(axis=1)
        return means

    ci = _percentiles(draw, max(1, _BLOCK_VALUES // n), iterations, level)
    return {"mean": mean, "ci": ci, "n": n}


def _histogram_draws(
    values: FloatArray, counts: npt.NDArray[np.int64], n: int, rng: np.random.Generator
) -> Callable[[int], FloatArray]:
    """Resample means from the histogram: how many of n replies drawn with replacement land
    on each distinct score is multinomial, so each mean has the per-reply bootstrap's law."""
    p = counts / n

    def draw(b: int) -> FloatArray:
        means: FloatArray = (rng.multinomial(n, p, size=b) * values).sum(axis=1) / n
        return means

    return draw


def _percentiles(
    draw: Callable[[int], FloatArray], per_block: int, iterations: int, level: float
) -> list[float]:
    """The percentile interval of `iterations` resample means, drawn `per_block` at a time."""
    import numpy as np

    means: list[FloatArray] = []
    left = iterations
    while left > 0:
        b = min(left, per_block)
        means.append(draw(b))
        left -= b
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.concatenate(means), [alpha, 1.0 - alpha])
    return [round(float(lo), 6), round(float(hi), 6)]


def bootstrap_mean(
    values: Iterable[float], *, level: float = 0.95, iterations: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """{"mean", "ci": [lo, hi], "n"} of a list of scores (`GradedScores.summary`)."""
    return GradedScores.of(values).summary(level=level, iterations=iterations, seed=seed)
