"""The comparison's files written together: the JSONL, and when asked the Markdown, JUnit and
HTML pages."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redjury.report.compare import comparison_jsonl, junit_comparison, markdown_comparison
from redjury.report.compare_html import write_comparison_html


def write_outputs(
    rows: Sequence[dict[str, Any]],
    base: str,
    new: str,
    *,
    jsonl: Path,
    markdown: Path | None = None,
    junit: Path | None = None,
    html: Path | None = None,
) -> list[str]:
    """Write the JSONL and, when asked, the Markdown, JUnit and HTML files; `what: path`
    for each."""
    jsonl.write_text(comparison_jsonl(rows), encoding="utf-8")
    written = [f"comparison: {jsonl}"]
    if markdown is not None:
        markdown.write_text(markdown_comparison(rows, base, new), encoding="utf-8")
        written.append(f"markdown: {markdown}")
    if junit is not None:
        tree = junit_comparison(rows)
        ET.indent(tree)
        tree.write(junit, encoding="utf-8", xml_declaration=True)
        written.append(f"junit: {junit}")
    if html is not None:
        write_comparison_html(rows, base, new, html)
        written.append(f"html: {html}")
    return written
