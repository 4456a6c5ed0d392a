"""The statistics an eval row carries beyond garak's counts: intervals, hit@k, ratings."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from redjury.config import ReportingSpec
from redjury.evaluators import DetectorTally
from redjury.stats import (
    Calibration,
    CISettings,
    Correction,
    confidence_fields,
    hit_at_k,
    resolve_correction,
)
from redjury.stats.small_sample import small_sample_fields

log = logging.getLogger(__name__)

AuditLookup = Callable[[str], Correction | None]


def _histogram(
    histogram: dict[tuple[int, int], int],
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The (n, c) histogram as its distinct pairs, (n, c) columns, and each pair's count:
    hit_at_k weighs each pair by its count rather than repeating it once per prompt (millions
    of prompts, a few distinct pairs: the finish's memory stays flat in the attempts)."""
    pairs = np.array(list(histogram), dtype=np.int64).reshape(-1, 2)
    counts = np.fromiter(histogram.values(), dtype=np.int64, count=len(histogram))
    return (pairs[:, 0], pairs[:, 1]), counts


def ci_settings(reporting: ReportingSpec) -> CISettings:
    return CISettings(
        method=reporting.confidence_interval_method,
        iterations=reporting.bootstrap_num_iterations,
        level=reporting.bootstrap_confidence_level,
        min_sample_size=reporting.bootstrap_min_sample_size,
        propagate_detector_uncertainty=reporting.propagate_detector_uncertainty,
    )


def eval_statistics(
    reporting: ReportingSpec, seed: int, audit_lookup: AuditLookup | None = None
) -> Callable[[str, str, DetectorTally], dict[str, Any]]:
    """A function giving the extra eval-row fields for one probe × detector."""
    settings = ci_settings(reporting)
    calibration: Calibration | None = None
    if reporting.calibration:
        calibration = Calibration.load(reporting.calibration)
    config_metrics = (
        {k: v.model_dump() for k, v in reporting.detector_metrics.items()}
        if reporting.detector_metrics
        else None
    )

    propagate = settings.propagate_detector_uncertainty
    warned: set[str] = set()

    def _warn_fixed_detector_rates(detector: str, correction: Correction) -> None:
        if detector in warned:
            return
        warned.add(detector)
        print(
            f"redjury: warning: propagate_detector_uncertainty is false, so {detector}'s "
            f"Se/Sp from {correction.source} are taken as exact; its intervals ignore how few "
            "labelled samples measured them and cover the true rate less often than stated",
            file=sys.stderr,
        )

    def fields(probe: str, detector: str, tally: DetectorTally) -> dict[str, Any]:
        out: dict[str, Any] = {}
        n = tally.passed + tally.fails
        if tally.abstain_n:
            out["abstention_rate"] = round(tally.abstain_sum / tally.abstain_n, 6)
            out["flippable"] = tally.flippable
        if n and settings.method != "none":
            correction = resolve_correction(
                detector,
                audit_lookup=audit_lookup,
                config_metrics=config_metrics,
                garak_metrics_file=reporting.detector_metrics_file,
            )
            if correction is not None and correction.se_counts and not propagate:
                _warn_fixed_detector_rates(detector, correction)
            ci = confidence_fields(tally.fails, n, settings, correction, rng=seed)
            # Below the minimum sample garak computes no interval; redjury gives one anyway,
            # in fields of its own, so garak's keep garak's meaning.
            out.update(ci or small_sample_fields(tally.fails, n, settings, correction))
        if reporting.hit_at_k is not None:
            columns, counts = _histogram(tally.per_prompt)
            hak = hit_at_k(columns, reporting.hit_at_k, weights=counts)
            if hak:
                out["hit_at_k"] = hak
        if calibration is not None and n:
            rating = calibration.rating(probe, detector, tally.passed / n)
            if rating is not None:
                out["z_score"], out["defcon"], out["defcon_symbol"] = rating
        return out

    return fields
