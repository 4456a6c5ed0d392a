"""Where a detector's sensitivity and specificity come from: the audit, the config, a garak
metrics file, or garak's published figures shipped with redjury."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from redjury.stats.settings import Correction

logger = logging.getLogger(__name__)

AuditLookup = Callable[[str], Correction | None]
#: detector name -> (se, sp)
MetricsTable = Mapping[str, tuple[float, float]]

_PREFIXES = ("detectors.", "detector.")
_SHIPPED = "garak_detector_metrics.json"


def normalise_detector_name(name: str) -> str:
    """`detectors.mitigation.MitigationBypass` and `detector.…` → `mitigation.MitigationBypass`."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _rate(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{where} must be in [0, 1], got {value!r}")
    return float(value)


def parse_metrics_table(
    table: Mapping[str, Any], where: str = "reporting.detector_metrics"
) -> dict[str, tuple[float, float]]:
    """`{detector: {se, sp}}` → `{detector: (se, sp)}`; keys starting `_` are notes.

    Raises ValueError naming the key path of a missing or out-of-range value.
    """
    parsed: dict[str, tuple[float, float]] = {}
    for name, entry in table.items():
        if name.startswith("_"):
            continue
        if not isinstance(entry, Mapping) or "se" not in entry or "sp" not in entry:
            raise ValueError(f"{where}.{name} needs both se and sp")
        parsed[normalise_detector_name(name)] = (
            _rate(entry["se"], f"{where}.{name}.se"),
            _rate(entry["sp"], f"{where}.{name}.sp"),
        )
    return parsed


def parse_garak_summary(data: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """garak's `detector_metrics_summary.json` → `{detector: (se, sp)}`.

    The format is `{"results": {detector: {"metrics": {"hit_sensitivity": Se,
    "hit_specificity": Sp, …}}}, "metadata": {…}}`. Like garak, a detector with a missing or
    out-of-range figure is skipped (with a warning) rather than failing the whole file.
    """
    results = data.get("results") if isinstance(data, Mapping) else None
    if not isinstance(results, Mapping):
        raise ValueError("garak detector metrics file has no 'results' object")
    parsed: dict[str, tuple[float, float]] = {}
    for name, entry in results.items():
        metrics = entry.get("metrics") if isinstance(entry, Mapping) else None
        if not isinstance(metrics, Mapping):
            metrics = {}
        try:
            se = _rate(metrics.get("hit_sensitivity"), f"results.{name}.metrics.hit_sensitivity")
            sp = _rate(metrics.get("hit_specificity"), f"results.{name}.metrics.hit_specificity")
        except ValueError as exc:
            logger.warning("skipping detector metrics for %s: %s", name, exc)
            continue
        parsed[normalise_detector_name(name)] = (se, sp)
    return parsed


@lru_cache(maxsize=8)
def _load_garak_summary_cached(path: str) -> dict[str, tuple[float, float]]:
    with open(path, encoding="utf-8") as handle:
        return parse_garak_summary(json.load(handle))


def load_garak_detector_metrics(path: str | Path) -> dict[str, tuple[float, float]]:
    """Read a garak `detector_metrics_summary.json` (cached per path; treat as read-only)."""
    return _load_garak_summary_cached(str(Path(path).resolve()))


@lru_cache(maxsize=1)
def shipped_garak_metrics() -> dict[str, tuple[float, float]]:
    """garak's published Se/Sp for its own detectors, from redjury's resources."""
    text = resources.files("redjury").joinpath("resources", _SHIPPED).read_text(encoding="utf-8")
    return parse_metrics_table(json.loads(text), where=_SHIPPED)


def resolve_correction(
    detector_name: str,
    *,
    audit_lookup: AuditLookup | None = None,
    config_metrics: Mapping[str, Any] | None = None,
    garak_metrics_file: str | Path | None = None,
    use_shipped: bool = True,
) -> Correction | None:
    """The Se/Sp correction for a detector, first source that knows it wins:

    1. `audit_lookup(detector_name)`: the audit's measured values (source `audit:<fp>`)
    2. `config_metrics` (`reporting.detector_metrics`, `{detector: {se, sp}}`), then
       `garak_metrics_file` (a garak `detector_metrics_summary.json`): source `config`
    3. garak's published figures for its own detectors (source `garak`), unless
       `use_shipped` is False
    4. None: no correction
    Names match with `detectors.` / `detector.` prefixes stripped.
    """
    if audit_lookup is not None:
        found = audit_lookup(detector_name)
        if found is not None:
            return found
    key = normalise_detector_name(detector_name)
    if config_metrics:
        table = parse_metrics_table(config_metrics)
        if key in table:
            return Correction(*table[key], source="config")
    if garak_metrics_file is not None:
        table = load_garak_detector_metrics(garak_metrics_file)
        if key in table:
            return Correction(*table[key], source="config")
    if use_shipped:
        shipped = shipped_garak_metrics()
        if key in shipped:
            return Correction(*shipped[key], source="garak")
    return None
