"""A rate-limited judge API: the scripted server allows N requests a second (429 without
Retry-After beyond that, as hosted APIs do) and answers after L seconds; redjury's panel judges
a fixed number of attempts at its defaults. Prints successful requests/s against N,
abstentions, 429s and how the endpoint's concurrency moved.

    python benchmarks/rate_limit.py --rate 50 --latency 0.2 --attempts 600
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "servers"))

from fault_server import FaultServer, Reply, rate_limited  # noqa: E402

from redjury.attempts import Attempt  # noqa: E402
from redjury.judges.config import EvaluationSpec  # noqa: E402
from redjury.judges.panel import JudgePanelDetector  # noqa: E402


async def judge_all(panel: JudgePanelDetector, n: int) -> tuple[float, int]:
    attempts = [Attempt(id=str(i), goal=f"g{i}", outputs=[f"o{i}"]) for i in range(n)]
    t0 = time.perf_counter()
    findings = await asyncio.gather(*(panel.adetect(a) for a in attempts))
    elapsed = time.perf_counter() - t0
    await panel.aclose()
    return elapsed, sum(1 for [f] in findings if f.details["abstained"])


def measure(rate: float, latency: float, attempts: int) -> dict:
    with FaultServer(rate_limited(rate, then=Reply("no", delay=latency))) as server:
        judge = {
            "name": "judge",
            "connection": {"base_url": server.openai_url},
            "generation": {"seed": 1},
        }
        spec = EvaluationSpec.model_validate({"judges": [judge]})  # defaults otherwise
        with tempfile.TemporaryDirectory() as tmp:
            panel = JudgePanelDetector.from_spec(
                spec, cache_path=Path(tmp) / "c.sqlite", use_cache=False
            )
            elapsed, abstained = asyncio.run(judge_all(panel, attempts))
            panel.close()
        limit = next(iter(panel.engine._endpoints.values())).limit
        answered = attempts - abstained
        return {
            "rate_allowed": rate,
            "latency_s": latency,
            "attempts": attempts,
            "seconds": round(elapsed, 2),
            "throughput": round(answered / elapsed, 1),
            "of_allowed": round(answered / elapsed / rate, 3),
            "abstained": abstained,
            "requests": server.count,
            "answered_429": server.count - answered,
            "concurrency_cuts": limit.lowered,
            "lowest_concurrency": limit.lowest,
            "final_concurrency": limit.current,
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=float, default=50.0, help="requests/s the server allows")
    p.add_argument("--latency", type=float, default=0.2, help="seconds per answer")
    p.add_argument("--attempts", type=int, default=600)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    for _ in range(args.runs):
        print(json.dumps(measure(args.rate, args.latency, args.attempts)), flush=True)


if __name__ == "__main__":
    main()
