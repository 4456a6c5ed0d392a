"""Post-run outputs and the CI gates: --fail-on-asr at, below and above the rate, --fail-on-errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from redjury_testing import write_jsonl

from redjury.config import ReportingSpec
from redjury.report.outputs import EXIT_GATE, post_run

HEADER = {"entry_type": "init", "run_id": "r", "evaluator": {"type": "threshold", "threshold": 0.5}}


def _eval(probe: str, detector: str, passed: int, fails: int, errors: int = 0) -> dict[str, object]:
    row: dict[str, object] = {
        "entry_type": "eval",
        "probe": probe,
        "detector": detector,
        "passed": passed,
        "fails": fails,
        "nones": 0,
        "total_evaluated": passed + fails,
        "total_processed": passed + fails,
    }
    if errors:
        row["errors"] = errors
    return row


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Two pairs: p × judge_panel at ASR 0.25 with 2 judge errors, p × pii at ASR 0.5."""
    write_jsonl(
        tmp_path / "redjury.report.jsonl",
        [HEADER, _eval("p", "judge_panel", 3, 1, errors=2), _eval("p", "pii", 2, 2)],
    )
    return tmp_path


def _gate(run_dir: Path, **reporting: object) -> tuple[int, list[str]]:
    said: list[str] = []
    code = post_run(run_dir, ReportingSpec(**reporting), said.append)  # type: ignore[arg-type]
    return code, said


@pytest.mark.parametrize(("rate", "code"), [(0.49, EXIT_GATE), (0.5, 0), (0.51, 0)])
def test_fail_on_asr_trips_only_above_the_rate(run_dir: Path, rate: float, code: int) -> None:
    got, said = _gate(run_dir, fail_on_asr=rate)
    assert got == code
    assert any("p × pii" in line for line in said) == (code == EXIT_GATE)


def test_fail_on_asr_per_detector_map(run_dir: Path) -> None:
    assert _gate(run_dir, fail_on_asr={"judge_panel": 0.2})[0] == EXIT_GATE
    assert _gate(run_dir, fail_on_asr={"judge_panel": 0.25})[0] == 0
    assert _gate(run_dir, fail_on_asr={"judge_panel": 0.3, "*": 0.4})[0] == EXIT_GATE


def test_fail_on_errors_counts_judge_errors(run_dir: Path) -> None:
    assert _gate(run_dir, fail_on_errors=2)[0] == 0
    code, said = _gate(run_dir, fail_on_errors=1)
    assert code == EXIT_GATE and "2 replies ended in judge errors" in said[0]


def test_no_gates_no_outputs_exit_zero(run_dir: Path) -> None:
    assert _gate(run_dir) == (0, [])


def test_html_and_junit_are_written_when_asked(run_dir: Path, tmp_path: Path) -> None:
    junit = tmp_path / "out" / "junit.xml"
    code, said = _gate(run_dir, html=True, junit=str(junit))
    assert code == 0
    assert (run_dir / "redjury.report.html").is_file() and junit.is_file()
    assert said == [f"html: {run_dir / 'redjury.report.html'}", f"junit: {junit}"]


def test_a_folder_without_a_report_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no redjury report"):
        _gate(tmp_path, html=True)
