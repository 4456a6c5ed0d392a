"""The stored state a run reads (judge caches, audits, a calibration file), said in the report
header and the terminal, so that nothing an earlier run left behind changes a result unseen."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from redjury.config import RunConfig
from redjury.detectors.base import Detector


def stored_state(config: RunConfig, detectors: list[Detector]) -> list[dict[str, Any]]:
    """One entry per stored thing the run reads: kind, file, date and its size."""
    used: list[dict[str, Any]] = []
    if config.reporting.calibration:
        from redjury.stats.calibration import describe_calibration

        used.append(describe_calibration(config.reporting.calibration))
    used.extend(_cache_entry(cache) for cache in judge_caches(detectors))
    if any(d.name == "judge_panel" for d in detectors):  # as Run._statistics reads them
        from redjury.audit.datasets import cache_dir_of
        from redjury.audit.runner import MIN_IMPLICIT_AUDIT_SAMPLES, audit_use

        cache_dir = cache_dir_of(config.evaluation.audit.dataset)
        used.extend(audit_use(cache_dir, detectors, MIN_IMPLICIT_AUDIT_SAMPLES))
    return used


def judge_caches(detectors: Iterable[Detector]) -> list[Any]:
    """The judge caches (`JudgeCache`) the detectors' judges read, each file once."""
    found: dict[Path, Any] = {}
    for det in detectors:
        guardrail_judge = getattr(getattr(det, "guardrail", None), "judge", None)
        for holder in (det, *getattr(det, "judges", ()), guardrail_judge):
            cache = getattr(holder, "cache", None)
            path = getattr(cache, "path", None)
            if isinstance(path, Path):
                found.setdefault(path.resolve(), cache)
    return list(found.values())


def _cache_entry(cache: Any) -> dict[str, Any]:
    path: Path = cache.path
    entries = len(cache) if path.is_file() else 0
    # An empty cache has no date: the run itself may have just made the file (it opens the
    # cache when its judges are built).
    return {
        "kind": "judge_cache",
        "file": str(path),
        "date": _mtime(path) if entries else None,
        "entries": entries,
    }


def _mtime(path: Path) -> str:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")


def describe(entry: dict[str, Any]) -> str:
    """The entry as one terminal line."""
    date = str(entry.get("date") or "")[:10]
    kind = entry.get("kind")
    if kind == "judge_cache":
        if not entry.get("entries"):
            return f"judge cache: {entry['file']} (empty; --no-cache bypasses it)"
        return (
            f"judge cache: {entry['file']} ({entry['entries']:,} answers, last written {date}; "
            "--no-cache bypasses it)"
        )
    if kind == "calibration":
        reports = f" from {entry['reports']} reports" if entry.get("reports") else ""
        return (
            f"calibration: {entry['file']} ({date}, {entry['pairs']} probe/detector pairs{reports})"
        )
    if entry.get("applied"):
        return (
            f"stored audit applied to {entry['detector']}'s intervals: {entry['file']} "
            f"({date}, {entry['samples']} labelled samples)"
        )
    return (
        f"stored audit of {entry['detector']} left aside: {entry['samples']} labelled samples "
        f"are too few ({entry['file']}, {date})"
    )


def cache_answers(detectors: Iterable[Detector]) -> dict[str, int] | None:
    """The judge panel's answers and how many of them its cache served; None without one."""
    for det in detectors:
        stats = getattr(det, "stats", None)
        if det.name == "judge_panel" and callable(stats) and getattr(det, "cache", None):
            counts = stats()
            return {"answers": int(counts["calls"]), "from_cache": int(counts["cache_hits"])}
    return None
