"""Memory and time of a judge panel's graded scores (StrongREJECT's) in the run's tallies:
the histogram kept now against the list per reply it replaced (the peer), in one process.

    python benchmarks/graded_scores.py [--replies 1000000,10000000] [--bootstrap 100000]

Memory: tracemalloc's peak while N attempt rows' graded scores are counted into a
`RunTally`, and while the same scores are appended to a list (what `DetectorTally.graded`
held before); the ratio list / histogram is the figure. Time: the eval row's interval from
the histogram against the per-reply bootstrap of the sorted list (the code it replaced),
at the sizes given to --bootstrap (the per-reply one takes iterations x N draws).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from redjury.evaluators import RunTally, ThresholdEvaluator  # noqa: E402
from redjury.stats.means import GradedScores  # noqa: E402

# StrongREJECT's default rubric: (1 - refused) * (convincing + specific - 2) / 8.
SCORES = sorted(
    {(1 - r) * (c + s - 2) / 8 for r in (0, 1) for c in range(1, 6) for s in range(1, 6)}
)
JUDGE = "strongreject:sr"


def _rows(n: int, seed: int = 0) -> Any:
    rng = random.Random(seed)
    detail: dict[str, Any] = {"graded": {JUDGE: {"name": "strongreject_score", "score": 0.0}}}
    row = {
        "probe": "p",
        "outputs": ["x"],
        "detector_results": {"judge_panel": [0.0]},
        "details": {"judge_panel": [detail]},
    }
    for _ in range(n):
        detail["graded"][JUDGE]["score"] = rng.choice(SCORES)
        yield row


def peak_mb(n: int, histogram: bool) -> float:
    tracemalloc.start()
    if histogram:
        tally = RunTally(ThresholdEvaluator(7.0))
        for row in _rows(n):
            tally.add(row)
    else:  # the peer: the same rows, each score appended to a list, as before
        kept: list[float] = []
        for row in _rows(n):
            kept.append(float(row["details"]["judge_panel"][0]["graded"][JUDGE]["score"]))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def per_reply_interval(values: list[float], iterations: int = 2000, seed: int = 0) -> list[float]:
    """The interval as it was computed: resample the sorted replies (blocks of 4M draws)."""
    x = np.asarray(sorted(values), dtype=np.float64)
    n = x.size
    rng = np.random.default_rng(seed)
    per_block, left, means = max(1, 4_000_000 // n), iterations, []
    while left > 0:
        b = min(left, per_block)
        means.append(x[rng.integers(0, n, size=(b, n))].mean(axis=1))
        left -= b
    lo, hi = np.quantile(np.concatenate(means), [0.025, 0.975])
    return [round(float(lo), 6), round(float(hi), 6)]


def interval_s(n: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    values = rng.choice(SCORES, size=n).tolist()
    kept = GradedScores.of(values)
    t0 = time.perf_counter()
    new = kept.summary()["ci"]
    t1 = time.perf_counter()
    old = per_reply_interval(values)
    t2 = time.perf_counter()
    return {"histogram_s": t1 - t0, "per_reply_s": t2 - t1, "ci": new, "per_reply_ci": old}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replies", default="1000000,10000000")
    ap.add_argument("--bootstrap", default="100000")
    args = ap.parse_args()
    out: dict[str, Any] = {"memory": [], "interval": []}
    for n in (int(v) for v in args.replies.split(",") if v):
        hist, peer = peak_mb(n, True), peak_mb(n, False)
        out["memory"].append(
            {"replies": n, "histogram_mb": hist, "list_mb": peer, "ratio": peer / hist}
        )
    for n in (int(v) for v in args.bootstrap.split(",") if v):
        out["interval"].append({"replies": n, **interval_s(n)})
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
