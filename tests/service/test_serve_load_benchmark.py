"""The serve benchmark's own checks (benchmarks/serve_load.py): its goals read from a result,
and a short real run whose every request the services answer (no timing asserted here)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest
from redjury_testing import REPO


def _benchmark() -> ModuleType:
    path = REPO / "benchmarks" / "serve_load.py"
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("serve_load", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(**serve: Any) -> dict[str, Any]:
    floor = {"requests": 9000, "errors": 0, "flagged": 0, "requests_per_s": 1500.0, "p99_ms": 60}
    ok = {"requests": 9000, "errors": 0, "flagged": 5000, "requests_per_s": 1200.0, "p99_ms": 80}
    return {"results": {"echo_floor": floor, "serve_workers_1": {**ok, **serve}}}


def test_check_passes_a_result_meeting_every_goal():
    assert _benchmark().check(_result()) == []


def test_check_names_each_goal_missed():
    check = _benchmark().check
    assert check(_result(requests_per_s=999.0)) == ["serve_workers_1: 999.0 requests/s < 1000"]
    assert check(_result(p99_ms=100.5)) == ["serve_workers_1: p99 100.5 ms > 100 ms"]
    assert check(_result(errors=3)) == ["serve_workers_1: 3 errors in 9000 requests"]
    assert check(_result(flagged=0)) == ["serve_workers_1: no reply flagged"]


@pytest.mark.slow
def test_a_short_run_answers_every_request_and_flags_leaks():
    bench = _benchmark()
    args = argparse.Namespace(
        clients=4,
        seconds=1.0,
        warmup=0.2,
        workers=[1, 2],
        uvloop_path=None,
        no_access_log=False,
        rounds=1,
    )
    result = bench.run(args)
    assert set(result["results"]) == {"echo_floor", "serve_workers_1", "serve_workers_2"}
    for name, r in result["results"].items():
        assert r["requests"] > 0 and r["errors"] == 0, name
        assert r["generator_cpu_share"] > 0 and r["p50_ms"] <= r["p99_ms"], name
    assert result["results"]["echo_floor"]["flagged"] == 0
    assert result["results"]["serve_workers_1"]["flagged"] > 0
    assert result["results"]["serve_workers_2"]["flagged"] > 0
