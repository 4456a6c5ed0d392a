"""The engine's budget: ≤ 0.6 ms client CPU per judge call and ≥ 90 % of ideal throughput at
64 in flight against a server that takes 200 ms per answer (the server runs in its own process)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redjury.attempts import Attempt
from redjury.judges.config import EvaluationSpec
from redjury.judges.panel import JudgePanelDetector

SERVER = Path(__file__).resolve().parents[1] / "servers" / "fault_server.py"
DELAY, IN_FLIGHT, CALLS = 0.2, 64, 640


async def measure(port: int) -> tuple[float, float]:
    spec = EvaluationSpec.model_validate(
        {
            "judges": [
                {
                    "name": "bench",
                    "connection": {"base_url": f"http://127.0.0.1:{port}/v1"},
                    "generation": {"seed": 1},
                }
            ],
            "max_concurrency": IN_FLIGHT,
            "per_endpoint_concurrency": IN_FLIGHT,
        }
    )
    panel = JudgePanelDetector.from_spec(spec, use_cache=False)
    text = "A reply long enough to look like a real one. " * 20
    attempts = [
        Attempt(id=str(i), goal=f"goal {i}", outputs=[f"{i} {text}"])
        for i in range(CALLS + IN_FLIGHT)
    ]
    # Warm-up wave: opening the connections is not what is measured.
    await asyncio.gather(*(panel.adetect(a) for a in attempts[:IN_FLIGHT]))
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(panel.adetect(a) for a in attempts[IN_FLIGHT:]))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    await panel.aclose()
    assert panel.stats()["requests"] == CALLS + IN_FLIGHT
    ideal = CALLS / IN_FLIGHT * DELAY
    return cpu / CALLS * 1000, ideal / wall


@pytest.mark.slow
def test_engine_cpu_and_throughput_budget():
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--delay", str(DELAY)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        results = []
        # A shared CI machine can stall any one run; the budget must hold in one of three.
        for _ in range(3):
            cpu_ms, ratio = asyncio.run(measure(port))
            results.append((round(cpu_ms, 3), round(ratio, 3)))
            if cpu_ms <= 0.6 and ratio >= 0.9:
                break
        else:
            pytest.fail(f"(ms CPU per call, share of ideal throughput) per run: {results}")
    finally:
        proc.terminate()
        proc.wait(10)
