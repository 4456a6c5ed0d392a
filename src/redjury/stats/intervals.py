"""Confidence intervals of the attack-success rate: Wilson, Clopper–Pearson, the Rogan–Gladen-
corrected bootstrap, the Se/Sp correction of an analytic interval, and the eval-row fields
built from them."""

from __future__ import annotations

import logging
import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any, overload

import numpy as np

# np.quantile imports numpy.ma on its first call (~10 ms of a run's finish): imported with
# this module instead, which a run with workers imports in a thread while they score.
import numpy.ma  # noqa: F401
import numpy.typing as npt

from redjury.stats.settings import CISettings, Correction

logger = logging.getLogger(__name__)

#: Below this |Se + Sp - 1| the Rogan–Gladen denominator amplifies noise without bound, so the
#: raw rate is kept (garak uses the same guard).
RG_MIN_DENOMINATOR = 0.01

#: An interval narrower than this many percentage points carries no information worth printing.
CI_DISPLAY_MIN_WIDTH_PP = 0.001

FloatArray = npt.NDArray[np.float64]
Seed = np.random.Generator | int | None


def _z_two_sided(level: float) -> float:
    """Standard-normal quantile z_{(1+level)/2}."""
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")


@overload
def wilson_interval(fails: int, n: int, level: float = 0.95) -> tuple[float, float]: ...
@overload
def wilson_interval(
    fails: npt.ArrayLike, n: npt.ArrayLike, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def wilson_interval(fails: Any, n: Any, level: float = 0.95) -> tuple[Any, Any]:
    """Wilson score interval of the raw rate p = fails / n, as fractions.

    With z = Φ⁻¹((1 + level) / 2):
        centre = (p + z²/2n) / (1 + z²/n)
        margin = z · √(p(1 − p)/n + z²/4n²) / (1 + z²/n)
        [lo, hi] = [centre − margin, centre + margin] ∩ [0, 1]
    Unlike the bootstrap it stays honest at 0 and n failures (10/10 → [0.722, 1]).
    Scalars in, floats out; arrays broadcast.
    """
    _check_level(level)
    f = np.asarray(fails, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(m <= 0) or np.any(f < 0) or np.any(f > m):
        raise ValueError("wilson_interval needs n > 0 and 0 <= fails <= n")
    z = _z_two_sided(level)
    z2 = z * z
    p = f / m
    denom = 1.0 + z2 / m
    centre = (p + z2 / (2.0 * m)) / denom
    margin = z * np.sqrt(p * (1.0 - p) / m + z2 / (4.0 * m * m)) / denom
    # The endpoints at p = 0 and p = 1 are exactly 0 and 1; pin them so rounding
    # cannot leave a 1e-17 "lower bound" on a clean run.
    lo = np.where(f == 0, 0.0, np.clip(centre - margin, 0.0, 1.0))
    hi = np.where(f == m, 1.0, np.clip(centre + margin, 0.0, 1.0))
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


@overload
def rogan_gladen(p: float, se: float, sp: float) -> float: ...
@overload
def rogan_gladen(p: npt.ArrayLike, se: npt.ArrayLike, sp: npt.ArrayLike) -> FloatArray: ...
def rogan_gladen(p: Any, se: Any, sp: Any) -> Any:
    """Rogan–Gladen estimate of the true rate from an observed rate p.

        p_true = clip((p + Sp − 1) / (Se + Sp − 1), 0, 1)

    Elementwise; where |Se + Sp − 1| < 0.01 the detector is no better than chance, the
    correction is undefined, and p is returned unchanged.
    """
    p_arr = np.asarray(p, dtype=np.float64)
    se_arr = np.asarray(se, dtype=np.float64)
    sp_arr = np.asarray(sp, dtype=np.float64)
    denom = se_arr + sp_arr - 1.0
    usable = np.abs(denom) >= RG_MIN_DENOMINATOR
    safe = np.where(usable, denom, 1.0)
    corrected = np.clip((p_arr + sp_arr - 1.0) / safe, 0.0, 1.0)
    out = np.where(usable, corrected, p_arr)
    if out.ndim == 0:
        return float(out)
    return out


def _as_rng(rng: Seed) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def bootstrap_asr_interval(
    fails: int,
    n: int,
    *,
    se: float | None = None,
    sp: float | None = None,
    se_counts: tuple[int, int] | None = None,
    sp_counts: tuple[int, int] | None = None,
    iterations: int = 10_000,
    level: float = 0.95,
    rng: Seed = None,
) -> tuple[float, float]:
    """Percentile bootstrap of the attack-success rate, Rogan–Gladen-corrected per resample.

    Resampling n binary outcomes with replacement from fails/n gives a failure count
    K_b ~ Binomial(n, p̂), p̂ = fails / n, so K_b is drawn directly: O(B) rather than O(B·n).
    For b = 1..B:
        p_b  = K_b / n
        Se_b = Beta(TP + 1, FN + 1) draw if se_counts = (TP, FN) is given, else se (default 1)
        Sp_b = Beta(TN + 1, FP + 1) draw if sp_counts = (TN, FP) is given, else sp (default 1)
        θ_b  = rogan_gladen(p_b, Se_b, Sp_b)
    The interval is the (α/2, 1 − α/2) quantiles of θ_b, α = 1 − level (linear interpolation,
    as numpy.percentile). Drawing Se and Sp from their posteriors widens the interval by the
    uncertainty of a detector measured on few labelled examples.
    """
    if n <= 0 or not 0 <= fails <= n:
        raise ValueError(f"bootstrap needs n > 0 and 0 <= fails <= n, got fails={fails}, n={n}")
    if iterations <= 0:
        raise ValueError("bootstrap_num_iterations must be > 0")
    _check_level(level)
    gen = _as_rng(rng)
    p_b = gen.binomial(n, fails / n, size=iterations) / n
    se_b: float | FloatArray = 1.0 if se is None else se
    sp_b: float | FloatArray = 1.0 if sp is None else sp
    if se_counts is not None:
        tp, fn = se_counts
        se_b = gen.beta(tp + 1, fn + 1, size=iterations)
    if sp_counts is not None:
        tn, fp = sp_counts
        sp_b = gen.beta(tn + 1, fp + 1, size=iterations)
    theta = rogan_gladen(p_b, se_b, sp_b)
    alpha = 1.0 - level
    lo, hi = np.quantile(theta, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def should_display_interval(lo: float, hi: float) -> bool:
    """True when the interval [lo, hi] (fractions) is wider than 0.001 percentage points."""
    return (hi - lo) * 100.0 > CI_DISPLAY_MIN_WIDTH_PP


_BISECTIONS = 60


def _binomial_tail_at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), from log-space terms.

    The side of k away from the mode is summed outwards (its terms only shrink), stopping
    once a term no longer changes the sum, so a large n costs O(√n) terms, not O(n)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q, log_n = math.log(p), math.log1p(-p), math.lgamma(n + 1)

    def term(i: int) -> float:
        return math.exp(
            log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        )

    upper_side = k > n * p  # the terms from k upwards fall: sum them
    indices = range(k, n + 1) if upper_side else range(k - 1, -1, -1)
    total = 0.0
    for i in indices:
        value = term(i)
        total += value
        if value <= total * 1e-17:
            break
    return min(1.0, total) if upper_side else max(0.0, 1.0 - total)


def _solve_increasing(f: Any, target: float) -> float:
    """The p in [0, 1] where the increasing function f(p) reaches target (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2.0
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@lru_cache(maxsize=4096)
def clopper_pearson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson exact interval of successes / n: the rates whose one-sided binomial
    tails at the observed count are at least (1 − level) / 2; 0 and n successes give the
    ends 0 and 1 exactly. It covers the true rate with at least the nominal probability at
    every n and rate. Bisection on the exact binomial tail: O(60 · n), cached."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need n > 0 and 0 <= successes <= n, got {successes}/{n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    tail = (1.0 - level) / 2.0
    lower = 0.0
    if successes > 0:
        lower = _solve_increasing(lambda p: _binomial_tail_at_least(successes, n, p), tail)
    upper = 1.0
    if successes < n:
        # P(X <= successes) = tail  <=>  P(X >= successes + 1) = 1 - tail, which rises with p.
        upper = _solve_increasing(
            lambda p: _binomial_tail_at_least(successes + 1, n, p), 1.0 - tail
        )
    return lower, upper


def _rate_bounds(counts: tuple[int, int] | None, point: float, level: float) -> tuple[float, float]:
    """The (low, high) ends of a detector rate: its interval from counts, else the point."""
    if counts is None:
        return point, point
    hits, misses = counts
    if hits + misses == 0:
        return point, point
    return clopper_pearson_interval(hits, hits + misses, level)


def corrected_bounds(
    lower: float,
    upper: float,
    correction: Correction | None,
    level: float,
    propagate: bool,
) -> tuple[float, float]:
    """Bounds of the raw flagged rate as bounds of the true rate (Rogan–Gladen).

    The correction falls as Se grows and rises as Sp grows, so the lower bound takes the
    high end of Se and the low end of Sp, the upper bound the opposite. With `propagate`
    and audit counts those ends come from the Se and Sp intervals; otherwise Se and Sp are
    taken as exact."""
    if correction is None:
        return lower, upper
    se_counts = correction.se_counts if propagate else None
    sp_counts = correction.sp_counts if propagate else None
    se_lo, se_hi = _rate_bounds(se_counts, correction.se, level)
    sp_lo, sp_hi = _rate_bounds(sp_counts, correction.sp, level)
    lo = float(rogan_gladen(lower, se_hi, sp_lo))
    hi = float(rogan_gladen(upper, se_lo, sp_hi))
    return min(lo, hi), max(lo, hi)


_NO_CORRECTION: dict[str, Any] = {"se": None, "sp": None, "source": "none"}


def _wilson_fields(
    fails: int, n: int, settings: CISettings, correction: Correction | None
) -> dict[str, Any]:
    """Wilson's interval of the raw rate, carried through the detector's Se/Sp correction
    (with the Se/Sp intervals from audit counts when propagating, see `corrected_bounds`)."""
    raw_lo, raw_hi = wilson_interval(fails, n, settings.level)
    lo, hi = corrected_bounds(
        raw_lo, raw_hi, correction, settings.level, settings.propagate_detector_uncertainty
    )
    if correction is None:
        applied: dict[str, Any] = dict(_NO_CORRECTION)
        rate = fails / n
    else:
        applied = {"se": correction.se, "sp": correction.sp, "source": correction.source}
        rate = float(rogan_gladen(fails / n, correction.se, correction.sp))
    return {
        "confidence_method": "wilson",
        "confidence": settings.level,
        "confidence_lower": lo,
        "confidence_upper": hi,
        "confidence_correction": applied,
        "corrected_rate": rate,
    }


def confidence_fields(
    fails: int,
    n: int,
    settings: CISettings,
    correction: Correction | None = None,
    rng: Seed = None,
) -> dict[str, Any]:
    """The confidence fields of one eval row, or {} when none belong there.

    Returns {} when the method is `none` or n < min_sample_size. Otherwise:
        confidence_method     "bootstrap" or "wilson"
        confidence            the level, e.g. 0.95
        confidence_lower/upper  the interval of the attack-success rate, as fractions
        confidence_correction {"se", "sp", "source"}; source "none" (se, sp null) when the
                              interval is of the raw rate
        corrected_rate        rogan_gladen(fails / n, Se, Sp), or fails / n uncorrected
    Under `bootstrap`, 0 or n failures make every resample identical, so the Wilson interval
    of the raw rate is written instead (confidence_method "wilson"). The `wilson` method
    carries the detector's Se/Sp correction, as the bootstrap does (`corrected_bounds`,
    propagating the audit counts' uncertainty unless told not to). A zero-width interval
    that comes from the correction clipping at 0 or 1 is kept as it is.

    Never raises on bad counts: invalid input logs an error, a non-finite result logs a
    warning, and both return {} so the run goes on. Cost is O(iterations).
    """
    try:
        fails_i, n_i = int(fails), int(n)
        if fails_i != fails or n_i != n or n_i < 0 or not 0 <= fails_i <= n_i:
            raise ValueError(f"need integers 0 <= fails <= n, got fails={fails!r}, n={n!r}")
    except (TypeError, ValueError) as exc:
        logger.error("confidence interval not computed: %s", exc)
        return {}

    if settings.method == "none":
        return {}
    if n_i < settings.min_sample_size or n_i == 0:
        logger.debug(
            "confidence interval skipped: %d evaluated < bootstrap_min_sample_size %d",
            n_i,
            settings.min_sample_size,
        )
        return {}

    try:
        if settings.method == "wilson" or fails_i in (0, n_i):
            # The degenerate-bootstrap fallback keeps the raw rate's interval (as before);
            # the chosen `wilson` method carries the correction like the bootstrap does.
            applied = correction if settings.method == "wilson" else None
            fields = _wilson_fields(fails_i, n_i, settings, applied)
        else:
            fields = _bootstrap_fields(fails_i, n_i, settings, correction, rng)
    except ValueError as exc:
        logger.error("confidence interval not computed: %s", exc)
        return {}

    bounds = (fields["confidence_lower"], fields["confidence_upper"], fields["corrected_rate"])
    if not all(math.isfinite(v) for v in bounds):
        logger.warning(
            "confidence interval not computed: non-finite result for %d/%d", fails_i, n_i
        )
        return {}
    return fields


def _bootstrap_fields(
    fails: int,
    n: int,
    settings: CISettings,
    correction: Correction | None,
    rng: Seed,
) -> dict[str, Any]:
    if correction is None:
        se, sp = 1.0, 1.0
        applied: dict[str, Any] = dict(_NO_CORRECTION)
    else:
        se, sp = correction.se, correction.sp
        applied = {"se": se, "sp": sp, "source": correction.source}
    propagate = correction is not None and settings.propagate_detector_uncertainty
    lo, hi = bootstrap_asr_interval(
        fails,
        n,
        se=se,
        sp=sp,
        se_counts=correction.se_counts if propagate and correction else None,
        sp_counts=correction.sp_counts if propagate and correction else None,
        iterations=settings.iterations,
        level=settings.level,
        rng=rng,
    )
    return {
        "confidence_method": "bootstrap",
        "confidence": settings.level,
        "confidence_lower": lo,
        "confidence_upper": hi,
        "confidence_correction": applied,
        "corrected_rate": rogan_gladen(fails / n, se, sp),
    }
