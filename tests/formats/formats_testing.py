"""Reading the fixture files of other tools' records in tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from redjury.attempts import Attempt
from redjury.inputs import InputSet
from redjury.records import InputRecord

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


# Starts the measured command and prints its peak RSS (KB). A process's peak counts the
# memory of the process it was started from (exec keeps the larger of the two), so the
# command is started from this small process, never from the test run itself (which grows
# to gigabytes over the suite).
_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, *sys.argv[1:]], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.waitstatus_to_exitcode(status)
print(usage.ru_maxrss)
sys.exit(child.returncode)
"""


def peak_rss_mb(*argv: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """(exit status, stderr, peak resident MB) of `python ARGV...` in its own process."""
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, *map(str, argv)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    return proc.returncode, proc.stderr, int(proc.stdout.split()[-1]) / 1024
