"""`redjury summary`: rich tables on the terminal and Markdown for a pull-request comment."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest
from redjury_testing import rows_of, write_jsonl
from report_fixtures import run_example

from redjury.report.outputs import print_summary


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_example(tmp_path_factory.mktemp("summary") / "run")


def test_markdown_has_every_probe_detector_pair(
    example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = tmp_path / "comment.md"
    print_summary(example, md)
    text = md.read_text(encoding="utf-8")
    assert text.startswith("## redjury results")
    for row in rows_of(example / "redjury.report.jsonl", "eval"):
        assert f"| {row['probe']} | {row['detector']} |" in text
    assert "### By intent" in text and "### Techniques × intents" in text
    assert "Attack-success rate per probe × detector" in capsys.readouterr().out


def test_pipes_and_newlines_in_names_do_not_break_the_markdown_table(tmp_path: Path) -> None:
    header = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    ev = {
        "entry_type": "eval",
        "probe": "a|b\nc",
        "detector": "d",
        "passed": 1,
        "fails": 1,
        "nones": 0,
        "total_evaluated": 2,
    }
    write_jsonl(tmp_path / "redjury.report.jsonl", [header, ev])
    md = tmp_path / "s.md"
    print_summary(tmp_path, md)
    line = next(x for x in md.read_text().splitlines() if "a\\|b" in x)
    assert line.count(" | ") == 7 and "50.0%" in line


def test_a_folder_without_a_report_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no redjury report"):
        print_summary(tmp_path, None)


HOSTILE = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
    "[click](javascript:alert(3))",
    "![pixel](https://evil.example/p.png)",
    "**bold** _em_ `code` ~~gone~~ a|b @someone <https://evil.example>",
    "esc\x1b[31mred\rline\nbreak",
)


def _hostile_report(folder: Path) -> Path:
    header = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    rows: list[dict[str, object]] = [header]
    for i, name in enumerate(HOSTILE):
        rows.append(
            {
                "entry_type": "attempt",
                "id": f"a{i}",
                "probe": name,
                "intent": name,
                "hazard": name,
                "outputs": ["x"],
                "detector_results": {name: [1.0]},
            }
        )
        rows.append(
            {
                "entry_type": "eval",
                "probe": name,
                "detector": name,
                "passed": 0,
                "fails": 1,
                "nones": 0,
                "total_evaluated": 1,
                "total_processed": 1,
            }
        )
    write_jsonl(folder / "redjury.report.jsonl", rows)
    return folder


def test_names_from_the_input_render_as_text_in_the_markdown(tmp_path: Path) -> None:
    """Rendered as GitHub renders a comment (tables, raw HTML allowed), every hostile name
    is a cell of plain text: no tag, link, image or emphasis, and the table keeps its shape."""
    from markdown_it import MarkdownIt

    md = tmp_path / "comment.md"
    print_summary(_hostile_report(tmp_path), md)
    source = md.read_text(encoding="utf-8")
    assert "\x1b" not in source and "\r" not in source
    html = (
        MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(source)
    )
    tags = set(re.findall(r"</?([a-z0-9]+)", html))
    assert tags <= {"h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td"}, tags
    for row in re.findall(r"<tr>(.*?)</tr>", html, re.S):
        assert row.count("<td") + row.count("<th") in (2, 5, 6, 7, 8), row
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", html))
    for name in HOSTILE[:5]:
        assert name in text, f"{name!r} lost its text"


def test_the_terminal_summary_prints_names_without_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    print_summary(_hostile_report(tmp_path), None)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\\x1b[31mred" in out


def test_the_terminal_summary_prints_look_alike_and_invisible_names_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        globals(), "HOSTILE", ("leak.system", "le\u0430k.system", "leak.sys\u200btem")
    )
    print_summary(_hostile_report(tmp_path), None)
    out = capsys.readouterr().out
    assert "le\\u0430k.system" in out and "leak.sys\\u200btem" in out
    assert "\u0430" not in out and "\u200b" not in out
