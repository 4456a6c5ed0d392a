"""Intervals where garak's bootstrap is not computed (fewer outputs than
`bootstrap_min_sample_size`), and the Se/Sp correction of an analytic interval.

The method is chosen by coverage: Clopper–Pearson's exact interval covers the raw rate with
at least the nominal probability at every n and rate (plain Wilson dips to 0.90 at small
rates). With a detector's Se/Sp, the bounds are carried through Rogan–Gladen at the ends of
the Se and Sp intervals that widen it most, so the detector's uncertainty (from its audit
counts) is kept, as the bootstrap keeps it by drawing Se and Sp.

These fields sit beside garak's (`confidence_*`), which keep garak's meaning:

    interval_method       "clopper_pearson"
    interval_level        the level, e.g. 0.95
    interval_lower/upper  the interval of the attack-success rate, as fractions
    interval_correction   {"se", "sp", "source"} applied (source "none" when uncorrected)
"""

from __future__ import annotations

from typing import Any

from redjury.stats.settings import CISettings, Correction

SMALL_SAMPLE_METHOD = "clopper_pearson"


def correction_record(correction: Correction | None) -> dict[str, Any]:
    if correction is None:
        return {"se": None, "sp": None, "source": "none"}
    return {"se": correction.se, "sp": correction.sp, "source": correction.source}


def small_sample_fields(
    fails: int, n: int, settings: CISettings, correction: Correction | None = None
) -> dict[str, Any]:
    """The `interval_*` fields of an eval row whose garak interval is not computed (n below
    the minimum sample size), or {} when the method is `none` or nothing was evaluated."""
    if settings.method == "none" or n <= 0 or not 0 <= fails <= n:
        return {}
    # Here, not at the top: the reports import `shown_interval` and must not pull in numpy.
    from redjury.stats.intervals import clopper_pearson_interval, corrected_bounds

    raw_lo, raw_hi = clopper_pearson_interval(fails, n, settings.level)
    lo, hi = corrected_bounds(
        raw_lo, raw_hi, correction, settings.level, settings.propagate_detector_uncertainty
    )
    return {
        "interval_method": SMALL_SAMPLE_METHOD,
        "interval_level": settings.level,
        "interval_lower": lo,
        "interval_upper": hi,
        "interval_correction": correction_record(correction),
    }


def shown_interval(row: dict[str, Any]) -> tuple[float, float] | None:
    """The interval a report shows for an eval row: garak's bootstrap/Wilson fields where
    computed, else the small-sample `interval_*` fields, else None."""
    lo, hi = row.get("confidence_lower"), row.get("confidence_upper")
    if lo is None or hi is None:
        lo, hi = row.get("interval_lower"), row.get("interval_upper")
    if lo is None or hi is None:
        return None
    return float(lo), float(hi)
