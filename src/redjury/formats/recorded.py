"""A tool's own verdicts, read back from its records as a detector, so `redjury audit
--records FILE --detector <tool>:<grader>` measures them against labelled data like any
detector (the labelled rows' `id` is the attempt id the records give)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import ClassVar

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.inputs import InputSet


class RecordedParams(DetectorParams):
    records: list[str] = []  # name and content hash of each records file (the audit key)


class RecordedVerdicts(Detector):
    """Looks the attempt's id up in the verdicts a tool recorded; never re-judges text."""

    name: ClassVar[str] = "recorded"
    family = Family.DETERMINISTIC
    default_enabled = False
    description = "A tool's own recorded verdict for this attempt id."
    Params = RecordedParams

    def __init__(self, scores: dict[str, float | None], params: RecordedParams) -> None:
        super().__init__(params)
        self.scores = scores

    def check(self, attempt: Attempt, output: str) -> Finding:
        if attempt.id not in self.scores:
            return self.inconclusive(f"no recorded verdict for id {attempt.id!r}")
        score = self.scores[attempt.id]
        if score is None:
            return self.inconclusive("the tool did not grade this attempt")
        return self.bad() if score >= 0.5 else self.good()


def _fingerprint(path: Path) -> str:
    return f"{path.name}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def recorded_verdicts(grader: str, paths: list[Path]) -> RecordedVerdicts:
    """`grader`'s verdict per attempt id in `paths` (any input format redjury reads). An
    attempt with several outputs counts as failed when any of them failed."""
    scores: dict[str, float | None] = {}
    for rec in InputSet(list(paths)).records():
        if rec.error is not None:
            raise ValueError(str(rec.error))
        assert rec.attempt is not None
        values = rec.attempt.detector_results.get(grader)
        if values is not None:
            known = [v for v in values if v is not None]
            scores[rec.attempt.id] = max(known) if known else None
    if not scores:
        names = ", ".join(str(p) for p in paths)
        raise ValueError(f"no attempt in {names} carries a verdict named {grader!r}")
    cls = type("RecordedVerdicts", (RecordedVerdicts,), {"name": grader})
    return cls(scores, RecordedParams(records=[_fingerprint(p) for p in paths]))
