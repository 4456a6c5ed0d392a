"""Attempt rows: score one attempt with every detector and build its redacted report row."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Coroutine
from typing import Any

import orjson

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


def attempt_fields(attempt: Attempt) -> dict[str, Any]:
    """The start of an attempt's row: every field it records of the attempt (but the given
    scores), before any detector ran or any value was masked."""
    row: dict[str, Any] = {
        "entry_type": "attempt",
        "status": 2,
        "id": attempt.id,
        "probe": attempt.probe,
    }
    # Read the fields directly: a pydantic dump per attempt costs more than all of this.
    # Lists and dicts are shared, not copied: nothing mutates a row's values (redaction
    # builds new ones). Unset fields (None, an empty dict) are left out.
    fields = attempt.__dict__
    for key in ROW_FIELDS:
        value = fields[key]
        if value is not None and (value.__class__ is not dict or value):
            row[key] = value
    if "messages" in row:
        row["messages"] = [{"role": t.role, "content": t.content} for t in row["messages"]]
    if "usage" in row:
        row["usage"] = row["usage"].model_dump(exclude_none=True)
    return row


def fields_hash(fields: dict[str, Any], given_scores: dict[str, Any]) -> str:
    """A hash of what was judged: an attempt's fields as `attempt_fields` gives them and
    its given scores. A resumed run compares it with the kept row's, so a changed attempt
    never keeps its verdict."""
    both = (fields, given_scores)
    try:
        data = orjson.dumps(both, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits in notes
        data = json.dumps(both, sort_keys=True, default=str).encode()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def content_hash(attempt: Attempt) -> str:
    """The `content_hash` of the row this attempt gets."""
    return fields_hash(attempt_fields(attempt), attempt.detector_results)


def is_async(det: Detector) -> bool:
    return type(det).adetect is not Detector.adetect


def _ask(
    det: Detector, attempt: Attempt, findings: dict[str, list[Finding]]
) -> Coroutine[Any, Any, list[Finding]]:
    """An async detector's findings; a judge panel with a cascade reads the others' too."""
    if getattr(det, "cascade", None):
        return det.adetect_after(attempt, findings)  # type: ignore[attr-defined]
    return det.adetect(attempt)


def id_redactor(markers: Redactor, always: Redactor, redact: bool) -> Redactor | None:
    """What masks a row's id (and a row whose findings found nothing sensitive): the
    credentials always, the configured markers unless the report is not redacted; None when
    there is nothing to mask."""
    quiet = always
    if redact:
        quiet = markers.with_values(always.values) if always else markers
    return quiet if quiet else None


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
        # The redactor of a row whose findings found nothing sensitive (None: nothing to mask).
        self._quiet = id_redactor(markers, always, redact)

    async def score_one(self, attempt: Attempt) -> dict[str, Any]:
        """Score one attempt: the synchronous detectors first (a judge panel's cascade reads
        their findings), then the async ones (judges) awaited together."""
        findings: dict[str, list[Finding]] = {d.name: d.detect(attempt) for d in self.sync}
        async_ = self.async_
        if len(async_) == 1:
            # The usual case (the judge panel alone): gather would run it in a task of its own.
            results = [await _ask(async_[0], attempt, findings)]
        else:
            import asyncio  # here: a run without judges never needs it (nor its 50 ms import)

            results = await asyncio.gather(*(_ask(d, attempt, findings) for d in async_))
        for det, found in zip(async_, results, strict=True):
            findings[det.name] = found
        return self.row(attempt, findings)

    def score_window(self, attempts: list[Attempt]) -> list[dict[str, Any]]:
        """Rows for attempts scored by the synchronous detectors only (no judges in the run)."""
        return [self.row(a, {d.name: d.detect(a) for d in self.sync}) for a in attempts]

    def row(self, attempt: Attempt, findings: dict[str, list[Finding]]) -> dict[str, Any]:
        row = attempt_fields(attempt)
        row["content_hash"] = fields_hash(row, attempt.detector_results)
        row["detector_results"] = dict(attempt.detector_results)
        row["verdicts"] = {}
        # No findings: the scores came with the attempt (a garak report), no detector ran.
        redactor = self._redactor(self._add_findings(row, findings)) if findings else self._quiet
        if redactor is not None:
            for key in TEXT_FIELDS:
                if key in row:
                    row[key] = redactor.apply(row[key])
            # The probe name too: every table, hitlog and terminal line is keyed by it.
            row["probe"] = redactor.apply(row["probe"])
        if self._quiet is not None:
            # The id too, by the run's own values alone (never this row's findings), so a
            # resume finds the kept row under the same masked id (InputGate.id_view).
            row["id"] = self._quiet.apply(row["id"])
        return row

    def _add_findings(self, row: dict[str, Any], findings: dict[str, list[Finding]]) -> list[str]:
        """Each detector's scores and verdicts (and evidence, reasons, details where any
        finding has them) into the row; the sensitive values the findings name."""
        results: dict[str, list[float | None]] = row["detector_results"]
        verdicts: dict[str, list[str]] = row["verdicts"]
        evidence: dict[str, list[list[str]]] = {}
        reasons: dict[str, list[str | None]] = {}
        details: dict[str, list[Any]] = {}
        found: list[str] = []
        for name, fs in findings.items():
            results[name] = [f.score for f in fs]
            # The member's own string (`.value` is a property lookup, a tenth of this loop).
            verdicts[name] = [f.verdict._value_ for f in fs]
            # The rarely-set fields, each gathered once and kept where any finding has it.
            if any(said := [f.evidence for f in fs]):
                evidence[name] = [list(e) for e in said]
            if any(why := [f.reason for f in fs]):
                reasons[name] = why
            if any(more := [f.details for f in fs]):
                details[name] = more
            for values in [f.sensitive for f in fs if f.sensitive]:
                found.extend(values)
        if evidence:
            row["evidence"] = evidence
        if reasons:
            row["reasons"] = reasons
        if details:
            row["details"] = details
        return found

    def _redactor(self, found: list[str]) -> Redactor | None:
        """The row's redactor: the run's markers (with the values this row's findings
        found, when the report is redacted) and the values always masked; None when
        there is nothing to mask."""
        if not self.redact or not found:
            return self._quiet
        redactor = self.markers.with_values(found)
        if self.always:
            redactor = redactor.with_values(self.always.values)
        return redactor or None
