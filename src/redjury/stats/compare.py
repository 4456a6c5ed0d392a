"""The difference of two attack-success rates (NEW − BASE): attempt-clustered rates, Newcombe's
score intervals (unpaired and paired), their p-values, Holm / Benjamini–Hochberg and verdicts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from redjury.stats.intervals import RG_MIN_DENOMINATOR, clopper_pearson_interval
from redjury.stats.settings import Correction

FloatArray = npt.NDArray[np.float64]
Adjustment = Literal["holm", "bh"]
ADJUSTMENTS: tuple[str, ...] = ("holm", "bh")
# Bisection steps on z when a p-value is found by inverting the interval (z in [0, 40]).
_P_BISECTIONS = 60
_Z_MAX = 40.0


@dataclass(frozen=True)
class ClusteredRate:
    """A run's flagged rate counted by attempt: arrays over the leading axes.

    rate          Σ fails / Σ scored outputs (the single run's ASR)
    attempts      attempts with at least one scored output
    outputs       scored outputs
    sum_squares   Σ eᵢ², eᵢ = failsᵢ − rate · scoredᵢ (the attempt's residual)
    n_eff         outputs / design effect, kept within [attempts, outputs]: the number of
                  independent outputs the attempts are worth
    """

    rate: Any
    attempts: Any
    outputs: Any
    sum_squares: Any
    n_eff: Any


def clustered_rate(fails: npt.ArrayLike, scored: npt.ArrayLike) -> ClusteredRate:
    """The rate of `fails / scored` per attempt (last axis), outputs of one attempt as one cluster.

    The design effect is the cluster-robust variance n/(n−1) · Σeᵢ² / M² over the binomial
    p(1 − p)/M. With one output per attempt it is n/(n−1) and n_eff is n; where the rate is
    0 or 1 nothing measures it and each attempt counts as one output (the cautious end).
    Attempts with no scored output count nowhere."""
    y = np.asarray(fails, dtype=np.float64)
    m = np.asarray(scored, dtype=np.float64)
    outputs = m.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(outputs > 0, y.sum(axis=-1) / np.maximum(outputs, 1.0), np.nan)
    residual = residuals(y, m, rate)
    return rate_from_sums(
        y.sum(axis=-1), outputs, (m > 0).sum(axis=-1), (residual * residual).sum(axis=-1)
    )


def rate_from_sums(
    fails: npt.ArrayLike,
    outputs: npt.ArrayLike,
    attempts: npt.ArrayLike,
    sum_squares: npt.ArrayLike,
) -> ClusteredRate:
    """`clustered_rate` from its sums (per group, say): Σ fails, Σ scored, attempts scored and
    Σ eᵢ² of the attempts' residuals."""
    y, m, n, ss = _as_arrays(fails, outputs, attempts, sum_squares)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(m > 0, y / np.maximum(m, 1.0), np.nan)
        cluster_var = n / np.maximum(n - 1.0, 1.0) * ss / m**2
        binomial_var = rate * (1.0 - rate) / m
        n_eff = np.where(binomial_var > 0, m * binomial_var / cluster_var, n)
    n_eff = np.clip(np.nan_to_num(n_eff, nan=0.0, posinf=0.0), n, np.maximum(m, 1.0))
    return ClusteredRate(rate, n, m, ss, n_eff)


def residuals(fails: npt.ArrayLike, scored: npt.ArrayLike, rate: Any) -> FloatArray:
    """eᵢ = failsᵢ − rate · scoredᵢ per attempt: what pairs correlate."""
    y = np.asarray(fails, dtype=np.float64)
    m = np.asarray(scored, dtype=np.float64)
    r = np.asarray(rate, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(m > 0, y - (r[..., None] if r.ndim else r) * m, 0.0)


def paired_correlation(
    base_residuals: npt.ArrayLike,
    new_residuals: npt.ArrayLike,
    base: ClusteredRate,
    new: ClusteredRate,
) -> Any:
    """φ, the correlation of the two rates' estimates from the attempts both runs hold (the
    residuals of the same attempts, aligned on the last axis): Σ e_base·e_new over
    √(Σe_base² · Σe_new²) taken over every attempt, so unpaired attempts dilute it. For one
    output per attempt and every attempt paired it is the 2×2 table's φ = (AD − BC)/√(efgh)."""
    e1 = np.asarray(base_residuals, dtype=np.float64)
    e2 = np.asarray(new_residuals, dtype=np.float64)
    return correlation_from_sums((e1 * e2).sum(axis=-1), base.sum_squares, new.sum_squares)


def correlation_from_sums(cross: npt.ArrayLike, base_squares: Any, new_squares: Any) -> Any:
    """φ from Σ e_base·e_new over the pairs and each run's Σe²; a positive cross sum loses a
    half first, Newcombe's (AD − BC − N/2)⁺ (without it the paired interval covers 0.906 at
    n = 10, rate 0.5)."""
    c = np.asarray(cross, dtype=np.float64)
    c = np.where(c > 0, np.maximum(c - 0.5, 0.0), c)
    scale = np.sqrt(np.asarray(base_squares, dtype=np.float64) * np.asarray(new_squares))
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.where(scale > 0, c / np.where(scale > 0, scale, 1.0), 0.0)
    return np.clip(phi, -1.0, 1.0)


def _wilson(p: Any, n: Any, z: Any) -> tuple[FloatArray, FloatArray]:
    """Wilson's score interval of a rate p over n (possibly fractional) outputs, z per row."""
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    margin = z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n)) / denom
    lo = np.where(p <= 0.0, 0.0, np.clip(centre - margin, 0.0, 1.0))
    hi = np.where(p >= 1.0, 1.0, np.clip(centre + margin, 0.0, 1.0))
    return lo, hi


def _newcombe(
    p_base: Any, n_base: Any, p_new: Any, n_new: Any, phi: Any, z: Any
) -> tuple[FloatArray, FloatArray]:
    """Newcombe's score interval of p_new − p_base from the two Wilson intervals: the hybrid
    (method 10 of the 1998 unpaired paper) when φ = 0, the paired method 10 otherwise."""
    l1, u1 = _wilson(p_base, n_base, z)
    l2, u2 = _wilson(p_new, n_new, z)
    delta = p_new - p_base
    down_new, up_base = p_new - l2, u1 - p_base
    up_new, down_base = u2 - p_new, p_base - l1
    lower = delta - np.sqrt(
        np.maximum(down_new**2 - 2.0 * phi * down_new * up_base + up_base**2, 0.0)
    )
    upper = delta + np.sqrt(
        np.maximum(up_new**2 - 2.0 * phi * up_new * down_base + down_base**2, 0.0)
    )
    return np.clip(lower, -1.0, 1.0), np.clip(upper, -1.0, 1.0)


def z_of_level(level: float) -> float:
    if not 0.0 < level < 1.0 or math.isnan(level):
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def difference_interval(
    p_base: npt.ArrayLike,
    n_base: npt.ArrayLike,
    p_new: npt.ArrayLike,
    n_new: npt.ArrayLike,
    phi: npt.ArrayLike = 0.0,
    level: float = 0.95,
) -> tuple[FloatArray, FloatArray]:
    """The `level` interval of the raw rate difference p_new − p_base (arrays broadcast).

    Newcombe's hybrid score method: with (lᵢ, uᵢ) the Wilson intervals of the two rates over
    their effective sizes and δ = p_new − p_base,
        lower = δ − √((p_new − l_new)² − 2φ(p_new − l_new)(u_base − p_base) + (u_base − p_base)²)
        upper = δ + √((u_new − p_new)² − 2φ(u_new − p_new)(p_base − l_base) + (p_base − l_base)²)
    φ = 0 for independent samples; for the same attempts in both runs it is their correlation
    (`paired_correlation`), Newcombe's paired method 10."""
    p1, n1, p2, n2, ph = _as_arrays(p_base, n_base, p_new, n_new, phi)
    return _newcombe(p1, n1, p2, n2, ph, z_of_level(level))


def _as_arrays(*values: npt.ArrayLike) -> tuple[FloatArray, ...]:
    return tuple(np.asarray(v, dtype=np.float64) for v in values)


def difference_p_value(
    p_base: npt.ArrayLike,
    n_base: npt.ArrayLike,
    p_new: npt.ArrayLike,
    n_new: npt.ArrayLike,
    phi: npt.ArrayLike = 0.0,
) -> FloatArray:
    """Two-sided p-value of "no difference", by inverting `difference_interval`: the α at which
    the 1 − α interval just touches 0. So p < 1 − level exactly when the interval excludes 0.
    Bisection on z, all rows at once; p = 1 when the rates are equal."""
    p1, n1, p2, n2, ph = np.broadcast_arrays(*_as_arrays(p_base, n_base, p_new, n_new, phi))
    lo_z = np.zeros(p1.shape)
    hi_z = np.full(p1.shape, _Z_MAX)
    for _ in range(_P_BISECTIONS):
        mid = (lo_z + hi_z) / 2.0
        lower, upper = _newcombe(p1, n1, p2, n2, ph, mid)
        excludes = (lower > 0.0) | (upper < 0.0)
        lo_z = np.where(excludes, mid, lo_z)
        hi_z = np.where(excludes, hi_z, mid)
    z = (lo_z + hi_z) / 2.0
    p = np.array([math.erfc(v / math.sqrt(2.0)) for v in z.ravel()]).reshape(z.shape)
    return np.where(p2 == p1, 1.0, p)


def correction_factor_bounds(correction: Correction | None, level: float) -> tuple[float, float]:
    """(low, high) of J = Se + Sp − 1, from the Clopper–Pearson intervals of the audit counts
    (as the single run's `corrected_bounds`), or J itself without counts; (1, 1) without a
    correction."""
    if correction is None:
        return 1.0, 1.0
    se_lo, se_hi = _rate_ends(correction.se_counts, correction.se, level)
    sp_lo, sp_hi = _rate_ends(correction.sp_counts, correction.sp, level)
    return se_lo + sp_lo - 1.0, se_hi + sp_hi - 1.0


def _rate_ends(counts: tuple[int, int] | None, point: float, level: float) -> tuple[float, float]:
    if counts is None or sum(counts) == 0:
        return point, point
    return clopper_pearson_interval(counts[0], counts[0] + counts[1], level)


def corrected_difference_bounds(
    lower: npt.ArrayLike, upper: npt.ArrayLike, j_low: npt.ArrayLike, j_high: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Bounds of the raw difference as bounds of the true one. Under one detector the flagged
    rate is p = Sp' + J·θ (Sp' = 1 − Sp), so p_new − p_base = J·(θ_new − θ_base): Sp cancels
    and each bound is divided by the end of J's interval that widens it (the low end for a
    bound away from 0 on its side). J's low end at or under 0.01 leaves that side at ±1."""
    lo, hi, j_lo, j_hi = _as_arrays(lower, upper, j_low, j_high)
    usable = j_lo >= RG_MIN_DENOMINATOR
    safe_lo = np.where(usable, j_lo, 1.0)
    out_lo = np.where(lo < 0, np.where(usable, lo / safe_lo, -1.0), lo / j_hi)
    out_hi = np.where(hi > 0, np.where(usable, hi / safe_lo, 1.0), hi / j_hi)
    return np.clip(out_lo, -1.0, 1.0), np.clip(out_hi, -1.0, 1.0)


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjustment: p_(i) · (m − i + 1), kept monotone, capped at 1. NaN
    entries (rows not compared) stay NaN and do not count in m."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    known = np.flatnonzero(~np.isnan(p))
    order = known[np.argsort(p[known], kind="stable")]
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def benjamini_hochberg(p_values: npt.ArrayLike) -> FloatArray:
    """Benjamini–Hochberg's step-up adjustment (false-discovery rate): p_(i) · m / i, made
    monotone from the largest down, capped at 1; NaN entries stay NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    known = np.flatnonzero(~np.isnan(p))
    order = known[np.argsort(p[known], kind="stable")]
    m = order.size
    scaled = p[order] * m / np.arange(1, m + 1)
    out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def adjust_p_values(p_values: npt.ArrayLike, method: str = "holm") -> FloatArray:
    if method == "holm":
        return holm(p_values)
    if method == "bh":
        return benjamini_hochberg(p_values)
    raise ValueError(f"adjust must be one of {', '.join(ADJUSTMENTS)}, got {method!r}")


def verdicts(
    difference: npt.ArrayLike, p_adjusted: npt.ArrayLike, alpha: float, margin: float = 0.0
) -> list[str]:
    """`regression` (NEW's rate higher) or `improvement` where the adjusted p-value is below
    α and the difference is beyond the margin, `no_change` otherwise."""
    d, p = _as_arrays(difference, p_adjusted)
    significant = ~np.isnan(p) & (p < alpha)
    worse = significant & (d > margin)
    better = significant & (d < -margin)
    return [
        "regression" if w else "improvement" if b else "no_change"
        for w, b in zip(worse, better, strict=True)
    ]


@dataclass(frozen=True)
class Difference:
    """NEW − BASE per row: the raw difference's interval carried through J, and its p-value."""

    lower: FloatArray
    upper: FloatArray
    p_value: FloatArray


def difference_of_rates(
    base: ClusteredRate,
    new: ClusteredRate,
    phi: npt.ArrayLike = 0.0,
    j_bounds: tuple[npt.ArrayLike, npt.ArrayLike] = (1.0, 1.0),
    level: float = 0.95,
) -> Difference:
    """The interval and p-value of θ_new − θ_base from two clustered rates, φ between them and
    the bounds of J = Se + Sp − 1 of the detector both runs share."""
    lo, hi = difference_interval(base.rate, base.n_eff, new.rate, new.n_eff, phi, level)
    lo, hi = corrected_difference_bounds(lo, hi, *j_bounds)
    p = difference_p_value(base.rate, base.n_eff, new.rate, new.n_eff, phi)
    return Difference(lo, hi, p)
