"""The benchmark's own goal checks can fail: figures that miss a goal are reported as
missed (and the run exits 1), figures that meet it as met, and quick sizes leave the
whole-run speed goals unchecked and say so."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while built
    spec.loader.exec_module(module)
    return module


def sides(garak_s: float, cli_s: float) -> dict[str, list[dict]]:
    """Case 1's sides: garak at `garak_s`, both whole runs at `cli_s`, the rest 1 s."""
    runs = {
        name: [{"seconds": 1.0, "peak_tree_mb": 50.0}]
        for name in ("api_none", "api_default", "cli_as_run", "internal_ci", "internal_noci")
    }
    runs["garak_ci"] = runs["garak_noci"] = [{"seconds": garak_s, "peak_tree_mb": 70.0}]
    runs["cli_none"] = runs["cli_default"] = [{"seconds": cli_s, "peak_tree_mb": 150.0}]
    return runs


def whole_run_rows(rows):  # type: ignore[no-untyped-def]
    return [r for r in rows if r.measure.startswith("whole `redjury run`")]


def test_a_whole_run_under_ten_times_garak_is_a_missed_goal(bench) -> None:  # type: ignore[no-untyped-def]
    rows = bench.evaluation_rows(sides(garak_s=9.0, cli_s=1.0), 20_000, 10_000, full=True)
    checked = whole_run_rows(rows)
    assert len(checked) == 2 and all(r.met is False for r in checked)
    line, code = bench.outcome(rows)
    assert code == 1 and line.startswith("2 goal(s) missed")


def test_a_whole_run_at_ten_times_garak_meets_its_goal(bench) -> None:  # type: ignore[no-untyped-def]
    rows = bench.evaluation_rows(sides(garak_s=10.0, cli_s=1.0), 20_000, 10_000, full=True)
    assert all(r.met is True for r in whole_run_rows(rows))
    assert bench.outcome(rows) == ("all goals met", 0)


def test_quick_sizes_report_the_speed_goals_unchecked(bench) -> None:  # type: ignore[no-untyped-def]
    rows = bench.evaluation_rows(sides(garak_s=2.0, cli_s=1.0), 4_000, 10_000, full=False)
    checked = whole_run_rows(rows)
    assert all(r.met is None and "full size" in r.goal for r in checked)
    line, code = bench.outcome(rows)
    assert code == 0 and "2 goal(s) not checked" in line


def test_counts_that_differ_from_garaks_are_caught(bench) -> None:  # type: ignore[no-untyped-def]
    expected = {"passed": 3, "fails": 1, "nones": 1}
    same = {"counts": expected, "intents": {"a": 1}, "hitlog_rows": 1}
    runs = {
        name: [dict(same)]
        for name in ("garak_ci", "internal_ci", "garak_noci", "internal_noci", "cli_none")
    }
    assert bench.same_counts(runs, expected)
    runs["cli_none"] = [{"counts": {"passed": 4, "fails": 0, "nones": 1}}]
    assert not bench.same_counts(runs, expected)


def test_the_process_tree_sampler_sees_a_child_s_memory(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A parent that holds little and starts a child holding 200 MB: the tree's peak
    counts the child (a sampler of the parent alone would report a few MB)."""
    child = "b = bytearray(200 * 2**20); import time; time.sleep(1.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    done = bench.run_sampled([sys.executable, "-c", parent])
    assert done["rc"] == 0
    assert done["peak_tree_mb"] >= 200


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--attempts", "60", "--ci", "none"],
        ["api", "--attempts", "60", "--iterations", "50", "--detectors", "none"],
    ],
)
def test_the_worker_measures_what_case_1_times(args: list[str]) -> None:
    """The worker's commands run on the code as it is (a moved helper once broke the internal
    region unnoticed): every scored output is counted once and every fail has a hitlog row."""
    import json
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(BENCH / "redjury_worker.py"), *args], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    counts = result["counts"]
    assert counts["passed"] + counts["fails"] + counts["nones"] == 60 * 5
    assert counts["fails"] > 0
    if "hitlog_rows" in result:
        assert result["hitlog_rows"] == counts["fails"]
