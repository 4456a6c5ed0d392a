"""benchmarks/compare_runs.py's own checks: its goals can fail, and its memory figure is the
whole process tree's (no timing is asserted here: the figures are the benchmark's business)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest
from redjury_testing import REPO


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    # Loaded by path: tests/support has a compare_runs module of its own.
    spec = importlib.util.spec_from_file_location(
        "compare_runs_benchmark", REPO / "benchmarks" / "compare_runs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(bench: ModuleType, **changes: Any) -> dict[str, Any]:
    samples = {
        "wc_lines": [{"seconds": 0.2, "cpu_seconds": 0.1, "peak_mb": 3.0}],
        "orjson_lines": [{"seconds": 3.0, "cpu_seconds": 3.0, "peak_mb": 20.0}],
        "compare": [{"seconds": 6.0, "cpu_seconds": 6.0, "peak_mb": 200.0}],
    }
    for name, figures in changes.items():
        samples[name][0].update(figures)
    return {**bench.summarise(samples), "rows": 26, "expected_rows": bench.expected_rows()}


def test_a_result_within_every_goal_passes(bench: ModuleType) -> None:
    result = _result(bench)
    assert result["compare_over_orjson"] == 2.0 and result["compare_over_wc"] == 30.0
    assert result["compare_cpu_over_orjson_cpu"] == 2.0
    assert bench.goal_misses(result) == []


def test_each_missed_goal_is_named(bench: ModuleType) -> None:
    slow = bench.goal_misses(_result(bench, compare={"seconds": 12.0}))
    assert slow == [
        "compare took 12.0 s (goal < 10.0 s)",
        "compare took 4.0x the time orjson takes to parse the two reports (goal <= 3.0x)",
    ]
    big = bench.goal_misses(_result(bench, compare={"peak_mb": 512.0}))
    assert big == ["compare peaked at 512.0 MB (goal < 500.0 MB)"]
    fast_floor = bench.goal_misses(_result(bench, orjson_lines={"seconds": 1.5}))
    assert fast_floor == [
        "compare took 4.0x the time orjson takes to parse the two reports (goal <= 3.0x)"
    ]
    wrong = {**_result(bench), "rows": 20}
    assert bench.goal_misses(wrong) == ["compare gave 20 rows, not 26"]


def test_the_peak_counts_every_process_of_the_tree(bench: ModuleType) -> None:
    # A parent and its child each hold about 120 MB at the same time: the kernel's peak of
    # either is about 120 MB, the tree's about 240 MB.
    hold = "import time; b = bytearray(b'x') * (120 << 20); time.sleep({})"
    command = [
        sys.executable, "-c",
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {hold.format(3)!r}])\n"
        f"{hold.format(2)}\n"
        "child.wait()",
    ]  # fmt: skip
    found = bench.measure(command)
    assert found["peak_mb"] > 200
    assert found["seconds"] >= 2 and found["cpu_seconds"] > 0


def test_a_failing_command_is_reported(bench: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="failed"):
        bench.measure([sys.executable, "-c", "raise SystemExit(3)"])
