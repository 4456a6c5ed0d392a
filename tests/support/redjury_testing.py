"""Shared test helpers: writing attempt files and running the real `redjury` command.

A module with its own name (not `conftest`): several test folders have a conftest.py,
and `from redjury_testing import` would pick whichever was imported last."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Names the folder of real third-party files (HarmBench, real garak reports) that some
#: tests read. Those files are never committed; without it those tests skip.
TEST_DATA_ENV = "REDJURY_TEST_DATA"
HARMBENCH_FILES = ("text_behaviors_val_set.json", "harmbench_behaviors_text_all.csv")


def real_data(relative: str) -> Path:
    """A file or folder under $REDJURY_TEST_DATA; skips the test (one line) without it."""
    root = os.environ.get(TEST_DATA_ENV)
    if not root:
        pytest.skip(f"real data {relative}: set {TEST_DATA_ENV} to the folder holding it")
    path = Path(root) / relative
    if not path.exists():
        pytest.skip(f"real data {relative}: not in {TEST_DATA_ENV}={root}")
    return path


def harmbench_dir() -> Path:
    """A folder holding HarmBench's pinned validation set: $REDJURY_TEST_DATA/harmbench or
    redjury's download cache; skips the test (one line) when neither has it."""
    from redjury.audit.datasets import default_cache_dir
    from redjury.judges.config import DEFAULT_HARMBENCH_REVISION

    root = os.environ.get(TEST_DATA_ENV)
    candidates = [Path(root) / "harmbench"] if root else []
    candidates.append(default_cache_dir() / DEFAULT_HARMBENCH_REVISION)
    for folder in candidates:
        if all((folder / name).is_file() for name in HARMBENCH_FILES):
            return folder
    pytest.skip(
        f"HarmBench validation set: not in ${TEST_DATA_ENV}/harmbench nor in the download "
        f"cache {candidates[-1]}"
    )


def write_jsonl(path: Path, rows: Iterable[dict[str, Any] | str]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def messy_lines(
    rows: Iterable[dict[str, Any]], repeated: dict[str, Any], after: Collection[int]
) -> list[dict[str, Any] | str]:
    """`rows` with bad lines, blank lines and repeated ids among them: after row i, a line
    that is not JSON (i % 37 == 5), an attempt whose outputs are not a list (i % 53 == 7),
    a blank line (i % 41 == 3) and, where i is in `after`, `repeated` (an id seen before)."""
    lines: list[dict[str, Any] | str] = []
    for i, row in enumerate(rows):
        lines.append(row)
        if i % 37 == 5:
            lines.append("{not json")
        if i % 53 == 7:
            lines.append({"id": f"bad{i}", "outputs": "not a list"})
        if i % 41 == 3:
            lines.append("   ")
        if i in after:
            lines.append(repeated)
    return lines


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def rows_of(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(path) if r.get("entry_type") == kind]


def redjury(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real command-line program in a subprocess."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "redjury.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=full_env,
        timeout=600,
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll `predicate` every 50 ms; an AssertionError after `timeout` seconds."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def default_stop_signals() -> None:
    """For a child's preexec_fn: SIGTERM and SIGHUP as a run takes them by default (a test
    run under nohup passes an ignored SIGHUP down)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def start_run(
    attempts: Path, config: Path, out: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[str], list[str]]:
    """`redjury run ATTEMPTS -c CONFIG --out OUT` started, its output piped; and its command."""
    cmd = [sys.executable, "-m", "redjury.cli", "run", str(attempts), "-c", str(config)]
    cmd += ["--out", str(out)]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    return proc, cmd


def processes_mentioning(text: str) -> list[int]:
    """The processes whose command line holds `text` (from /proc: Linux only)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # ended meanwhile
            continue
    return found


@dataclass
class RunWithOwnRay:
    """A `redjury run --engine ray` in a child process, its Ray its own: started under a
    RAY_TMPDIR of its own (`run_with_own_ray`), so its processes are told by that folder."""

    cmd: list[str]
    temp: Path
    env: dict[str, str]
    proc: subprocess.Popen[str]

    def wait_until(self, done: Callable[[], bool], what: str) -> None:
        """Poll `done` every 0.1 s while the run goes on, for 300 s at most (`what` fails)."""
        deadline = time.monotonic() + 300
        while not done():
            assert self.proc.poll() is None and time.monotonic() < deadline, what
            time.sleep(0.1)

    def sigterm(self) -> str:
        """Stop the run with SIGTERM: exit status 143, no traceback, and the run's Ray (its
        raylet and all) gone with it within 60 s. Returns the run's stderr."""
        self.proc.send_signal(signal.SIGTERM)
        _, stderr = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 143, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-8000:]
        deadline = time.monotonic() + 60
        while processes_mentioning(str(self.temp)):
            assert time.monotonic() < deadline, "the run's Ray outlived it"
            time.sleep(0.2)
        return stderr

    def again(self) -> None:
        """The same command run again, to its end (exit status 0)."""
        again = subprocess.run(self.cmd, cwd=REPO, env=self.env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr[-3000:]


@contextlib.contextmanager
def run_with_own_ray(cmd: list[str]) -> Iterator[RunWithOwnRay]:
    """`cmd` started under a short RAY_TMPDIR of its own (Ray's socket paths are short);
    afterwards the run is killed if it still runs, and the folder removed."""
    temp = Path(tempfile.mkdtemp(prefix="rj", dir="/tmp"))
    env = {**os.environ, "RAY_TMPDIR": str(temp), "NO_COLOR": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        yield RunWithOwnRay(cmd, temp, env, proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(temp, ignore_errors=True)


def checked_records(records: list[Any]) -> list[Any]:
    """A reader's records as the run needs them: each an attempt or a one-line error naming
    its field, an attempt with replies and one score per reply from every detector given."""
    from redjury.attempts import Attempt

    for rec in records:
        assert (rec.attempt is None) != (rec.error is None)
        if rec.attempt is not None:
            assert isinstance(rec.attempt, Attempt) and rec.attempt.outputs
            assert all(
                len(s) == len(rec.attempt.outputs) for s in rec.attempt.detector_results.values()
            )
        else:
            assert rec.error is not None and rec.error.field and rec.error.reason
            assert "\n" not in str(rec.error)
    return records
