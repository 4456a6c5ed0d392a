"""`redjury summary`: the digest's breakdowns as rich tables on the terminal, or as Markdown."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redjury.judges.abstentions import describe_causes
from redjury.report.digest import ReportData, load_report, report_path_of
from redjury.report.folder import output_problem, report_outputs, write_replacing
from redjury.report.row_check import read_as_written
from redjury.report.terminal import escape_control, escape_name
from redjury.stats.small_sample import correction_note, shown_interval

Table = tuple[str, Sequence[str], list[Sequence[str]]]
#: Why a breakdown's interval can differ from the probe × detector table's for the same outputs.
BREAKDOWN_INTERVALS = "Wilson intervals, not corrected for detector error"


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.1f}%"


def _interval(row: dict[str, Any]) -> str:
    # garak's interval where computed, else the small-sample one (stats.small_sample).
    shown = shown_interval(row)
    if shown is None:
        return "—"
    note = correction_note(row)
    return f"[{shown[0] * 100:.1f}%, {shown[1] * 100:.1f}%]" + (f" {note}" if note else "")


def _status(row: dict[str, Any]) -> str:
    if not row.get("total_evaluated"):
        return "SKIP"
    return "FAIL" if row.get("fails") else "PASS"


def summary_tables(data: ReportData) -> list[Table]:
    """(title, header, rows) for every breakdown the report has; cells are plain text."""
    d = data.digest
    tables: list[Table] = []
    head = ("", "probe", "detector", "ASR", "interval", "fails", "evaluated", "inconclusive")
    rows: list[Sequence[str]] = [
        (
            _status(p),
            p["probe"],
            p["detector"],
            _pct(p["asr"]),
            _interval(p),
            str(p["fails"]),
            str(p["total_evaluated"]),
            str(p["nones"]),
        )
        for p in d["probe_detector"]
    ]
    tables.append(("Attack-success rate per probe × detector (worst first)", head, rows))
    for key in ("intent", "hazard", "generator"):
        entries = [e for e in d.get(f"by_{key}") or [] if e["total_evaluated"]]
        if entries:
            tables.append(
                (
                    f"By {key} ({BREAKDOWN_INTERVALS})",
                    (key, "detector", "ASR", "interval", "fails", "evaluated"),
                    [
                        (
                            e[key],
                            e["detector"],
                            _pct(e["asr"]),
                            _interval(e),
                            str(e["fails"]),
                            str(e["total_evaluated"]),
                        )
                        for e in entries
                    ],
                )
            )
    matrix = d["technique_intent"]
    if matrix["probes"] and matrix["intents"]:
        mrows: list[Sequence[str]] = []
        for probe, cells in zip(matrix["probes"], matrix["cells"], strict=True):
            mrows.append(
                (
                    probe,
                    *(
                        ""
                        if c is None
                        else f"{_pct(c['asr'])} ({c['fails']}/{c['total_evaluated']})"
                        for c in cells
                    ),
                )
            )
        tables.append(
            (
                "Techniques × intents (an output is a hit when any detector failed it)",
                ("probe", *matrix["intents"]),
                mrows,
            )
        )
    panel = d.get("judge_panel")
    if panel:
        tables.append(
            (
                "Judge panel",
                ("judge", "unsafe", "safe", "abstained", "abstention rate", "abstained because"),
                [
                    (
                        j["judge"],
                        str(j["unsafe"]),
                        str(j["safe"]),
                        str(j["abstained"]),
                        _pct(j["abstention_rate"]),
                        describe_causes(j.get("abstained_by_cause") or {}) or "-",
                    )
                    for j in panel["judges"]
                ],
            )
        )
        if panel["agreement"]:
            tables.append(
                (
                    "Agreement between judges",
                    ("judges", "both voted", "agreed", "agreement"),
                    [
                        (
                            " × ".join(a["judges"]),
                            str(a["both_voted"]),
                            str(a["agreed"]),
                            _pct(a["agreement"]),
                        )
                        for a in panel["agreement"]
                    ],
                )
            )
        tables.extend(_judge_cost_tables(panel))
    return tables


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _judge_cost_tables(panel: dict[str, Any]) -> list[Table]:
    """The cascade's decided outputs and saved calls; the priced judges' cost and savings."""
    tables: list[Table] = []
    cascade = panel.get("cascade")
    if cascade:
        tables.append(
            (
                "Cascade (outputs decided HELD by detectors, the judges not asked)",
                ("outputs decided", "judge calls saved"),
                [(str(cascade["outputs"]), str(cascade["calls_saved"]))],
            )
        )
    cost = panel.get("cost")
    if cost:
        tables.append(
            (
                f"Judge cost ({cost['note']})",
                ("judge", "calls", "cost", "saved by the cache", "saved by the cascade"),
                [
                    (
                        j["judge"],
                        str(j.get("calls", "")),
                        _money(j["cost"]),
                        _money(j["cache_saved"]),
                        _money(j["cascade_saved"]),
                    )
                    for j in [*cost["judges"], {"judge": "total", **cost["total"]}]
                ],
            )
        )
    return tables


# Markdown that could turn a name from the input into markup: HTML (<img onerror>, <script>),
# links and images ([x](…), <http://…>, bare http://…), emphasis, code, strikethrough,
# @mentions, and the pipe that ends a table cell. `&`, `<` and `>` become entities, the
# rest takes a backslash; an underscore inside a word (pii_leak) is left as it is.
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_SPECIAL = re.compile(r"[\\`*\[\]|~@:!]|(?<!\w)_|_(?!\w)|[&<>]")


def _md_special(m: re.Match[str]) -> str:
    ch = m.group()
    return _MD_ENTITIES.get(ch) or "\\" + ch


def md_cell(text: str) -> str:
    """A table cell's text as inert Markdown: rendered, it reads exactly as `text` (control
    characters shown as escapes, line breaks as spaces)."""
    return _MD_SPECIAL.sub(_md_special, escape_control(str(text)))


def markdown_summary(data: ReportData) -> str:
    """GitHub-flavoured Markdown for a pull-request comment."""
    d = data.digest
    failing = [p for p in d["probe_detector"] if p["fails"]]
    lines = [
        "## redjury results",
        "",
        f"{d['attempts']} attempts, {d['outputs']} outputs, {data.hits_total} failing outputs; "
        f"{len(failing)} of {len(d['probe_detector'])} probe × detector pairs failed.",
    ]
    for title, head, rows in summary_tables(data):
        lines += ["", f"### {title}", ""]
        lines.append("| " + " | ".join(md_cell(h) or " " for h in head) + " |")
        lines.append("|" + "|".join("---" for _ in head) + "|")
        for row in rows:
            lines.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def _stdout_to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def print_summary(out_dir: Path, markdown: Path | None = None) -> None:
    """Print the breakdowns as rich tables; with `markdown`, also write them there. A report
    edited into other shapes is a ValueError naming the row and field (`read_as_written`)."""
    with read_as_written(report_path_of(out_dir)):
        _print_summary(out_dir, markdown)


def _print_summary(out_dir: Path, markdown: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    if markdown is not None and (problem := output_problem(markdown, report_outputs(out_dir))):
        raise ValueError(f"--markdown {markdown}: {problem}")
    data = load_report(out_dir, hit_limit=0)
    if markdown is not None:  # first: a reader that stops early (`| head -1`) still gets it
        text = markdown_summary(data)
        write_replacing(markdown, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    # Piped or captured output keeps whole names instead of an 80-column cut.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    # rich exits 1 when the reader goes away (`| head -1`); the rest goes nowhere instead.
    console.on_broken_pipe = _stdout_to_devnull  # type: ignore[method-assign]
    styles = {"FAIL": "bold red", "PASS": "bold green", "SKIP": "bold yellow"}
    for title, head, rows in summary_tables(data):
        table = RichTable(title=title, title_justify="left")
        for h in head:
            # Headers hold intents from the input too: Text, so no rich markup either.
            table.add_column(Text(escape_name(h)))
        for row in rows:
            # Probe names and intents come from the input: no markup, no control characters,
            # no invisible or look-alike letters.
            table.add_row(*(Text(escape_name(c), style=styles.get(c, "")) for c in row))
        console.print(table)
    if markdown is not None:
        console.print(f"markdown: {escape_control(str(markdown))}", markup=False)
