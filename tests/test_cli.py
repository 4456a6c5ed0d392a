"""The command line's first-day errors: one line, one prefix, exit 2, naming what is wrong."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from redjury_testing import REPO, redjury, rows_of

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.detectors.pii import PIILeakDetector

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("redjury: error: "), stderr
    return lines[0]


def test_a_folder_given_as_input_says_it_is_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    proc = redjury("run", folder, "--out", tmp_path / "out")
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert f"{folder}: is a folder" in line and "no such" not in line


def test_out_naming_an_existing_file_is_a_usage_error(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a folder\n")
    for args in (("run", EXAMPLE), ("audit", "--config", tmp_path / "none.yaml")):
        proc = redjury(*args, "--out", taken)
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"--out {taken}: is a file" in one_error_line(proc.stderr)
    assert taken.read_text() == "not a folder\n"


def test_calibrate_names_the_missing_report_and_the_problem(tmp_path: Path) -> None:
    proc = redjury("calibrate", "missing.jsonl", "--output", tmp_path / "c.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc.stderr) == "redjury: error: missing.jsonl: no such report file"
    proc = redjury("calibrate", tmp_path, "--output", tmp_path / "c.json")
    assert f"{tmp_path}: is a folder" in one_error_line(proc.stderr)


def test_click_usage_errors_carry_the_same_prefix_and_exit_2(tmp_path: Path) -> None:
    for args in (("run",), ("run", EXAMPLE, "--bogus"), ("run", EXAMPLE, "--seed", "x")):
        proc = redjury(*args, "--out", tmp_path / "out")
        assert proc.returncode == 2, (args, proc.stderr)
        line = one_error_line(proc.stderr)
        assert "run --help" in line
        assert "Error:" not in proc.stderr and "╭" not in proc.stderr


def test_run_help_keeps_every_option_name_whole_at_80_columns() -> None:
    proc = redjury("run", "--help", env={"COLUMNS": "80"})
    assert proc.returncode == 0
    assert "…" not in proc.stdout
    for name in (
        "--eval-threshold",
        "--eval_threshold",
        "--narrow_output",
        "--confidence-interval-method",
        "--confidence_interval_method",
        "--bootstrap-num-iterations",
        "--bootstrap_num_iterations",
        "--bootstrap-confidence-level",
        "--bootstrap_min_sample_size",
        "--fail-on-errors",
    ):
        assert re.search(rf"{re.escape(name)}\b", proc.stdout), name


def test_pii_leak_listing_agrees_with_the_rule_for_an_email_alone() -> None:
    proc = redjury("detectors", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    (pii,) = [d for d in json.loads(proc.stdout) if d["name"] == "pii_leak"]
    finding = PIILeakDetector().detect(Attempt(id="a", outputs=["write to ann@example.org"]))[0]
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert "email address alone is INCONCLUSIVE" in pii["description"]
    assert "or email" not in pii["description"]


def _entry(tmp_path: Path, before: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The `redjury` command's own entry point, after `before` ran in the same process."""
    code = f"import sys\n{before}\nfrom redjury.cli import entry\nsys.argv = ['redjury', *{[str(a) for a in args]!r}]\nentry()\n"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )


def test_the_command_exits_with_its_status_its_output_written_and_exit_handlers_run(
    tmp_path: Path,
) -> None:
    """`entry` skips the interpreter's teardown, not what an exit owes: the status, the
    buffered output, the exit handlers (a local Ray cluster's stop, the logs' flush)."""
    marker = tmp_path / "handler-ran"
    before = (
        f"import atexit, pathlib\natexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')"
    )
    proc = _entry(tmp_path, before, "run", EXAMPLE, "-o", tmp_path / "out", "--fail-on-asr", "0")
    assert proc.returncode == 4, proc.stderr
    assert "gate failed: " in proc.stdout.splitlines()[-1] and proc.stdout.endswith("\n")
    assert marker.read_text() == "yes"
    assert rows_of(tmp_path / "out" / "redjury.report.jsonl", "completion")
    proc = _entry(tmp_path, "", "run", tmp_path / "missing.jsonl", "-o", tmp_path / "o2")
    assert proc.returncode == 2 and "missing.jsonl" in proc.stderr


def test_the_command_waits_for_a_thread_still_running_as_python_does(tmp_path: Path) -> None:
    marker = tmp_path / "thread-done"
    before = (
        "import pathlib, threading, time\n"
        f"def late():\n    time.sleep(0.5)\n    pathlib.Path({str(marker)!r}).write_text('done')\n"
        "threading.Thread(target=late).start()"
    )
    proc = _entry(tmp_path, before, "--help")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "done"


def test_the_command_skips_the_interpreters_teardown(tmp_path: Path) -> None:
    """What makes its exit fast: objects still alive at the end are not freed one by one
    (a finaliser on one never runs), where `main`, for callers in Python, exits as usual."""
    marker = tmp_path / "freed"
    before = (
        "import pathlib\n"
        "class Kept:\n"
        f"    def __del__(self):\n        pathlib.Path({str(marker)!r}).write_text('freed')\n"
        "kept = Kept()"
    )
    assert _entry(tmp_path, before, "--help").returncode == 0
    assert not marker.exists()
    code = f"{before}\nimport sys\nfrom redjury.cli import main\nsys.argv = ['redjury', '--help']\nmain()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and marker.read_text() == "freed"


def test_command_line_overrides_leave_what_the_file_did_not_set_unset(tmp_path: Path) -> None:
    """Overrides are applied to what the file set, not to a dump of every default: a judge's
    generation fields the file left out stay unset (a source's own default then applies)."""
    from redjury.cli import apply_overrides
    from redjury.config import load_config

    config = tmp_path / "c.yaml"
    config.write_text(
        json.dumps(
            {
                "detectors": [{"type": "latency", "budget_ms": 5}],
                "evaluation": {"judges": [{"name": "m", "generation": {"seed": 3}}]},
            }
        )
    )
    loaded = load_config(config)
    cfg = apply_overrides(loaded, {"evaluator.threshold": 0.25, "_detectors": []})
    assert cfg.evaluator.threshold == 0.25
    [judge] = cfg.evaluation.judges
    assert judge.generation.model_fields_set == {"seed"} and judge.generation.seed == 3
    assert judge.scoring.model_fields_set == set()
    assert (
        cfg.model_dump()
        == loaded.model_copy(
            update={"evaluator": loaded.evaluator.model_copy(update={"threshold": 0.25})}
        ).model_dump()
    )


def test_runs_started_in_the_same_second_get_folders_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runs/<time to the second>` was shared: the second run of a script resumed the first's
    folder (or was refused as a different configuration)."""
    from typer.testing import CliRunner

    from redjury import cli

    frozen = dt.datetime(2026, 12, 6, 5, 0, 0)
    clock = SimpleNamespace(datetime=SimpleNamespace(now=lambda: frozen), UTC=dt.UTC)
    monkeypatch.setattr(cli, "dt", clock)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for detectors in ("pii_leak", "prompt_injection", "pii_leak"):
        done = runner.invoke(cli.app, ["run", str(EXAMPLE), "--detectors", detectors])
        assert done.exit_code == 0, done.output
    dry = runner.invoke(cli.app, ["run", str(EXAMPLE), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    folders = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert folders == ["20261206-050000", "20261206-050000-2", "20261206-050000-3"]
    for name, detector in zip(folders, ("pii_leak", "prompt_injection", "pii_leak"), strict=True):
        rows = rows_of(tmp_path / "runs" / name / "redjury.report.jsonl", "eval")
        assert {r["detector"] for r in rows} == {detector}
    assert "runs/20261206-050000-4" in dry.output
