"""Judges that failed: a judge, or a model-backed detector, that gave no verdict on more than
the allowed share of its calls ends the run with exit 5, the reason said in words."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from redjury.report.terminal import printable

EXIT_JUDGES_FAILED = 5


@dataclass(frozen=True, slots=True)
class JudgeFailure:
    """One judge (`judge harmbench:a`) or detector (`detector guardrail`) over its limit."""

    name: str
    abstained: int
    total: int
    reason: str | None
    origin: str | None
    limit: float

    def line(self) -> str:
        reason = self.reason or "no reason given"
        where = f" from {self.origin}" if self.origin else ""
        if self.abstained >= self.total and self.name.startswith("judge "):
            return printable(f"{self.name}: every judge call failed: {reason}{where}")
        if self.abstained >= self.total:  # a detector: its reason says whether a call failed
            return printable(
                f"{self.name}: no verdict on any of its {self.total} outputs: {reason}{where}"
            )
        share = self.abstained / self.total
        return printable(
            f"{self.name}: no verdict on {self.abstained}/{self.total} calls ({share:.0%}, "
            f"more than the {self.limit:.0%} allowed); first: {reason}{where}"
        )


def judge_failures(
    panel: Mapping[str, Any] | None,
    evals: Iterable[Mapping[str, Any]],
    detector_reasons: Mapping[str, str],
    origins: Mapping[str, str],
    limit: float,
) -> list[JudgeFailure]:
    """Every panel judge, and every detector named in `origins` as model-backed, whose
    abstention rate exceeds `limit` (a judge that never answered included)."""
    found = []
    for judge in (panel or {}).get("judges", ()):
        total = judge["unsafe"] + judge["safe"] + judge["abstained"]
        if total and judge["abstained"] > limit * total:
            name = str(judge["judge"])
            reason = judge.get("first_abstention")
            found.append(
                JudgeFailure(
                    f"judge {name}", judge["abstained"], total, reason, origins.get(name), limit
                )
            )
    for detector, (nones, total) in _detector_counts(evals, origins).items():
        if total and nones > limit * total:
            reason = detector_reasons.get(detector)
            found.append(
                JudgeFailure(
                    f"detector {detector}", nones, total, reason, origins.get(detector), limit
                )
            )
    return found


def _detector_counts(
    evals: Iterable[Mapping[str, Any]], model_backed: Mapping[str, str]
) -> dict[str, tuple[int, int]]:
    """detector -> (outputs it could not judge, outputs it was asked about), over all probes."""
    counts: dict[str, tuple[int, int]] = {}
    for row in evals:
        detector = str(row.get("detector"))
        if detector not in model_backed:
            continue
        nones, total = counts.get(detector, (0, 0))
        counts[detector] = (
            nones + int(row.get("nones", 0)),
            total + int(row.get("total_processed", 0)),
        )
    return counts
