"""Statistics over verdicts: attack-success-rate intervals, detector correction, Z-score
calibration and hit@k. Pure functions over numpy arrays."""

from redjury.stats.calibration import (
    DEFCON_SYMBOLS,
    Calibration,
    build_calibration,
    defcon,
    write_calibration,
)
from redjury.stats.detector_metrics import resolve_correction
from redjury.stats.hit_at_k import hit_at_k
from redjury.stats.intervals import (
    CISettings,
    Correction,
    bootstrap_asr_interval,
    confidence_fields,
    rogan_gladen,
    should_display_interval,
    wilson_interval,
)

__all__ = [
    "DEFCON_SYMBOLS",
    "CISettings",
    "Calibration",
    "Correction",
    "bootstrap_asr_interval",
    "build_calibration",
    "confidence_fields",
    "defcon",
    "hit_at_k",
    "resolve_correction",
    "rogan_gladen",
    "should_display_interval",
    "wilson_interval",
    "write_calibration",
]
