"""The report outputs from the command line: --html, --junit, summary, report, and the exit-4 gates."""

from __future__ import annotations

from pathlib import Path

import pytest
from redjury_testing import REPO, redjury

EXAMPLE = REPO / "examples" / "attempts.jsonl"
# The example's worst probe × detector ASR is 50% (1/2); its best failing one is 28.57%.


def test_run_writes_html_and_junit_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = redjury("run", EXAMPLE, "--out", out, "--html", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 0, proc.stderr
    assert (out / "redjury.report.html").read_text().startswith("<!DOCTYPE html>")
    assert "<testsuite" in (tmp_path / "j.xml").read_text()


@pytest.mark.parametrize(("rate", "code"), [("0.3", 4), ("0.5", 0), ("1.0", 0), ("0.49", 4)])
def test_fail_on_asr_exit_codes(tmp_path: Path, rate: str, code: int) -> None:
    proc = redjury("run", EXAMPLE, "--out", tmp_path / "o", "--fail-on-asr", rate)
    assert proc.returncode == code, proc.stdout + proc.stderr
    if code:
        assert "exceeds" in proc.stdout + proc.stderr


def test_report_and_summary_commands_read_a_finished_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redjury("run", EXAMPLE, "--out", out).returncode == 0
    rep = redjury("report", out)
    assert rep.returncode == 0, rep.stderr
    assert (out / "redjury.report.html").exists()
    summ = redjury("summary", out, "--markdown", tmp_path / "s.md")
    assert summ.returncode == 0, summ.stderr
    assert "pii_leak" in (tmp_path / "s.md").read_text()


def test_report_of_a_folder_without_a_report_is_a_usage_error(tmp_path: Path) -> None:
    proc = redjury("report", tmp_path)
    assert proc.returncode == 2 and "redjury: error:" in proc.stderr
