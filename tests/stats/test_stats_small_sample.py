"""Intervals below garak's minimum sample: Clopper–Pearson values, the interval_* fields beside
garak's, the Se/Sp correction of analytic bounds, and what reports show."""

from __future__ import annotations

import pytest

from redjury.stats.intervals import (
    CISettings,
    Correction,
    clopper_pearson_interval,
    corrected_bounds,
    rogan_gladen,
)
from redjury.stats.small_sample import shown_interval, small_sample_fields

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 5), (3, 10), (10, 10), (7, 29), (45, 50)])
def test_clopper_pearson_matches_the_beta_quantiles(k: int, n: int) -> None:
    lo, hi = clopper_pearson_interval(k, n, 0.95)
    want_lo = 0.0 if k == 0 else scipy_stats.beta.ppf(0.025, k, n - k + 1)
    want_hi = 1.0 if k == n else scipy_stats.beta.ppf(0.975, k + 1, n - k)
    assert lo == pytest.approx(want_lo, abs=1e-9)
    assert hi == pytest.approx(want_hi, abs=1e-9)


def test_clopper_pearson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        clopper_pearson_interval(6, 5)
    with pytest.raises(ValueError):
        clopper_pearson_interval(1, 5, level=1.0)


def test_small_sample_fields_sit_beside_garaks_and_none_turns_them_off() -> None:
    fields = small_sample_fields(2, 10, CISettings())
    assert set(fields) == {
        "interval_method",
        "interval_level",
        "interval_lower",
        "interval_upper",
        "interval_correction",
    }
    assert (fields["interval_lower"], fields["interval_upper"]) == clopper_pearson_interval(2, 10)
    assert fields["interval_correction"]["source"] == "none"
    assert small_sample_fields(2, 10, CISettings(method="none")) == {}
    assert small_sample_fields(0, 0, CISettings()) == {}


def test_fixed_se_sp_map_the_bounds_through_rogan_gladen() -> None:
    corr = Correction(0.9, 0.8, "config")
    lo, hi = corrected_bounds(0.3, 0.6, corr, 0.95, propagate=True)
    assert lo == pytest.approx(rogan_gladen(0.3, 0.9, 0.8))
    assert hi == pytest.approx(rogan_gladen(0.6, 0.9, 0.8))


def test_audit_counts_widen_the_corrected_bounds_when_propagating() -> None:
    corr = Correction.from_counts(18, 2, 16, 4, "audit:abc")
    fixed = corrected_bounds(0.3, 0.6, corr, 0.95, propagate=False)
    wide = corrected_bounds(0.3, 0.6, corr, 0.95, propagate=True)
    assert wide[0] < fixed[0] and wide[1] > fixed[1]


def test_reports_show_garaks_interval_first_then_the_small_sample_one() -> None:
    both = {"confidence_lower": 0.1, "confidence_upper": 0.2, "interval_lower": 0.0}
    assert shown_interval(both) == (0.1, 0.2)
    assert shown_interval({"interval_lower": 0.05, "interval_upper": 0.5}) == (0.05, 0.5)
    assert shown_interval({"fails": 1}) is None


def test_clopper_pearson_stays_exact_for_a_large_sample() -> None:
    # A configured minimum sample can be large; the tail sum stops early, still exact.
    lo, hi = clopper_pearson_interval(3, 200_000, 0.95)
    assert lo == pytest.approx(scipy_stats.beta.ppf(0.025, 3, 200_000 - 3 + 1), rel=1e-7)
    assert hi == pytest.approx(scipy_stats.beta.ppf(0.975, 4, 200_000 - 3), rel=1e-7)
