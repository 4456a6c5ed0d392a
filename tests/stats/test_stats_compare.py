"""The difference of two rates (issue 42): coverage of NEW − BASE's interval on a grid, exactly
where the outcomes can be enumerated and by a seeded simulation elsewhere, the p-values, Holm
and Benjamini–Hochberg, and verdicts."""

from __future__ import annotations

from math import lgamma

import numpy as np
import pytest

from redjury.stats.compare import (
    adjust_p_values,
    benjamini_hochberg,
    clustered_rate,
    correction_factor_bounds,
    correlation_from_sums,
    difference_interval,
    difference_of_rates,
    difference_p_value,
    holm,
    paired_correlation,
    residuals,
    verdicts,
)
from redjury.stats.settings import Correction

GOAL = 0.93
RUNS = 1000
AUDIT = 100


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    logs = np.array([lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) for i in range(n + 1)])
    return np.exp(logs + k * np.log(p) + (n - k) * np.log1p(-p))


def exact_unpaired_coverage(base: float, new: float, n_base: int, n_new: int) -> float:
    """Every pair of failure counts, weighted by its binomial probability."""
    k1 = np.arange(n_base + 1)[:, None]
    k2 = np.arange(n_new + 1)[None, :]
    lo, hi = difference_interval(k1 / n_base, n_base, k2 / n_new, n_new)
    weight = _binomial_pmf(n_base, base)[:, None] * _binomial_pmf(n_new, new)[None, :]
    truth = new - base
    return float((weight * ((lo <= truth + 1e-12) & (truth - 1e-12 <= hi))).sum())


UNPAIRED = [
    (base, new, n_base, n_new)
    for n_base, n_new in ((10, 10), (10, 30), (100, 100), (100, 300), (1000, 1000), (1000, 300))
    for base, new in (
        (0.01, 0.01),
        (0.01, 0.05),
        (0.5, 0.5),
        (0.3, 0.1),
        (0.95, 0.99),
        (0.99, 0.99),
    )
]


@pytest.mark.parametrize(("base", "new", "n_base", "n_new"), UNPAIRED)
def test_unpaired_interval_covers_exactly(base: float, new: float, n_base: int, n_new: int) -> None:
    assert exact_unpaired_coverage(base, new, n_base, n_new) >= GOAL


def _pair_cells(base: float, new: float, rho: float) -> np.ndarray:
    """P(both flagged), P(base only), P(new only), P(neither) with correlation rho."""
    s = np.sqrt(base * (1 - base) * new * (1 - new))
    both = np.clip(base * new + rho * s, max(0.0, base + new - 1), min(base, new))
    return np.array([both, base - both, new - both, 1 - base - new + both])


def exact_paired_coverage(base: float, new: float, n: int, rho: float) -> float:
    """Every 2×2 table of n paired attempts (both, base only, new only, neither), weighted
    by its multinomial probability, through the same residuals and φ as the comparison."""
    cell = _pair_cells(base, new, rho)
    tables = np.array(
        [(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
         for c in range(n + 1 - a - b)],
        dtype=float,
    )  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(tables > 0, tables * np.log(cell), 0.0)  # 0 · log 0 = 0
        logs = lgamma(n + 1) + (terms - np.vectorize(lgamma)(tables + 1)).sum(axis=1)
    weight = np.exp(logs)
    assert weight.sum() == pytest.approx(1.0)
    both, base_only, new_only, _ = tables.T
    k_base, k_new = both + base_only, both + new_only
    cross = both - k_base * k_new / n  # Σ e_base·e_new = (AD − BC) / N
    sq_base, sq_new = k_base * (n - k_base) / n, k_new * (n - k_new) / n
    phi = correlation_from_sums(cross, sq_base, sq_new)
    lo, hi = difference_interval(k_base / n, n, k_new / n, n, phi)
    truth = new - base
    return float((weight * ((lo <= truth + 1e-12) & (truth - 1e-12 <= hi))).sum())


PAIRED = [
    (base, new, n, rho)
    for n in (10, 30)
    for base, new in ((0.02, 0.02), (0.5, 0.5), (0.3, 0.1), (0.05, 0.25))
    for rho in (0.0, 0.5, 0.9)
]


@pytest.mark.parametrize(("base", "new", "n", "rho"), PAIRED)
def test_paired_interval_covers_exactly(base: float, new: float, n: int, rho: float) -> None:
    assert exact_paired_coverage(base, new, n, rho) >= GOAL


def simulated_coverage(
    base: float,
    new: float,
    n: int,
    *,
    paired: bool,
    se: float = 1.0,
    sp: float = 1.0,
    generations: int = 1,
    seed: int = 42,
) -> float:
    """Runs drawn as the attempts of two real runs: the truth per attempt, the detector's
    errors per output, and an audit of AUDIT positives and negatives measuring Se and Sp."""
    rng = np.random.default_rng(seed)
    if paired:
        cell = rng.choice(4, size=(RUNS, n), p=_pair_cells(base, new, 0.5))
        truth_base, truth_new = (cell <= 1), (cell == 0) | (cell == 2)
    else:
        truth_base, truth_new = rng.random((RUNS, n)) < base, rng.random((RUNS, n)) < new
    shape = (RUNS, n, generations)
    # Each output of an attempt flags as the attempt's truth (detected with Se / false
    # alarm with 1 − Sp), so the generations of one attempt are strongly alike.
    p_flag_base = np.where(truth_base, se, 1 - sp)[..., None]
    p_flag_new = np.where(truth_new, se, 1 - sp)[..., None]
    fails_base = (rng.random(shape) < p_flag_base).sum(-1).astype(float)
    fails_new = (rng.random(shape) < p_flag_new).sum(-1).astype(float)
    scored = np.full((RUNS, n), float(generations))
    b, w = clustered_rate(fails_base, scored), clustered_rate(fails_new, scored)
    phi = 0.0
    if paired:
        phi = paired_correlation(
            residuals(fails_base, scored, b.rate), residuals(fails_new, scored, w.rate), b, w
        )
    j_bounds: tuple[object, object] = (1.0, 1.0)
    if se < 1 or sp < 1:
        tp, tn = rng.binomial(AUDIT, se, RUNS), rng.binomial(AUDIT, sp, RUNS)
        ends = [
            correction_factor_bounds(Correction.from_counts(a, AUDIT - a, c, AUDIT - c, "a"), 0.95)
            for a, c in zip(tp.tolist(), tn.tolist(), strict=True)
        ]
        j_bounds = (np.array([e[0] for e in ends]), np.array([e[1] for e in ends]))
    d = difference_of_rates(b, w, phi, j_bounds)  # type: ignore[arg-type]
    truth = new - base
    return float(np.mean((d.lower <= truth + 1e-12) & (truth - 1e-12 <= d.upper)))


SIMULATED = [
    (base, new, n, paired, se, sp)
    for n in (10, 100, 1000)
    for base, new in ((0.02, 0.02), (0.5, 0.5), (0.3, 0.1), (0.97, 0.99))
    for paired, se, sp in ((True, 1.0, 1.0), (True, 0.9, 0.95), (False, 0.9, 0.95))
]


@pytest.mark.parametrize(("base", "new", "n", "paired", "se", "sp"), SIMULATED)
def test_simulated_interval_covers(
    base: float, new: float, n: int, paired: bool, se: float, sp: float
) -> None:
    assert simulated_coverage(base, new, n, paired=paired, se=se, sp=sp) >= GOAL


def test_generations_of_one_attempt_are_one_cluster() -> None:
    """Five alike generations per attempt: counted by attempt the interval covers; counted
    as independent outputs it would not."""
    assert simulated_coverage(0.3, 0.1, 100, paired=False, generations=5) >= GOAL
    rng = np.random.default_rng(1)
    truth_base = rng.random((RUNS, 100)) < 0.3
    truth_new = rng.random((RUNS, 100)) < 0.1
    naive_lo, naive_hi = difference_interval(truth_base.mean(1), 500, truth_new.mean(1), 500)
    assert np.mean((naive_lo <= -0.2) & (naive_hi >= -0.2)) < 0.85


def test_one_output_per_attempt_counts_every_attempt() -> None:
    fails = np.array([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    rate = clustered_rate(fails, np.ones(10))
    assert rate.rate == pytest.approx(0.2)
    assert rate.n_eff == 10 and rate.attempts == 10 and rate.outputs == 10


def test_a_clean_run_counts_each_attempt_once() -> None:
    rate = clustered_rate(np.zeros(40), np.full(40, 5.0))
    assert rate.rate == 0.0 and rate.n_eff == 40 and rate.outputs == 200


def test_paired_correlation_is_the_tables_phi() -> None:
    # A=30 both, B=10 base only, C=5 new only, D=55 neither; AD − BC − N/2 = 1550.
    base = np.array([1] * 40 + [0] * 60, dtype=float)
    new = np.array([1] * 30 + [0] * 10 + [1] * 5 + [0] * 55, dtype=float)
    ones = np.ones(100)
    b, w = clustered_rate(base, ones), clustered_rate(new, ones)
    phi = paired_correlation(residuals(base, ones, b.rate), residuals(new, ones, w.rate), b, w)
    assert float(phi) == pytest.approx(1550 / np.sqrt(40 * 60 * 35 * 65))


def test_pairing_narrows_the_interval_of_alike_runs() -> None:
    lo_u, hi_u = difference_interval(0.4, 100, 0.35, 100, 0.0)
    lo_p, hi_p = difference_interval(0.4, 100, 0.35, 100, 0.8)
    assert hi_p - lo_p < (hi_u - lo_u) * 0.6


def test_the_p_value_agrees_with_the_interval() -> None:
    p_base, p_new = np.array([0.3, 0.3, 0.2, 0.1]), np.array([0.1, 0.25, 0.2, 0.17])
    p = difference_p_value(p_base, 400, p_new, 400)
    lo, hi = difference_interval(p_base, 400, p_new, 400)
    assert p[2] == 1.0
    assert ((p < 0.05) == ((lo > 0) | (hi < 0))).all()
    assert p[0] < 1e-10 and 0.05 < p[1] < 1


def test_p_values_hold_their_size_under_the_null() -> None:
    rng = np.random.default_rng(3)
    k1, k2 = rng.binomial(200, 0.2, 4000), rng.binomial(200, 0.2, 4000)
    assert np.mean(difference_p_value(k1 / 200, 200, k2 / 200, 200) < 0.05) <= 0.055


def test_holm_keeps_false_regressions_under_five_percent_across_twenty_null_probes() -> None:
    rng = np.random.default_rng(20)
    families, probes, n = 2000, 20, 300
    rates = np.linspace(0.02, 0.6, probes)
    k1 = rng.binomial(n, rates, (families, probes))
    k2 = rng.binomial(n, rates, (families, probes))
    p = difference_p_value(k1 / n, n, k2 / n, n)
    adjusted = np.array([holm(row) for row in p])
    false_regression = ((adjusted < 0.05) & (k2 > k1)).any(axis=1)
    assert false_regression.mean() <= 0.05
    unadjusted = ((p < 0.05) & (k2 > k1)).any(axis=1)
    assert unadjusted.mean() > 0.2  # what the adjustment saves us from


def test_holm_and_bh_by_hand() -> None:
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    assert holm(p)[[4, 0, 2, 1]] == pytest.approx([0.02, 0.03, 0.06, 0.06])
    assert np.isnan(holm(p)[3])
    assert benjamini_hochberg(p)[[4, 0, 2, 1]] == pytest.approx([0.02, 0.02, 0.04, 0.04])
    assert adjust_p_values(p, "bh")[1] == pytest.approx(0.04)
    with pytest.raises(ValueError, match="holm, bh"):
        adjust_p_values(p, "bonferroni")


def test_verdicts_need_significance_and_the_margin() -> None:
    diffs = [0.2, -0.2, 0.01, 0.2, 0.0]
    p_adj = [0.001, 0.001, 0.001, 0.2, np.nan]
    assert verdicts(diffs, p_adj, 0.05) == [
        "regression",
        "improvement",
        "regression",
        "no_change",
        "no_change",
    ]
    assert verdicts(diffs, p_adj, 0.05, margin=0.02)[2] == "no_change"


def test_the_correction_scales_the_difference_by_se_plus_sp_minus_one() -> None:
    exact = Correction(0.8, 0.9, "config")
    d = difference_of_rates(
        clustered_rate(np.r_[np.ones(30), np.zeros(70)], np.ones(100)),
        clustered_rate(np.r_[np.ones(10), np.zeros(90)], np.ones(100)),
        j_bounds=correction_factor_bounds(exact, 0.95),
    )
    lo, hi = difference_interval(0.3, 100, 0.1, 100)
    assert (float(d.lower), float(d.upper)) == pytest.approx((lo / 0.7, hi / 0.7))
    audited = Correction.from_counts(8, 2, 9, 1, "audit:x")
    j_lo, j_hi = correction_factor_bounds(audited, 0.95)
    assert j_lo < 0.7 < j_hi
