"""Case 8: `redjury.detect` on one reply, inline, beside the pipeline's cost per reply.

    python benchmarks/api_detect.py [--calls N] [--attempts N]   (prints JSON)

Per-call latency of `redjury.detect(reply)` with the default detectors (median and p99 over
`--calls` calls on varied replies), and the in-memory `redjury.evaluate` cost per reply on
`--attempts` attempts of the same replies, so a user can see what inline judging costs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import data  # benchmarks/data.py

import redjury


def replies(n: int) -> list[tuple[str, str]]:
    """(trigger, reply) pairs from the detector benchmark's generator (cards, SSNs, canaries)."""
    out = []
    for _, trigger, texts in data.reply_attempts(max(1, n // 5 + 1)):
        out.extend((trigger, t) for t in texts)
    random.Random(3).shuffle(out)
    return out[:n]


def detect_latency(calls: int) -> dict:
    pairs = replies(calls)
    redjury.detect("warm-up", notes={"triggers": ["X"]})  # builds and caches the detectors
    times = []
    for trigger, text in pairs:
        t0 = time.perf_counter_ns()
        redjury.detect(text, goal="explain the thing", notes={"triggers": [trigger]})
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return {
        "calls": len(times),
        "median_us": statistics.median(times) / 1000,
        "p99_us": times[int(0.99 * (len(times) - 1))] / 1000,
    }


def pipeline_per_reply(attempts: int) -> dict:
    pairs = replies(attempts * 5)
    rows = [
        {
            "id": f"a{i}",
            "goal": "explain the thing",
            "outputs": [t for _, t in pairs[i * 5 : i * 5 + 5]],
            "notes": {"triggers": [pairs[i * 5][0]]},
        }
        for i in range(attempts)
    ]
    t0 = time.perf_counter()
    redjury.evaluate(rows, {"reporting": {"seed": 1}})
    seconds = time.perf_counter() - t0
    return {"replies": attempts * 5, "per_reply_us": seconds / (attempts * 5) * 1e6}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--attempts", type=int, default=20_000)
    args = p.parse_args()
    print(json.dumps({**detect_latency(args.calls), **pipeline_per_reply(args.attempts)}))


if __name__ == "__main__":
    main()
