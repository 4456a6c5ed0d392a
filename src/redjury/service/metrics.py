"""The service's counters and latency histograms, written in Prometheus' text format."""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from typing import Any

# Upper bounds (seconds) of the latency histogram's buckets.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# The judge panel's counters shown, under the metric names they get.
JUDGE_COUNTERS = {
    "calls": "redjury_judge_calls_total",
    "abstentions": "redjury_judge_abstentions_total",
    "cached": "redjury_judge_cache_hits_total",
    "errors": "redjury_judge_errors_total",
}


class ServiceMetrics:
    """Requests by endpoint and status, verdicts by detector, latency by endpoint."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self.verdicts: Counter[tuple[str, str]] = Counter()
        self.in_flight = 0
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        self.requests[(endpoint, status)] += 1
        # One count in the first bucket it fits (the last: +Inf); render() sums them up.
        buckets = self._buckets.setdefault(endpoint, [0] * (len(LATENCY_BUCKETS) + 1))
        buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self._sums[endpoint] = self._sums.get(endpoint, 0.0) + seconds

    def count_verdicts(self, row: dict[str, Any]) -> None:
        """Count every verdict label of one attempt row."""
        for detector, labels in row.get("verdicts", {}).items():
            for label in labels:
                self.verdicts[(detector, label)] += 1

    def render(self, judge_stats: dict[str, int]) -> str:
        """Every metric in Prometheus' text exposition format."""
        lines = ["# TYPE redjury_requests_total counter"]
        for (endpoint, status), n in sorted(self.requests.items()):
            lines.append(f'redjury_requests_total{{endpoint="{endpoint}",status="{status}"}} {n}')
        lines.append("# TYPE redjury_verdicts_total counter")
        for (detector, label), n in sorted(self.verdicts.items()):
            lines.append(
                f'redjury_verdicts_total{{detector="{_label(detector)}",verdict="{label}"}} {n}'
            )
        for key, name in JUDGE_COUNTERS.items():
            lines += [f"# TYPE {name} counter", f"{name} {judge_stats.get(key, 0)}"]
        lines += [
            "# TYPE redjury_in_flight_requests gauge",
            f"redjury_in_flight_requests {self.in_flight}",
        ]
        lines += self._latency_lines()
        return "\n".join(lines) + "\n"

    def _latency_lines(self) -> list[str]:
        lines = ["# TYPE redjury_request_seconds histogram"]
        for endpoint, counts in sorted(self._buckets.items()):
            buckets = list(itertools.accumulate(counts))
            name = f'redjury_request_seconds_bucket{{endpoint="{endpoint}"'
            for bound, n in zip(LATENCY_BUCKETS, buckets, strict=False):
                lines.append(f'{name},le="{bound}"}} {n}')
            lines.append(f'{name},le="+Inf"}} {buckets[-1]}')
            lines.append(
                f'redjury_request_seconds_sum{{endpoint="{endpoint}"}} {self._sums[endpoint]:.6f}'
            )
            lines.append(f'redjury_request_seconds_count{{endpoint="{endpoint}"}} {buckets[-1]}')
        return lines


def _label(value: str) -> str:
    """A label value escaped as the text format asks (detector names come from plugins)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
