"""Reading the fixture files of other tools' records in tests."""

from __future__ import annotations

from pathlib import Path

from redjury.attempts import Attempt
from redjury.inputs import InputRecord, InputSet

DATA = Path(__file__).parent / "data"


def records(path: Path) -> list[InputRecord]:
    return list(InputSet([path]).records())


def attempts(path: Path) -> dict[str, Attempt]:
    out = {}
    for rec in records(path):
        assert rec.error is None, str(rec.error)
        assert rec.attempt is not None
        out[rec.attempt.id] = rec.attempt
    return out


def failing(attempts: dict[str, Attempt], prefix: str) -> int:
    """Attempts that at least one of the tool's own verdicts (`prefix...`) marks failed."""
    return sum(
        any(
            name.startswith(prefix) and any(s is not None and s >= 0.5 for s in scores)
            for name, scores in a.detector_results.items()
        )
        for a in attempts.values()
    )
