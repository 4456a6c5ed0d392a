"""Statistics over verdicts: attack-success-rate intervals, detector correction, Z-score
calibration and hit@k. Pure functions over numpy arrays.

Names resolve on first use: importing the package (for its settings dataclasses, say)
does not import numpy, so a run forks its workers before numpy is loaded and loads it only
when the first interval is computed."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Bound now, not on first use: once imported, the submodule of the same name would take the
# package attribute's place. Its module imports numpy only when it is called.
from redjury.stats.hit_at_k import hit_at_k

# Each public name and the module that defines it.
_HOMES = {
    "DEFCON_SYMBOLS": "calibration",
    "Calibration": "calibration",
    "build_calibration": "calibration",
    "defcon": "calibration",
    "write_calibration": "calibration",
    "resolve_correction": "detector_metrics",
    "CISettings": "settings",
    "Correction": "settings",
    "bootstrap_asr_interval": "intervals",
    "confidence_fields": "intervals",
    "rogan_gladen": "intervals",
    "should_display_interval": "intervals",
    "wilson_interval": "intervals",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from redjury.stats.calibration import (
        DEFCON_SYMBOLS,
        Calibration,
        build_calibration,
        defcon,
        write_calibration,
    )
    from redjury.stats.detector_metrics import resolve_correction
    from redjury.stats.intervals import (
        bootstrap_asr_interval,
        confidence_fields,
        rogan_gladen,
        should_display_interval,
        wilson_interval,
    )
    from redjury.stats.settings import CISettings, Correction
