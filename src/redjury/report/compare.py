"""Writers of a comparison of two runs: JSONL, a terminal table, Markdown and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from redjury.report.jsonl import dumps

_Row = TypeVar("_Row", bound=Mapping[str, Any])

# Regressions first, then improvements, then the rest; within each, the smallest p first.
_ORDER = {"regression": 0, "improvement": 1, "no_change": 2, "not_compared": 3}
HEAD = ("verdict", "scope", "probe / intent", "detector", "BASE ASR", "NEW ASR", "NEW − BASE",
        "interval", "p adj.", "paired")  # fmt: skip


def comparison_jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(dumps(row) + "\n" for row in rows)


def ordered(rows: Sequence[_Row]) -> list[_Row]:
    """Regressions first, then improvements, no change, not compared; smallest p first."""
    return sorted(
        rows,
        key=lambda r: (
            _ORDER.get(r["verdict"], 9),
            r["p_adjusted"] if r["p_adjusted"] is not None else 2.0,
            r["scope"] != "probe",
        ),
    )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _signed_pp(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f} pp"


def table_cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    """One row of the comparison table as plain text cells (HEAD's columns)."""
    name = row["probe"] if row["scope"] == "probe" else row["intent"] or "(all)"
    interval = "—"
    if row["difference_lower"] is not None:
        interval = f"[{_signed_pp(row['difference_lower'])}, {_signed_pp(row['difference_upper'])}]"
    p = row["p_adjusted"]
    return (
        row["verdict"],
        row["scope"],
        str(name),
        str(row["detector"]),
        f"{_pct(row['base_asr'])} ({row['base_fails']}/{row['base_outputs']})",
        f"{_pct(row['new_asr'])} ({row['new_fails']}/{row['new_outputs']})",
        _signed_pp(row["difference"]),
        interval,
        "—" if p is None else f"{p:.3g}",
        f"yes ({row['pairs']})" if row["paired"] else "no",
    )


def summary_line(rows: Sequence[Mapping[str, Any]]) -> str:
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in _ORDER}
    first = rows[0] if rows else {}
    return (
        f"{counts['regression']} regressions, {counts['improvement']} improvements, "
        f"{counts['no_change']} unchanged, {counts['not_compared']} not compared "
        f"({first.get('adjust', 'holm')}-adjusted at {1 - first.get('confidence', 0.95):.2g}, "
        f"margin {first.get('margin', 0.0):g})"
    )


def print_comparison(rows: Sequence[dict[str, Any]], base: str, new: str) -> None:
    """The comparison as a rich table on standard output, regressions first."""
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from redjury.report.terminal import escape_control

    console = Console() if sys.stdout.isatty() else Console(width=200)
    styles = {"regression": "bold red", "improvement": "bold green"}
    title = f"NEW − BASE attack-success rate (BASE {base}, NEW {new})"
    table = Table(title=Text(escape_control(title)), title_justify="left")
    for head in HEAD:
        table.add_column(head)
    for row in ordered(rows):
        cells = table_cells(row)
        style = styles.get(row["verdict"], "")
        table.add_row(*(Text(escape_control(c), style=style) for c in cells))
    console.print(table)
    console.print(summary_line(rows), markup=False)
    if any(r.get("different_judges") for r in rows):
        console.print("the runs were judged differently: every row is marked", markup=False)


def markdown_comparison(rows: Sequence[dict[str, Any]], base: str, new: str) -> str:
    """GitHub-flavoured Markdown for a pull-request comment, regressions first."""
    from redjury.report.summary import md_cell

    lines = [
        "## redjury compare",
        "",
        md_cell(f"BASE {base} → NEW {new}: {summary_line(rows)}."),
        "",
        "| " + " | ".join(md_cell(h) for h in HEAD) + " |",
        "|" + "|".join("---" for _ in HEAD) + "|",
    ]
    for row in ordered(rows):
        lines.append("| " + " | ".join(md_cell(c) for c in table_cells(row)) + " |")
    if any(r.get("different_judges") for r in rows):
        lines += ["", "The runs were judged differently: every row is marked."]
    return "\n".join(lines) + "\n"


def junit_comparison(rows: Sequence[dict[str, Any]]) -> ET.ElementTree:
    """<testsuites> with a <testsuite> per scope and a <testcase> per row: failed on a
    regression, skipped when not compared."""
    from redjury.report.junit import xml_text

    root = ET.Element("testsuites", name="redjury compare")
    suites: dict[str, ET.Element] = {}
    for row in rows:
        scope = row["scope"]
        suite = suites.get(scope)
        if suite is None:
            suite = suites[scope] = ET.SubElement(root, "testsuite", name=scope)
        cells = table_cells(row)
        case = ET.SubElement(
            suite, "testcase", classname=xml_text(cells[2]), name=xml_text(cells[3]), time="0"
        )
        message = xml_text(
            f"NEW − BASE {cells[6]} {cells[7]}, BASE {cells[4]}, NEW {cells[5]}, p adj. {cells[8]}"
        )
        if row["verdict"] == "regression":
            ET.SubElement(case, "failure", message=message, type="Regression").text = message
        elif row["verdict"] == "not_compared":
            ET.SubElement(case, "skipped", message="scored in one run only")
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", "0")
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    return ET.ElementTree(root)
