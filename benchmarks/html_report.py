"""Case 9: the HTML report of a large run, built from its report file (reported, no goal).

    python benchmarks/html_report.py [--attempts N] [--runs N]   (prints JSON)

Writes the report tests' synthetic report of N attempts (8 probes, 2 detectors, 2 outputs
each, a quarter of the scores failing), then times `redjury.write_html` on it: the seconds of
each run, their median, the peak RSS of this process and the size of the page.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The synthetic report is the one the HTML tests build (tests/report/report_fixtures.py).
sys.path[:0] = [str(ROOT / "tests" / "report"), str(ROOT / "tests" / "support")]

from report_fixtures import synthetic_report  # noqa: E402

from redjury.report.html import write_html  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--attempts", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        synthetic_report(out, args.attempts)
        seconds = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            page = write_html(out)
            seconds.append(time.perf_counter() - t0)
        size = page.stat().st_size
    print(
        json.dumps(
            {
                "attempts": args.attempts,
                "seconds": [round(s, 3) for s in seconds],
                "median_s": round(statistics.median(seconds), 3),
                "page_bytes": size,
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
