"""Comparing two large runs (issue 42's goal: 1,000,000 attempts each in under 10 s and 500 MB).

    python benchmarks/compare_runs.py [--attempts N] [--runs N]   (prints JSON)

Writes two of the report tests' synthetic reports of N attempts (8 probes, 2 detectors, 2
outputs each, the same attempt ids, different seeds), then times `redjury.compare` on them in
a fresh process per run: the seconds of each run, their median and the largest peak RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "report"), str(ROOT / "tests" / "support")]

from report_fixtures import synthetic_report  # noqa: E402

GOAL_SECONDS, GOAL_MB = 10.0, 500.0
TIMED = """
import json, resource, sys, time
t0 = time.perf_counter()
import redjury
found = redjury.compare(sys.argv[1], sys.argv[2])
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "rows": len(found.rows)}))
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--attempts", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = synthetic_report(Path(tmp) / "base", args.attempts, seed=1)
        new = synthetic_report(Path(tmp) / "new", args.attempts, seed=2)
        size_mb = base.stat().st_size / 2**20
        runs = []
        for _ in range(args.runs):
            proc = subprocess.run(
                [sys.executable, "-c", TIMED, str(base), str(new)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs.append(json.loads(proc.stdout))
    seconds = [r["seconds"] for r in runs]
    peak = max(r["peak_mb"] for r in runs)
    result = {
        "attempts": args.attempts,
        "report_mb": round(size_mb, 1),
        "seconds": [round(s, 2) for s in seconds],
        "median_seconds": round(statistics.median(seconds), 2),
        "peak_rss_mb": round(peak, 1),
        "rows": runs[0]["rows"],
        "goal_met": statistics.median(seconds) < GOAL_SECONDS and peak < GOAL_MB,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
