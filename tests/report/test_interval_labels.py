"""An interval corrected for detector error says so wherever it is shown (terminal, summary,
Markdown, HTML), naming Se/Sp and their source; the breakdowns say their intervals are
Wilson's, uncorrected, which is why the same outputs can get another interval there."""

from __future__ import annotations

from pathlib import Path

import pytest
from redjury_testing import REPO, redjury, rows_of

from redjury.stats.small_sample import applied_correction

NOTE = "corrected for detector error (Se 0.90, Sp 0.95 from reporting.detector_metrics)"


@pytest.fixture(scope="module")
def corrected_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("corrected")
    config = tmp / "c.yaml"
    config.write_text(
        "detectors: [{type: pii_leak}, {type: jailbreak_heuristic}]\n"
        "reporting:\n  seed: 3\n  bootstrap_min_sample_size: 5\n"
        "  detector_metrics: {pii_leak: {se: 0.9, sp: 0.95}}\n"
    )
    out = tmp / "out"
    proc = redjury(
        "run", REPO / "examples" / "attempts.jsonl", "--config", config, "--out", out, "--html"
    )
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def test_the_terminal_marks_corrected_intervals_only(corrected_run: tuple[Path, str]) -> None:
    out, stdout = corrected_run
    corrected = {
        (r["probe"], r["detector"])
        for r in rows_of(out / "redjury.report.jsonl", "eval")
        if applied_correction(r) is not None
    }
    assert {d for _, d in corrected} == {"pii_leak"} and len(corrected) >= 3
    lines = [ln for ln in stdout.splitlines() if "%]" in ln]
    assert len(lines) > len(corrected)
    for line in lines:
        probe, detector = line.split()[0], line.split()[1].rstrip(":")
        assert (NOTE in line) == ((probe, detector) in corrected), line


def test_summary_markdown_and_html_mark_them_and_label_the_breakdowns(
    corrected_run: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = corrected_run
    md = tmp_path / "s.md"
    proc = redjury("summary", out, "--markdown", md)
    assert proc.returncode == 0, proc.stderr
    for text in (proc.stdout, md.read_text()):
        assert "Se 0.90, Sp 0.95" in " ".join(text.split())
        assert "By intent (Wilson intervals, not corrected for detector error)" in " ".join(
            text.split()
        )
    html = (out / "redjury.report.html").read_text()
    assert NOTE in html
    assert "Wilson intervals, not corrected for detector error." in html
    assert "the same outputs can get a different interval there" in html


def test_an_uncorrected_run_shows_no_note(tmp_path: Path) -> None:
    proc = redjury("run", REPO / "examples" / "attempts.jsonl", "--out", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    assert "%]" in proc.stdout
    assert "corrected for" not in proc.stdout
