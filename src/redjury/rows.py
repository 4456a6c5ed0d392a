"""Attempt rows: score one attempt with every detector and build its redacted report row."""

from __future__ import annotations

from typing import Any

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, Finding
from redjury.redaction import Redactor

# Attempt fields copied into the report row when present.
ROW_FIELDS = (
    "goal",
    "prompt",
    "outputs",
    "messages",
    "intent",
    "hazard",
    "goal_context",
    "context",
    "source",
    "expected",
    "latency_ms",
    "usage",
    "notes",
    "run_id",
    "seq",
    "generator",
    "source_record",
)

# Recorded text, and what detectors and judges wrote about it, pass the row's redactor.
TEXT_FIELDS = tuple(f for f in ROW_FIELDS if f not in ("latency_ms", "usage", "seq")) + (
    "evidence",
    "reasons",
    "details",
)


def is_async(det: Detector) -> bool:
    return type(det).adetect is not Detector.adetect


class AttemptScorer:
    """Scores attempts with every detector and turns the findings into a redacted report row."""

    def __init__(
        self, detectors: list[Detector], markers: Redactor, always: Redactor, redact: bool
    ) -> None:
        self.sync = [d for d in detectors if not is_async(d)]
        self.async_ = [d for d in detectors if is_async(d)]
        self.markers = markers
        self.always = always
        self.redact = redact

    async def score_one(self, attempt: Attempt) -> dict[str, Any]:
        """Score one attempt, awaiting the async detectors (judges) together."""
        async_ = self.async_
        if len(async_) == 1:
            # The usual case (the judge panel alone): gather would run it in a task of its own.
            results = [await async_[0].adetect(attempt)]
        else:
            import asyncio  # here: a run without judges never needs it (nor its 50 ms import)

            results = await asyncio.gather(*(d.adetect(attempt) for d in async_))
        findings: dict[str, list[Finding]] = {d.name: d.detect(attempt) for d in self.sync}
        for det, found in zip(async_, results, strict=True):
            findings[det.name] = found
        return self.row(attempt, findings)

    def score_window(self, attempts: list[Attempt]) -> list[dict[str, Any]]:
        """Rows for attempts scored by the synchronous detectors only (no judges in the run)."""
        return [self.row(a, {d.name: d.detect(a) for d in self.sync}) for a in attempts]

    def row(self, attempt: Attempt, findings: dict[str, list[Finding]]) -> dict[str, Any]:
        row: dict[str, Any] = {
            "entry_type": "attempt",
            "status": 2,
            "id": attempt.id,
            "probe": attempt.probe,
        }
        # Read the fields directly: a pydantic dump per attempt costs more than all of this.
        fields = attempt.__dict__
        for key in ROW_FIELDS:
            value = fields[key]
            if value is None or value == {}:
                continue
            # Lists and dicts are shared, not copied: nothing mutates a row's values
            # (redaction builds new ones).
            if key == "messages":
                value = [{"role": t.role, "content": t.content} for t in value]
            elif key == "usage":
                value = value.model_dump(exclude_none=True)
            row[key] = value
        results: dict[str, list[float | None]] = dict(attempt.detector_results)
        verdicts: dict[str, list[str]] = {}
        evidence: dict[str, list[list[str]]] = {}
        reasons: dict[str, list[str | None]] = {}
        details: dict[str, list[Any]] = {}
        found: list[str] = []
        for name, fs in findings.items():
            results[name] = [f.score for f in fs]
            verdicts[name] = [f.verdict.value for f in fs]
            # One pass for the rarely-set fields; most findings carry none of them.
            has_evidence = has_reason = has_details = False
            for f in fs:
                if f.evidence:
                    has_evidence = True
                if f.reason:
                    has_reason = True
                if f.details:
                    has_details = True
                if f.sensitive:
                    found.extend(f.sensitive)
            if has_evidence:
                evidence[name] = [list(f.evidence) for f in fs]
            if has_reason:
                reasons[name] = [f.reason for f in fs]
            if has_details:
                details[name] = [f.details for f in fs]
        row["detector_results"] = results
        row["verdicts"] = verdicts
        if evidence:
            row["evidence"] = evidence
        if reasons:
            row["reasons"] = reasons
        if details:
            row["details"] = details
        if self.redact:
            redactor = self.markers.with_values(found) if found else self.markers
            if self.always:
                redactor = redactor.with_values(self.always.values)
        else:
            redactor = self.always
        if redactor:
            for key in TEXT_FIELDS:
                if key in row:
                    row[key] = redactor.apply(row[key])
        return row
