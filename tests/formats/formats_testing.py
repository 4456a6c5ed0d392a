"""Reading the fixture files of other tools' records in tests."""

from __future__ import annotations

import os
import subprocess
import sys
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


def peak_rss_mb(*argv: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """(exit status, stderr, peak resident MB) of `python ARGV...` in its own process."""
    proc = subprocess.Popen(
        [sys.executable, *map(str, argv)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    assert proc.stderr is not None
    with proc.stderr:
        stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    # Known to Popen as reaped: else, once collected, it is polled again by its pid, which
    # a later child may have been given by then (and reaped from under its own wait).
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, stderr, usage.ru_maxrss / 1024
