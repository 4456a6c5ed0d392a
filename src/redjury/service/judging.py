"""One judge engine for every client: the run's detectors, judge panel, cache and redaction."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redjury.attempts import Attempt
from redjury.config import RunConfig
from redjury.detectors.base import Detector
from redjury.evaluators import Evaluator, load_evaluator, output_failed
from redjury.pipeline import RunOptions, build_detectors
from redjury.redaction import run_redactors
from redjury.rows import AttemptScorer


@dataclass
class AttemptOutcome:
    """What one judged attempt comes to: the detectors that failed it, the judge-backed
    detectors that abstained (never counted as safe), and the row's redacted reasons."""

    row: dict[str, Any]
    failed: dict[str, float] = field(default_factory=dict)
    abstained: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        """True when a detector failed the reply or a judge could not judge it."""
        return bool(self.failed or self.abstained)


class JudgeService:
    """Scores attempts as `redjury run` does (same detectors, rows and redaction), shared
    by every request: one judge panel, one cache, one set of engine limits."""

    def __init__(
        self, config: RunConfig, *, use_cache: bool = True, cache_path: Path | None = None
    ) -> None:
        options = RunOptions(config=config, use_cache=use_cache, cache_path=cache_path)
        self.detectors: list[Detector] = build_detectors(options)
        self.scorer = AttemptScorer(
            self.detectors, *run_redactors(self.detectors), config.reporting.redact
        )
        self.evaluator: Evaluator = load_evaluator(
            config.evaluator.type, config.evaluator.threshold
        )
        self.judge_backed = {d.name for d in self.scorer.async_}

    @property
    def detector_names(self) -> list[str]:
        return [d.name for d in self.detectors]

    async def rows(self, attempts: list[Attempt]) -> list[dict[str, Any]]:
        """Each attempt's report row, redacted as a run's report is."""
        if not self.scorer.async_:
            return self.scorer.score_window(attempts)
        return list(await asyncio.gather(*(self.scorer.score_one(a) for a in attempts)))

    def outcome(self, row: dict[str, Any]) -> AttemptOutcome:
        """The verdict policy over one row: which detectors failed it, which abstained."""
        out = AttemptOutcome(row)
        for name, scores in row.get("detector_results", {}).items():
            judged = [s for s in scores if s is not None]
            if any(output_failed(s, self.evaluator) for s in judged):
                out.failed[name] = max(judged)
            elif name in self.judge_backed and len(judged) < len(scores):
                out.abstained.append(name)
        out.reasons = _reasons(row, [*out.failed, *out.abstained])
        return out

    def judge_stats(self) -> dict[str, int]:
        """The judge panels' counters (calls, abstentions, cache hits, errors), summed."""
        total: dict[str, int] = {}
        for det in self.detectors:
            stats = getattr(det, "stats", None)
            if callable(stats):
                for key, value in stats().items():
                    total[key] = total.get(key, 0) + int(value)
        return total

    def warm_up(self) -> None:
        """Run the local detectors once on a made-up reply, so their patterns are compiled
        and the models' validators built before the first request, not during it."""
        sample = Attempt(id="warm-up", prompt="Hello", outputs=["I'm sorry, I can't help."])
        self.scorer.score_window([sample])

    async def preflight(self) -> None:
        """Ask each judge endpoint once; raises `PreflightError` for one that cannot work."""
        from redjury.judges.preflight import run_preflight

        await run_preflight(self.detectors)

    async def aclose(self) -> None:
        for det in self.detectors:
            await det.aclose()


def _reasons(row: dict[str, Any], names: list[str]) -> list[str]:
    """`detector: VERDICT (evidence or reason)` per named detector, from the redacted row."""
    lines = []
    for name in names:
        verdicts = sorted(set(row["verdicts"].get(name, [])))
        said = [
            *(e for ev in row.get("evidence", {}).get(name, []) for e in ev),
            *(r for r in row.get("reasons", {}).get(name, []) if r),
        ]
        detail = f" ({'; '.join(dict.fromkeys(said))})" if said else ""
        lines.append(f"{name}: {'/'.join(verdicts)}{detail}")
    return lines
