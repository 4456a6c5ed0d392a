import logging
import math
import time

import numpy as np
import pytest

from redjury.stats import intervals
from redjury.stats.intervals import (
    CISettings,
    Correction,
    bootstrap_asr_interval,
    confidence_fields,
    rogan_gladen,
    should_display_interval,
    wilson_interval,
)

CI_KEYS = {
    "confidence_method",
    "confidence",
    "confidence_lower",
    "confidence_upper",
    "confidence_correction",
    "corrected_rate",
}


# --- Wilson -------------------------------------------------------------------------------


def test_wilson_at_zero_failures_starts_at_zero():
    lo, hi = wilson_interval(0, 30, 0.95)
    z2 = 1.959963984540054**2
    assert lo == 0.0
    assert hi == pytest.approx(z2 / (30 + z2))


def test_wilson_at_all_failures_ends_at_one():
    lo, hi = wilson_interval(30, 30, 0.95)
    z2 = 1.959963984540054**2
    assert hi == 1.0
    assert lo == pytest.approx(30 / (30 + z2))


def test_wilson_ten_of_ten_matches_garak_example():
    lo, hi = wilson_interval(10, 10, 0.95)
    assert lo == pytest.approx(0.7225, abs=1e-4)
    assert hi == 1.0


def test_wilson_is_vectorised():
    lo, hi = wilson_interval(np.array([0, 5, 10]), np.array([10, 10, 10]), 0.95)
    assert lo.shape == hi.shape == (3,)
    assert lo[1] < 0.5 < hi[1]


def test_wilson_rejects_counts_outside_range():
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


# --- Rogan–Gladen -------------------------------------------------------------------------


def test_rogan_gladen_hand_value():
    assert rogan_gladen(0.5, 0.9, 0.8) == pytest.approx((0.5 + 0.8 - 1) / (0.9 + 0.8 - 1))


def test_rogan_gladen_clips_to_unit_interval():
    assert rogan_gladen(0.05, 0.9, 0.9) == 0.0
    assert rogan_gladen(0.99, 0.5, 0.99) == 1.0


def test_rogan_gladen_guard_leaves_rate_uncorrected_near_chance():
    # Se + Sp - 1 = 0.005: a chance-level detector, dividing by it would explode.
    assert rogan_gladen(0.3, 0.5, 0.505) == 0.3
    # exactly at the 0.01 boundary the correction applies
    assert rogan_gladen(0.3, 0.5, 0.51) == pytest.approx(0.0)


def test_rogan_gladen_guard_is_elementwise():
    out = rogan_gladen(np.array([0.3, 0.3]), np.array([0.5, 0.9]), np.array([0.505, 0.9]))
    assert out[0] == 0.3
    assert out[1] == pytest.approx((0.3 - 0.1) / 0.8)


# --- Bootstrap ----------------------------------------------------------------------------


@pytest.mark.parametrize("se, sp", [(None, None), (0.921295004186436, 0.3854312029025956)])
def test_binomial_bootstrap_agrees_with_naive_resampling(se, sp):
    n, fails, iters = 200, 50, 20_000
    lo, hi = bootstrap_asr_interval(fails, n, se=se, sp=sp, iterations=iters, rng=1)

    # garak's algorithm: resample the n binary outcomes with replacement
    rng = np.random.default_rng(2)
    outcomes = np.array([1.0] * fails + [0.0] * (n - fails))
    p_obs = rng.choice(outcomes, size=(iters, n), replace=True).mean(axis=1)
    naive = rogan_gladen(p_obs, se if se is not None else 1.0, sp if sp is not None else 1.0)
    naive_lo, naive_hi = np.percentile(naive, [2.5, 97.5])

    assert lo == pytest.approx(naive_lo, abs=0.01)
    assert hi == pytest.approx(naive_hi, abs=0.01)


def test_bootstrap_is_reproducible_with_a_seed():
    a = bootstrap_asr_interval(40, 100, iterations=2000, rng=7)
    b = bootstrap_asr_interval(40, 100, iterations=2000, rng=7)
    assert a == b


def test_beta_propagation_matches_hand_quantiles_when_sampling_is_negligible():
    stats = pytest.importorskip("scipy.stats")
    # 2M outputs: sampling noise ~3e-4, so the interval is the judge's Se uncertainty alone.
    # Se measured on 45 positives (40 caught), Sp = 1: theta = p / Se, Se ~ Beta(41, 6).
    lo, hi = bootstrap_asr_interval(
        600_000, 2_000_000, se=40 / 45, sp=1.0, se_counts=(40, 5), iterations=20_000, rng=3
    )
    assert lo == pytest.approx(0.3 / stats.beta.ppf(0.975, 41, 6), abs=0.003)
    assert hi == pytest.approx(0.3 / stats.beta.ppf(0.025, 41, 6), abs=0.003)

    fixed_lo, fixed_hi = bootstrap_asr_interval(
        600_000, 2_000_000, se=40 / 45, sp=1.0, iterations=20_000, rng=3
    )
    assert fixed_hi - fixed_lo < 0.002


def test_beta_propagation_widens_in_quadrature_with_sampling():
    stats = pytest.importorskip("scipy.stats")
    # 300/1000 with a judge measured on 45 positives: the two independent sources of
    # spread add in quadrature (delta method), w_total ≈ √(w_sampling² + w_judge²).
    widths = {}
    for propagate in (False, True):
        runs = [
            bootstrap_asr_interval(
                300,
                1000,
                se=40 / 45,
                sp=1.0,
                se_counts=(40, 5) if propagate else None,
                iterations=20_000,
                rng=seed,
            )
            for seed in range(4)
        ]
        widths[propagate] = float(np.mean([hi - lo for lo, hi in runs]))
    judge_only = 0.3 / stats.beta.ppf(0.025, 41, 6) - 0.3 / stats.beta.ppf(0.975, 41, 6)
    expected = math.hypot(widths[False], judge_only)
    assert widths[True] > widths[False] * 1.4
    assert widths[True] == pytest.approx(expected, rel=0.08)


def test_bootstrap_rejects_invalid_input():
    with pytest.raises(ValueError):
        bootstrap_asr_interval(5, 0)
    with pytest.raises(ValueError, match="bootstrap_num_iterations"):
        bootstrap_asr_interval(5, 10, iterations=0)


# --- Settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"iterations": 0}, "bootstrap_num_iterations must be > 0"),
        ({"iterations": -5}, "bootstrap_num_iterations must be > 0"),
        ({"level": 0.0}, "bootstrap_confidence_level must be in"),
        ({"level": 1.0}, "bootstrap_confidence_level must be in"),
        ({"level": 1.5}, "bootstrap_confidence_level must be in"),
        ({"min_sample_size": 0}, "bootstrap_min_sample_size must be > 0"),
        ({"method": "jackknife"}, "confidence_interval_method must be one of"),
    ],
)
def test_invalid_settings_name_the_setting(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CISettings(**kwargs)


def test_default_settings_match_the_issue():
    s = CISettings()
    assert (s.method, s.iterations, s.level, s.min_sample_size) == ("bootstrap", 10_000, 0.95, 30)
    assert s.propagate_detector_uncertainty is True


# --- Eval-row fields ----------------------------------------------------------------------


def test_fields_absent_when_method_is_none():
    assert confidence_fields(10, 100, CISettings(method="none"), None, rng=0) == {}


def test_fields_absent_below_minimum_sample_size_for_every_method():
    for method in ("bootstrap", "wilson"):
        settings = CISettings(method=method, min_sample_size=30)
        assert confidence_fields(5, 29, settings, None, rng=0) == {}
        assert set(confidence_fields(5, 30, settings, None, rng=0)) == CI_KEYS


def test_bootstrap_fields_without_correction():
    fields = confidence_fields(25, 100, CISettings(iterations=2000), None, rng=0)
    assert set(fields) == CI_KEYS
    assert fields["confidence_method"] == "bootstrap"
    assert fields["confidence"] == 0.95
    assert 0.0 <= fields["confidence_lower"] < 0.25 < fields["confidence_upper"] <= 1.0
    assert fields["confidence_correction"] == {"se": None, "sp": None, "source": "none"}
    assert fields["corrected_rate"] == 0.25


def test_bootstrap_fields_carry_the_correction():
    corr = Correction(0.9, 0.8, "config")
    fields = confidence_fields(40, 100, CISettings(iterations=2000), corr, rng=0)
    assert fields["confidence_correction"] == {"se": 0.9, "sp": 0.8, "source": "config"}
    assert fields["corrected_rate"] == pytest.approx((0.4 + 0.8 - 1) / 0.7)
    assert fields["confidence_lower"] < fields["corrected_rate"] < fields["confidence_upper"]


@pytest.mark.parametrize("fails", [0, 50])
def test_degenerate_bootstrap_falls_back_to_wilson(fails):
    corr = Correction(0.9, 0.9, "garak")
    fields = confidence_fields(fails, 50, CISettings(), corr, rng=0)
    lo, hi = wilson_interval(fails, 50, 0.95)
    assert fields["confidence_method"] == "wilson"
    assert (fields["confidence_lower"], fields["confidence_upper"]) == (lo, hi)
    assert fields["confidence_correction"]["source"] == "none"
    assert should_display_interval(lo, hi)


def test_zero_width_from_correction_clipping_stays_bootstrap():
    # 2/100 observed with Sp = 0.9: every resample corrects below zero and clips to 0.
    fields = confidence_fields(2, 100, CISettings(), Correction(0.9, 0.9, "config"), rng=0)
    assert fields["confidence_method"] == "bootstrap"
    assert fields["confidence_lower"] == fields["confidence_upper"] == 0.0
    assert not should_display_interval(fields["confidence_lower"], fields["confidence_upper"])


def test_wilson_method_applies_the_configured_correction():
    # Issue 17: `wilson` used to give the raw flagged rate's interval and ignore Se/Sp.
    corr = Correction(0.9, 0.8, "config")
    fields = confidence_fields(40, 100, CISettings(method="wilson"), corr, rng=0)
    lo, hi = wilson_interval(40, 100)
    assert fields["confidence_method"] == "wilson"
    assert fields["confidence_correction"] == {"se": 0.9, "sp": 0.8, "source": "config"}
    assert fields["corrected_rate"] == pytest.approx(rogan_gladen(0.4, 0.9, 0.8))
    assert fields["confidence_lower"] == pytest.approx(rogan_gladen(lo, 0.9, 0.8))
    assert fields["confidence_upper"] == pytest.approx(rogan_gladen(hi, 0.9, 0.8))


def test_wilson_method_widens_by_the_audit_counts_when_propagating():
    corr = Correction.from_counts(18, 2, 16, 4, "audit:abc")
    on = confidence_fields(40, 100, CISettings(method="wilson"), corr)
    off = confidence_fields(
        40, 100, CISettings(method="wilson", propagate_detector_uncertainty=False), corr
    )
    assert on["confidence_lower"] < off["confidence_lower"]
    assert on["confidence_upper"] > off["confidence_upper"]


def test_wilson_method_without_correction_is_the_raw_interval():
    fields = confidence_fields(40, 100, CISettings(method="wilson"), None)
    assert fields["confidence_correction"]["source"] == "none"
    assert (fields["confidence_lower"], fields["confidence_upper"]) == wilson_interval(40, 100)


def test_propagation_setting_switches_beta_draws():
    corr = Correction.from_counts(40, 5, 90, 10, "audit:abc")
    on = confidence_fields(300, 1000, CISettings(), corr, rng=0)
    off = confidence_fields(
        300, 1000, CISettings(propagate_detector_uncertainty=False), corr, rng=0
    )
    width = lambda f: f["confidence_upper"] - f["confidence_lower"]  # noqa: E731
    assert width(on) > width(off) * 1.3
    assert on["confidence_correction"]["source"] == "audit:abc"


def test_invalid_counts_log_an_error_and_write_nothing(caplog):
    with caplog.at_level(logging.ERROR, logger="redjury.stats.intervals"):
        assert confidence_fields(101, 100, CISettings(), None, rng=0) == {}
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_failed_computation_logs_a_warning_and_writes_nothing(caplog, monkeypatch):
    monkeypatch.setattr(intervals, "bootstrap_asr_interval", lambda *a, **k: (math.nan, 0.5))
    with caplog.at_level(logging.WARNING, logger="redjury.stats.intervals"):
        assert confidence_fields(30, 100, CISettings(), None, rng=0) == {}
    assert any(r.levelno == logging.WARNING for r in caplog.records)


def test_fields_reproducible_from_an_integer_seed():
    a = confidence_fields(30, 100, CISettings(), Correction(0.9, 0.8, "garak"), rng=42)
    b = confidence_fields(30, 100, CISettings(), Correction(0.9, 0.8, "garak"), rng=42)
    assert a == b


def test_confidence_fields_cost_is_independent_of_n():
    settings = CISettings()
    corr = Correction.from_counts(40, 5, 90, 10, "audit:abc")
    start = time.perf_counter()
    for seed in range(20):
        confidence_fields(300_000, 1_000_000, settings, corr, rng=seed)
    per_call = (time.perf_counter() - start) / 20
    assert per_call < 0.05  # a few ms in practice; loose for slow CI machines


# --- Display ------------------------------------------------------------------------------


def test_display_needs_more_than_a_thousandth_of_a_point():
    assert not should_display_interval(0.5, 0.5)
    assert not should_display_interval(0.5, 0.5 + 0.9e-5)
    assert should_display_interval(0.5, 0.5 + 1.1e-5)


def test_correction_from_counts():
    corr = Correction.from_counts(40, 5, 90, 10, "audit:fp")
    assert corr.se == pytest.approx(40 / 45)
    assert corr.sp == pytest.approx(0.9)
    assert corr.se_counts == (40, 5) and corr.sp_counts == (90, 10)
    with pytest.raises(ValueError):
        Correction(1.2, 0.9, "config")
