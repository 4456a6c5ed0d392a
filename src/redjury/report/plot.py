"""The notebook plot of a run: one bar per probe × detector, labelled with both, its
attack-success rate with the interval as an error bar (`Results.plot`).

Rows are read as the report holds them (`eval` rows); matplotlib is imported only to draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redjury.stats.small_sample import applied_correction, shown_interval


@dataclass(frozen=True)
class Bar:
    """One probe × detector: its rate and, where the report has one, its interval."""

    probe: str
    detector: str
    asr: float
    lower: float | None
    upper: float | None
    corrected: bool

    @property
    def label(self) -> str:
        return f"{self.probe} · {self.detector}"


def asr_of(row: Mapping[str, Any]) -> float | None:
    """fails / evaluated outputs; None where nothing was evaluated."""
    total = row.get("total_evaluated") or 0
    return row.get("fails", 0) / total if total else None


def interval_of(row: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The row's interval as the reports show it (`shown_interval`); (None, None) without."""
    return shown_interval(row) or (None, None)


def bars(evals: Sequence[Mapping[str, Any]]) -> list[Bar]:
    """One bar per probe × detector that evaluated an output, probes in order, then
    detectors; a row with nothing evaluated has no rate to draw and is left out."""
    out = []
    for row in sorted(evals, key=lambda r: (str(r.get("probe")), str(r.get("detector")))):
        asr = asr_of(row)
        if asr is None:
            continue
        lower, upper = interval_of(row)
        probe, detector = str(row.get("probe")), str(row.get("detector"))
        out.append(Bar(probe, detector, asr, lower, upper, applied_correction(row) is not None))
    return out


def _error_bars(shown: Sequence[Bar]) -> list[list[float]]:
    """matplotlib's asymmetric `xerr`: distances below and above each rate (0 without an
    interval)."""
    below = [b.asr - b.lower if b.lower is not None else 0.0 for b in shown]
    above = [b.upper - b.asr if b.upper is not None else 0.0 for b in shown]
    return [[max(v, 0.0) for v in below], [max(v, 0.0) for v in above]]


def plot_asr(evals: Sequence[Mapping[str, Any]], ax: Any = None) -> Any:
    """Draw the bars on `ax` (a new figure when None), one colour per detector with a
    legend; the axes are returned. Needs matplotlib."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plot needs matplotlib: pip install 'redjury[plot]'") from exc
    shown = bars(evals)
    if ax is None:
        _fig, ax = plt.subplots(figsize=(8, 0.3 * len(shown) + 1.5))
    detectors = sorted({b.detector for b in shown})
    colours = {d: f"C{i % 10}" for i, d in enumerate(detectors)}
    positions = list(range(len(shown)))[::-1]  # the first bar on top
    ax.barh(
        positions,
        [b.asr for b in shown],
        xerr=_error_bars(shown),
        color=[colours[b.detector] for b in shown],
        capsize=3,
        error_kw={"elinewidth": 1},
    )
    ax.set_yticks(positions, [b.label for b in shown])
    ax.set_xlim(0, 1)
    ax.set_xlabel("attack success rate (bars: interval)")
    for detector in detectors:  # one legend entry per detector
        ax.barh([], [], color=colours[detector], label=detector)
    ax.legend(title="detector", loc="lower right", fontsize="small")
    if any(b.corrected for b in shown):
        ax.set_title("* interval corrected for detector error (Se/Sp)", fontsize="small")
        ax.set_yticks(positions, [b.label + (" *" if b.corrected else "") for b in shown])
    return ax
