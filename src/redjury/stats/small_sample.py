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

from collections.abc import Mapping
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


def shown_interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """The interval a report shows for an eval row: garak's bootstrap/Wilson fields where
    computed, else the small-sample `interval_*` fields, else None."""
    lo, hi = row.get("confidence_lower"), row.get("confidence_upper")
    if lo is None or hi is None:
        lo, hi = row.get("interval_lower"), row.get("interval_upper")
    if lo is None or hi is None:
        return None
    return float(lo), float(hi)


def applied_correction(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Se/Sp correction behind the interval `shown_interval` gives, or None where that
    interval is the raw one (or there is none)."""
    if row.get("confidence_lower") is not None and row.get("confidence_upper") is not None:
        correction = row.get("confidence_correction")
    else:
        correction = row.get("interval_correction")
    if not isinstance(correction, dict) or correction.get("source") in (None, "none"):
        return None
    return correction


def _source_words(source: str) -> str:
    kind, _, key = source.partition(":")
    return {
        "audit": f"audit {key}",
        "config": "reporting.detector_metrics",
        "garak": "garak's published figures",
    }.get(kind, source)


def correction_note(row: dict[str, Any]) -> str:
    """`corrected for detector error (Se 0.90, Sp 0.95 from audit …)` for an interval widened
    for the detector's own error; "" for a raw one. Shown wherever the interval is."""
    correction = applied_correction(row)
    if correction is None:
        return ""
    se, sp = correction.get("se"), correction.get("sp")
    figures = f"Se {se:.2f}, Sp {sp:.2f}" if se is not None and sp is not None else "Se/Sp"
    return (
        f"corrected for detector error ({figures} from {_source_words(str(correction['source']))})"
    )
