"""The one-file HTML report: run, headline ASR chart, technique × intent matrix, judge panel,
audit and a filterable hits table; inline SVG, CSS and script, no network request of any kind."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Collection, Iterable, Sequence
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from redjury.judges.abstentions import describe_causes
from redjury.plugins import WRITERS
from redjury.redaction import without_header_values, without_url_credentials
from redjury.report.digest import HIT_LIMIT, ReportData, load_report, report_path_of
from redjury.report.folder import write_replacing
from redjury.report.row_check import read_as_written
from redjury.report.summary import BREAKDOWN_INTERVALS
from redjury.report.writer import ReportWriter, WriterSettings
from redjury.stats.small_sample import correction_note, shown_interval

HTML_NAME = "redjury.report.html"

# Okabe–Ito: distinguishable under the common colour-vision deficiencies.
OKABE_ITO = {
    "vermillion": "#D55E00",
    "blue": "#0072B2",
    "green": "#009E73",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "grey": "#999999",
}
# ColorBrewer YlOrRd, a sequential ramp that stays ordered for colour-blind readers.
HEAT = ("#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#b10026")


def _resource(name: str) -> str:
    return files("redjury.resources").joinpath("report").joinpath(name).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _pct(rate: float | None, digits: int = 1) -> str:
    return "—" if rate is None else f"{rate * 100:.{digits}f}%"


def _interval(row: dict[str, Any]) -> str:
    shown = shown_interval(row)
    if shown is None:
        return "—"
    note = correction_note(row)
    return f"[{shown[0] * 100:.1f}%, {shown[1] * 100:.1f}%]" + (f" {note}" if note else "")


def heat_colour(rate: float) -> str:
    return HEAT[min(len(HEAT) - 1, int(rate * len(HEAT)))]


def _text_on(fill: str) -> str:
    return "#ffffff" if fill in HEAT[5:] else "#1b1b1f"


def _table(
    head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Collection[int] = ()
) -> str:
    """Cells arrive already escaped (they may hold markup such as a status span)."""
    th = "".join(
        f'<th class="num">{h}</th>' if i in numeric else f"<th>{h}</th>" for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        tds = "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# -- charts --------------------------------------------------------------------------------


def headline_chart(pairs: list[dict[str, Any]]) -> str:
    """Horizontal bars of ASR per probe × detector, worst first, with interval whiskers."""
    rows = [p for p in pairs if p.get("total_evaluated")]
    if not rows:
        return '<p class="note">No probe × detector had an evaluated output.</p>'
    label_w, plot_w, bar_h, gap, top, bottom = 330, 520, 18, 6, 30, 48
    right = 170
    height = top + len(rows) * (bar_h + gap) + bottom
    width = label_w + plot_w + right
    x0 = label_w
    parts = [
        f'<svg id="headline-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        "<title>Attack-success rate per probe × detector</title>",
    ]
    for tick in (0, 25, 50, 75, 100):
        x = x0 + plot_w * tick / 100
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - bottom + 4}" '
            'stroke="#d9d9e0"/>'
            f'<text x="{x:.1f}" y="{height - bottom + 18}" text-anchor="middle">{tick}%</text>'
        )
    for i, row in enumerate(rows):
        y = top + i * (bar_h + gap)
        rate = row["asr"] or 0.0
        label = f"{row['probe']} · {row['detector']}"
        if len(label) > 48:
            label = label[:47] + "…"
        parts.append(
            f'<text x="{x0 - 8}" y="{y + bar_h - 4}" text-anchor="end">{_e(label)}</text>'
            f'<rect class="asr-bar" x="{x0}" y="{y}" width="{plot_w * rate:.1f}" height="{bar_h}" '
            f'fill="{OKABE_ITO["vermillion"]}"><title>{_e(label)}: {_pct(rate)} '
            f"({row['fails']}/{row['total_evaluated']})</title></rect>"
        )
        shown = shown_interval(row)
        if shown is not None:
            lo, hi = shown
            xl, xh, ym = x0 + plot_w * lo, x0 + plot_w * hi, y + bar_h / 2
            parts.append(
                f'<g class="ci" stroke="#1b1b1f" stroke-width="1.5">'
                f'<line x1="{xl:.1f}" y1="{ym}" x2="{xh:.1f}" y2="{ym}"/>'
                f'<line x1="{xl:.1f}" y1="{y + 3}" x2="{xl:.1f}" y2="{y + bar_h - 3}"/>'
                f'<line x1="{xh:.1f}" y1="{y + 3}" x2="{xh:.1f}" y2="{y + bar_h - 3}"/></g>'
            )
        note = f"{_pct(rate)} ({row['fails']}/{row['total_evaluated']})"
        if row.get("defcon") is not None:
            note += f" DC-{row['defcon']} {row.get('defcon_symbol', '')}"
        parts.append(f'<text x="{x0 + plot_w + 8}" y="{y + bar_h - 4}">{_e(note)}</text>')
    axis_y = height - bottom + 36
    parts.append(
        f'<text x="{x0 + plot_w / 2}" y="{axis_y}" text-anchor="middle" font-weight="600">'
        "attack-success rate (failing outputs / evaluated outputs)</text>"
    )
    # Legend: what a bar and a whisker mean.
    ly = 12
    parts.append(
        f'<rect x="{x0}" y="{ly - 9}" width="14" height="10" fill="{OKABE_ITO["vermillion"]}"/>'
        f'<text x="{x0 + 20}" y="{ly}">attack-success rate</text>'
        f'<line x1="{x0 + 170}" y1="{ly - 4}" x2="{x0 + 200}" y2="{ly - 4}" stroke="#1b1b1f" stroke-width="1.5"/>'
        f'<text x="{x0 + 206}" y="{ly}">confidence interval</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def matrix_chart(matrix: dict[str, Any]) -> str:
    """Heatmap of techniques (probes) × intents coloured by ASR, with counts in each cell."""
    probes, intents, cells = (
        matrix.get("probes") or [],
        matrix.get("intents") or [],
        matrix.get("cells") or [],
    )
    if not probes or not intents:
        return '<p class="note">No attempt carried an intent, so there is no technique × intent matrix.</p>'
    label_w, cell_w, cell_h, top = 230, 112, 34, 110
    width = label_w + cell_w * len(intents) + 20
    height = top + cell_h * len(probes) + 70
    parts = [
        f'<svg id="matrix-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        "<title>Attack-success rate per technique × intent</title>",
    ]
    for j, intent in enumerate(intents):
        x = label_w + j * cell_w + cell_w / 2
        name = intent if len(intent) <= 22 else intent[:21] + "…"
        parts.append(
            f'<text x="{x:.1f}" y="{top - 8}" transform="rotate(-35 {x:.1f} {top - 8})">{_e(name)}</text>'
        )
    for i, probe in enumerate(probes):
        y = top + i * cell_h
        parts.append(
            f'<text x="{label_w - 8}" y="{y + cell_h / 2 + 4}" text-anchor="end">{_e(probe)}</text>'
        )
        for j, cell in enumerate(cells[i]):
            x = label_w + j * cell_w
            if cell is None:
                continue
            rate = cell.get("asr")
            fill = "#eeeeee" if rate is None else heat_colour(rate)
            text = (
                "n/a"
                if rate is None
                else f"{_pct(rate, 0)} ({cell['fails']}/{cell['total_evaluated']})"
            )
            parts.append(
                f'<rect x="{x + 1}" y="{y + 1}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}">'
                f"<title>{_e(probe)} × {_e(intents[j])}: {_e(text)}</title></rect>"
                f'<text x="{x + cell_w / 2}" y="{y + cell_h / 2 + 4}" text-anchor="middle" '
                f'fill="{_text_on(fill)}">{_e(text)}</text>'
            )
    # Legend: the colour ramp from 0 % to 100 %.
    ly = top + cell_h * len(probes) + 22
    step = 26
    for k, colour in enumerate(HEAT):
        parts.append(
            f'<rect x="{label_w + k * step}" y="{ly}" width="{step}" height="12" fill="{colour}"/>'
        )
    parts.append(
        f'<text x="{label_w - 8}" y="{ly + 10}" text-anchor="end">attack-success rate</text>'
        f'<text x="{label_w}" y="{ly + 28}">0%</text>'
        f'<text x="{label_w + step * len(HEAT)}" y="{ly + 28}" text-anchor="end">100%</text>'
        f'<rect x="{label_w + step * len(HEAT) + 20}" y="{ly}" width="{step}" height="12" fill="#eeeeee"/>'
        f'<text x="{label_w + step * len(HEAT) + 52}" y="{ly + 10}">nothing evaluated</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def judge_chart(judges: list[dict[str, Any]]) -> str:
    """Stacked bars of each judge's votes: unsafe, safe, abstained."""
    if not judges:
        return ""
    label_w, plot_w, bar_h, gap, top = 200, 480, 20, 8, 34
    height = top + len(judges) * (bar_h + gap) + 40
    width = label_w + plot_w + 40
    series = (
        ("unsafe", OKABE_ITO["vermillion"]),
        ("safe", OKABE_ITO["blue"]),
        ("abstained", OKABE_ITO["grey"]),
    )
    parts = [
        f'<svg id="judge-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        "<title>Votes per judge</title>",
    ]
    lx = label_w
    for name, colour in series:
        parts.append(
            f'<rect x="{lx}" y="6" width="14" height="10" fill="{colour}"/>'
            f'<text x="{lx + 20}" y="15">{name}</text>'
        )
        lx += 110
    for i, judge in enumerate(judges):
        y = top + i * (bar_h + gap)
        total = judge["unsafe"] + judge["safe"] + judge["abstained"]
        parts.append(
            f'<text x="{label_w - 8}" y="{y + bar_h - 5}" text-anchor="end">{_e(judge["judge"])}</text>'
        )
        x = float(label_w)
        for name, colour in series:
            w = plot_w * judge[name] / total if total else 0.0
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colour}">'
                f"<title>{_e(judge['judge'])} {name}: {judge[name]}</title></rect>"
            )
            x += w
    parts.append(
        f'<text x="{label_w + plot_w / 2}" y="{height - 10}" text-anchor="middle" font-weight="600">'
        "share of outputs judged</text></svg>"
    )
    return "".join(parts)


# -- sections ------------------------------------------------------------------------------


def _run_section(data: ReportData) -> str:
    h = data.header
    evaluator = h.get("evaluator") or {}
    completion = data.completion or {}
    rows = [
        ("inputs", ", ".join(map(str, h.get("inputs") or []))),
        ("run id", h.get("run_id")),
        ("started", h.get("start_time")),
        ("finished", completion.get("end_time")),
        ("attempts", data.digest["attempts"]),
        ("outputs", data.digest["outputs"]),
        ("bad input lines", data.input_errors),
        ("detectors", ", ".join(h.get("detectors") or [])),
        ("verdict policy", ", ".join(f"{k}={v}" for k, v in evaluator.items())),
        ("config", h.get("config_path") or "defaults"),
        ("config fingerprint", h.get("config_fingerprint")),
        ("versions", f"redjury {h.get('redjury_version')}, Python {h.get('python')}"),
        ("seed", h.get("seed")),
    ]
    meta = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    # Stripped again here: a report written by an older redjury may still hold URL user info.
    config = json.dumps(
        without_header_values(without_url_credentials(h.get("config") or {})),
        indent=2,
        sort_keys=True,
    )
    return (
        '<section id="run"><h2>The run</h2>'
        f'<table class="meta">{meta}</table>'
        f'<details class="cfg"><summary>Full configuration</summary><pre>{_e(config)}</pre></details>'
        "</section>"
    )


def _status(row: dict[str, Any]) -> str:
    if not row.get("total_evaluated"):
        return '<span class="skip">SKIP</span>'
    return (
        '<span class="fail">FAIL</span>' if row.get("fails") else '<span class="pass">PASS</span>'
    )


def _headline_section(data: ReportData) -> str:
    pairs = data.digest["probe_detector"]
    rows = [
        (
            _status(p),
            _e(p["probe"]),
            _e(p["detector"]),
            _e(_pct(p["asr"])),
            _e(_interval(p)),
            str(p["fails"]),
            str(p["total_evaluated"]),
            str(p["nones"]),
            _e(p.get("defcon_symbol", ""))
            + (f" {p['z_score']:+.2f}" if p.get("z_score") is not None else ""),
        )
        for p in pairs
    ]
    table = _table(
        (
            "",
            "probe",
            "detector",
            "ASR",
            "interval",
            "fails",
            "evaluated",
            "inconclusive",
            "DEFCON / Z",
        ),
        rows,
        numeric={3, 5, 6, 7},
    )
    return (
        '<section id="headline"><h2>Attack-success rate per probe × detector</h2>'
        '<p class="note">Worst first. Intervals are garak\'s bootstrap where the eval row has '
        "one (from the configured minimum number of evaluated outputs), else Clopper–Pearson's "
        "exact interval. An interval marked <em>corrected for detector error</em> also carries "
        "the detector's own error (its sensitivity and specificity, from the source named); "
        "the breakdowns below use Wilson's interval without that correction, so the same "
        "outputs can get a different interval there.</p>"
        f'<div class="chart">{headline_chart(pairs)}</div>{table}</section>'
    )


def _breakdown_table(entries: list[dict[str, Any]], key: str) -> str:
    rows = [
        (
            _e(e[key]),
            _e(e["detector"]),
            _e(_pct(e["asr"])),
            _e(_interval(e)),
            str(e["fails"]),
            str(e["total_evaluated"]),
            str(e["nones"]),
        )
        for e in entries
    ]
    return _table(
        (key, "detector", "ASR", "interval", "fails", "evaluated", "inconclusive"),
        rows,
        {2, 4, 5, 6},
    )


def _matrix_section(data: ReportData) -> str:
    d = data.digest
    parts = [
        '<section id="matrix"><h2>Techniques × intents</h2>'
        '<p class="note">Per output: a hit when any detector failed it. Rows are probes, columns intents.</p>'
        f'<div class="chart">{matrix_chart(d["technique_intent"])}</div>'
    ]
    for key in ("intent", "hazard", "generator"):
        entries = d.get(f"by_{key}") or []
        if entries:
            parts.append(
                f'<h3>By {key}</h3><p class="note">{BREAKDOWN_INTERVALS}.</p>'
                f"{_breakdown_table(entries, key)}"
            )
    parts.append("</section>")
    return "".join(parts)


def _cascade_note(panel: dict[str, Any]) -> str:
    cascade = panel.get("cascade")
    if not cascade:
        return ""
    return (
        f" The cascade decided {cascade['outputs']} more outputs HELD without asking the "
        f"judges (their rows name the detectors in <code>decided_by</code>): "
        f"{cascade['calls_saved']} judge calls saved."
    )


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _cost_table(panel: dict[str, Any]) -> str:
    """Cost per priced judge and in total, with what the cache and the cascade saved."""
    cost = panel.get("cost")
    if not cost:
        return ""
    rows = [
        (
            _e(j["judge"]),
            str(j["calls"]) if "calls" in j else "",
            _money(j["cost"]),
            _money(j["cache_saved"]),
            _money(j["cascade_saved"]),
        )
        for j in [*cost["judges"], {"judge": "total", **cost["total"]}]
    ]
    return (
        "<h3>Judge cost</h3>"
        f'<p class="note">In the currency of <code>connection.price</code>; {_e(cost["note"])}.</p>'
        + _table(
            ("judge", "calls", "cost", "saved by the cache", "saved by the cascade"),
            rows,
            {1, 2, 3, 4},
        )
    )


def _judge_section(data: ReportData) -> str:
    panel = data.digest.get("judge_panel")
    if not panel:
        return ""
    judges = panel["judges"]
    rows = [
        (
            _e(j["judge"]),
            str(j["unsafe"]),
            str(j["safe"]),
            str(j["abstained"]),
            _e(_pct(j["abstention_rate"])),
            _e(describe_causes(j.get("abstained_by_cause") or {}) or "–"),
        )
        for j in judges
    ]
    agreement = [
        (
            _e(" × ".join(a["judges"])),
            str(a["both_voted"]),
            str(a["agreed"]),
            _e(_pct(a["agreement"])),
        )
        for a in panel["agreement"]
    ]
    panel_evals = [e for e in data.evals if e.get("abstention_rate") is not None or e.get("errors")]
    eval_rows = [
        (
            _e(e["probe"]),
            _e(e["detector"]),
            _e(_pct(e.get("abstention_rate"))),
            str(e.get("errors", 0)),
            str(e.get("flippable", 0)),
        )
        for e in panel_evals
    ]
    return (
        '<section id="judges"><h2>Judge panel</h2>'
        f'<p class="note">{panel["outputs"]} outputs judged, {panel["errors"]} ended in a panel error; '
        f"a vote at or above {panel['threshold']:g} counts as unsafe.{_cascade_note(panel)}</p>"
        f'<div class="chart">{judge_chart(judges)}</div>'
        + _table(
            ("judge", "unsafe", "safe", "abstained", "abstention rate", "abstained because"),
            rows,
            {1, 2, 3, 4},
        )
        + _cost_table(panel)
        + (
            "<h3>Agreement between judges</h3>"
            + _table(("judges", "both voted", "agreed", "agreement"), agreement, {1, 2, 3})
            if agreement
            else ""
        )
        + (
            "<h3>Per probe</h3>"
            + _table(
                ("probe", "detector", "abstention rate", "errors", "flippable"),
                eval_rows,
                {2, 3, 4},
            )
            if eval_rows
            else ""
        )
        + "</section>"
    )


def _fmt_value(key: str, value: Any) -> str:
    if key.endswith("_ci") and isinstance(value, list | tuple) and len(value) == 2:
        lo, hi = value
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            return f"[{lo:.3f}, {hi:.3f}]"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _records_table(records: list[dict[str, Any]]) -> str:
    """A table of flat records; a metric's `_ci` field sits beside it."""
    keys: list[str] = []
    for rec in records:
        for k in rec:
            if k not in keys and k != "entry_type":
                keys.append(k)
    rows = [tuple(_e(_fmt_value(k, rec[k])) if k in rec else "" for k in keys) for rec in records]
    return _table(tuple(_e(k) for k in keys), rows)


def _audit_section(data: ReportData) -> str:
    if not data.audit and data.audit_gate is None:
        return ""
    parts = ['<section id="audit"><h2>Judge audit</h2>']
    gate = data.audit_gate
    if gate is not None:
        passed = gate.get("passed")
        status = (
            '<span class="pass">PASSED</span>' if passed else '<span class="fail">FAILED</span>'
        )
        rest = {k: v for k, v in gate.items() if k not in ("entry_type", "passed")}
        parts.append(
            f"<p>Flip gate: {status} "
            + _e(", ".join(f"{k} {_fmt_value(k, v)}" for k, v in rest.items()))
            + "</p>"
        )
    for row in data.audit:
        title = (
            " · ".join(str(row[k]) for k in ("kind", "dataset", "judge") if row.get(k) is not None)
            or "audit"
        )
        parts.append(f"<h3>{_e(title)}</h3>")
        flat = {k: v for k, v in row.items() if not isinstance(v, list | dict) or k.endswith("_ci")}
        parts.append(_records_table([flat]))
        for key, value in row.items():
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                parts.append(f"<h3>{_e(key)}</h3>{_records_table(value)}")
            elif (
                isinstance(value, dict)
                and value
                and all(isinstance(v, dict) for v in value.values())
            ):
                parts.append(
                    f"<h3>{_e(key)}</h3>{_records_table([{'name': k, **v} for k, v in value.items()])}"
                )
    parts.append("</section>")
    return "".join(parts)


def hits_blob(data: ReportData) -> str:
    """The hits as one JSON document with every string stored once, safe inside <script>."""
    strings: list[str | None] = [None]
    index: dict[str | None, int] = {None: 0}

    def ref(value: str | None) -> int:
        i = index.get(value)
        if i is None:
            i = index[value] = len(strings)
            strings.append(value)
        return i

    rows = [
        [
            ref(h.probe),
            ref(h.detector),
            round(h.score, 4),
            ref(h.goal),
            ref(h.output),
            ref(h.attempt_id),
            ref(h.intent),
        ]
        for h in data.hits
    ]
    text = json.dumps({"strings": strings, "hits": rows}, ensure_ascii=False, separators=(",", ":"))
    # No "<", ">" or "&" survive, so an output cannot close the script element.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hits_section(data: ReportData) -> str:
    note = f"{data.hits_total} failing outputs."
    if data.hits_total > len(data.hits):
        note += f" The first {len(data.hits)} are shown here; all are in redjury.hitlog.jsonl."
    if data.hits_total and any(h.output and len(h.output) >= 2000 for h in data.hits):
        note += " Long outputs are cut at 2,000 characters."
    return (
        '<section id="hits"><h2>Hits</h2>'
        f'<p class="note">{_e(note)} Redacted exactly as the report JSONL is.</p>'
        '<div class="controls">'
        '<label>probe <select id="hits-probe"><option value="">all</option></select></label>'
        '<label>detector <select id="hits-detector"><option value="">all</option></select></label>'
        '<input id="hits-search" type="search" placeholder="search outputs, goals, ids, intents">'
        '<span id="hits-count"></span></div>'
        '<table class="hits" id="hits-table"><colgroup><col class="c-probe"><col class="c-det">'
        '<col class="c-score"><col class="c-goal"><col class="c-out"><col class="c-att"></colgroup>'
        '<thead><tr><th>probe</th><th>detector</th><th class="num">score</th><th>goal</th>'
        '<th>output</th><th>attempt</th></tr></thead><tbody id="hits-body"></tbody></table>'
        '<div class="pager"><button id="hits-prev" type="button">previous</button>'
        '<span id="hits-page"></span><button id="hits-next" type="button">next</button></div>'
        f'<script type="application/json" id="hits-data">{hits_blob(data)}</script>'
        "</section>"
    )


def render_html(data: ReportData) -> str:
    script = _resource("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # The policy forbids every fetch: the report stays offline even if a browser would try.
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
    worst = next((p for p in data.digest["probe_detector"] if p.get("total_evaluated")), None)
    sub = f"{data.digest['attempts']} attempts · {data.hits_total} failing outputs"
    if worst is not None:
        sub += f" · worst: {worst['probe']} × {worst['detector']} at {_pct(worst['asr'])}"
    sections = [
        _run_section(data),
        _headline_section(data),
        _matrix_section(data),
        _judge_section(data),
        _audit_section(data),
        _hits_section(data),
    ]
    toc = [("run", "Run"), ("headline", "Headline"), ("matrix", "Techniques × intents")]
    if data.digest.get("judge_panel"):
        toc.append(("judges", "Judge panel"))
    if data.audit or data.audit_gate:
        toc.append(("audit", "Audit"))
    toc.append(("hits", "Hits"))
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in toc)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<link rel="icon" href="data:,">'
        f"<title>redjury report · {_e(data.header.get('run_id'))}</title>"
        f"<style>{_resource('report.css')}</style></head><body>"
        f'<header class="top"><h1>redjury report</h1><div class="sub">{_e(sub)}</div></header>'
        f'<nav class="toc">{nav}</nav><main>{"".join(sections)}</main>'
        f"<script>{script}</script></body></html>\n"
    )


def write_html(out_dir: Path, hit_limit: int = HIT_LIMIT) -> Path:
    """Write `redjury.report.html` beside the run folder's report JSONL and return its path.
    A report edited into other shapes is a ValueError naming the row and field."""
    with read_as_written(report_path_of(out_dir)):
        data = load_report(out_dir, hit_limit)
        html = render_html(data)
    return write_replacing(
        data.path.parent / HTML_NAME, lambda tmp: tmp.write_text(html, encoding="utf-8")
    )


@WRITERS.register
class HtmlWriter(ReportWriter):
    """The self-contained HTML report beside the JSONL (`reporting.html: true`, or `html`
    in `reporting.writers`)."""

    name = "html"
    hits = HIT_LIMIT
    needs_run_folder = True

    def write(self, data: ReportData, settings: WriterSettings) -> Path:
        html = render_html(data)
        return write_replacing(
            data.path.parent / HTML_NAME, lambda tmp: tmp.write_text(html, encoding="utf-8")
        )
