"""The comparison of two runs as one self-contained HTML page: a forest plot of NEW − BASE with
its intervals beside both runs' rates, inline SVG and styles, no script, nothing fetched."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from redjury.report.compare import ordered, summary_line, table_cells

PLOT_WIDTH, ROW_HEIGHT = 360, 22
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_COLOURS = {"regression": "#D55E00", "improvement": "#009E73"}  # Okabe–Ito
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:16px;color:#222}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th,td{padding:2px 6px;border-bottom:1px solid #ddd;text-align:left;vertical-align:middle}
td.name{overflow-wrap:anywhere}
col.plot{width:376px} col.rate{width:120px} col.verdict{width:104px} col.scope{width:64px}
svg{display:block}
.regression{color:#D55E00;font-weight:600} .improvement{color:#009E73;font-weight:600}
@media print{body{max-width:none}}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _half_range(rows: Sequence[Mapping[str, Any]]) -> float:
    """The plot's x axis runs from −h to h: the widest interval, rounded up to 5 points."""
    ends = [abs(r[k]) for r in rows for k in ("difference_lower", "difference_upper")
            if r[k] is not None]  # fmt: skip
    return max(0.05, math.ceil(max(ends, default=0.05) / 0.05) * 0.05)


def _x(value: float, half: float) -> float:
    return round(8 + (value + half) / (2 * half) * (PLOT_WIDTH - 16), 1)


def _axis(half: float, margin: float) -> str:
    ticks = "".join(
        f'<line x1="{_x(t, half)}" x2="{_x(t, half)}" y1="14" y2="20" stroke="#999"/>'
        f'<text x="{_x(t, half)}" y="11" font-size="10" text-anchor="middle">{t * 100:+.0f}</text>'
        for t in (-half, -half / 2, 0.0, half / 2, half)
    )
    band = ""
    if margin > 0:
        band = f" (margin ±{margin * 100:g} pp shaded)"
    return (
        f'<svg class="axis" width="{PLOT_WIDTH}" height="{ROW_HEIGHT}" role="img" '
        f'aria-label="NEW − BASE, percentage points{band}">{ticks}</svg>'
    )


def _forest_cell(row: Mapping[str, Any], half: float) -> str:
    """One row of the forest plot: the zero line, the margin band, the interval and its point."""
    zero = _x(0.0, half)
    parts = [f'<line x1="{zero}" x2="{zero}" y1="0" y2="{ROW_HEIGHT}" stroke="#bbb"/>']
    margin = row.get("margin") or 0.0
    if margin:
        lo, hi = _x(-margin, half), _x(margin, half)
        parts.append(
            f'<rect class="margin" x="{lo}" y="0" width="{hi - lo}" height="{ROW_HEIGHT}" fill="#eee"/>'
        )
    if row["difference"] is not None:
        colour = _COLOURS.get(row["verdict"], "#555")
        lo, hi = _x(row["difference_lower"], half), _x(row["difference_upper"], half)
        mid, y = _x(row["difference"], half), ROW_HEIGHT / 2
        parts.append(
            f'<line class="ci" x1="{lo}" x2="{hi}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2"/>'
            f'<circle class="point" cx="{mid}" cy="{y}" r="4" fill="{colour}"/>'
        )
    label = _e(f"{table_cells(row)[6]} {table_cells(row)[7]}")
    return (
        f'<svg class="forest" width="{PLOT_WIDTH}" height="{ROW_HEIGHT}" role="img" '
        f'aria-label="{label}"><title>{label}</title>{"".join(parts)}</svg>'
    )


def comparison_html(rows: Sequence[Mapping[str, Any]], base: str, new: str) -> str:
    """The whole page: the runs, the summary line, then one table row per comparison."""
    shown = ordered(rows)
    half = _half_range(shown)
    margin = shown[0].get("margin", 0.0) if shown else 0.0
    body = []
    for row in shown:
        cells = table_cells(row)
        verdict = row["verdict"]
        body.append(
            f'<tr><td class="{_e(verdict)}">{_e(verdict)}</td><td>{_e(cells[1])}</td>'
            f'<td class="name">{_e(cells[2])}</td><td class="name">{_e(cells[3])}</td>'
            f"<td>{_e(cells[4])}</td><td>{_e(cells[5])}</td>"
            f"<td>{_forest_cell(row, half)}</td><td>{_e(cells[8])}</td></tr>"
        )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,">'
        f"<title>redjury compare</title><style>{_STYLE}</style></head><body>"
        f"<h1>redjury compare</h1><p>BASE <code>{_e(base)}</code> → NEW <code>{_e(new)}</code></p>"
        f"<p>{_e(summary_line(rows))}</p>"
        '<table id="comparison"><colgroup><col class="verdict"><col class="scope"><col><col>'
        '<col class="rate"><col class="rate"><col class="plot"><col class="scope"></colgroup>'
        "<thead><tr><th>verdict</th><th>scope</th><th>probe / intent</th><th>detector</th>"
        f"<th>BASE ASR</th><th>NEW ASR</th><th>{_axis(half, margin)}</th><th>p adj.</th></tr>"
        f"</thead><tbody>{''.join(body)}</tbody></table></body></html>\n"
    )


def write_comparison_html(rows: Sequence[dict[str, Any]], base: str, new: str, path: Path) -> Path:
    path.write_text(comparison_html(rows, base, new), encoding="utf-8")
    return path
