"""`redjury summary`: rich tables on the terminal and Markdown for a pull-request comment."""

from __future__ import annotations

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
