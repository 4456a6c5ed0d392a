"""One run as a short composition of stages: read → score → tally → write.

`Run` opens the output (resuming what an earlier run kept), gates on the judge audit, streams
the attempts through the detectors and judges, and finishes with the eval rows, the digest
and the completion row. Each stage is its own small unit so that another engine (Ray) and
the Python API compose the same parts.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import hashlib
import importlib
import json
import os
import secrets as pysecrets
import shutil
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import orjson

from redjury.attempts import Attempt
from redjury.config import RunConfig, resolve_detectors
from redjury.config_decisive import (
    DECISIVE_KEY,
    decisive_settings,
    refusal_detail,
    secret_values,
    stored_settings,
)
from redjury.config_decisive import fingerprint as settings_fingerprint
from redjury.detectors.base import Detector
from redjury.errors import RunError
from redjury.evaluators import DetectorTally, Evaluator, RunTally, load_evaluator
from redjury.idstore import IdStore
from redjury.inputs import MAX_REPORTED_ERRORS, AttemptSource, InputSet, path_problem
from redjury.interrupts import cause, exit_code, held
from redjury.records import InputError, InputRecord, LineError
from redjury.redaction import (
    Redactor,
    run_redactors,
    without_url_credentials,
)
from redjury.report.digest import DigestBuilder, judge_savings
from redjury.report.folder import FolderBusy, FolderLock, output_problem, same_path
from redjury.report.hitlog import HitlogLines
from redjury.report.jsonl import (
    HITLOG_NAME,
    REPORT_NAME,
    JsonlWriter,
    MemoryWriter,
    RowSink,
    dumps,
)
from redjury.report.judge_failures import EXIT_JUDGES_FAILED, JudgeFailure, judge_failures
from redjury.report.progress import RunProgress
from redjury.report.terminal import TerminalPrinter
from redjury.rows import AttemptScorer, content_hash, id_redactor, is_async
from redjury.stored_state import cache_answers, stored_state
from redjury.stored_state import describe as describe_stored
from redjury.version import __version__

if TYPE_CHECKING:
    import asyncio

# Container allocations between young-generation collections during a run (default 700).
RUN_GC_THRESHOLD = 50_000
# Runs going on in this process, and the collector's thresholds from before the first.
_gc_lock = threading.Lock()
_gc_runs = 0
_gc_saved: tuple[int, ...] = gc.get_threshold()
# Rows written between flushes (a kill loses at most these; they are redone on resume).
WINDOW_SYNC = 512
WINDOW_ASYNC = 256
# ... and at most this many seconds: a row reaches the file this long after it is made,
# however slowly the rows after it come (kill -9 loses at most that much).
FLUSH_AFTER_S = 1.0
# Bytes written to the report or the hitlog between the fsyncs started in the background
# (the closing fsync then waits only for the last stretch).
SYNC_BYTES = 8 << 20
# Attempts being judged at once (their requests still queue behind the engine's limits).
MAX_PENDING = 512
EXIT_INTERRUPTED = 130
# How to start again when a run folder cannot be resumed.
FRESH_START = "choose another --out, or delete the folder"


class RunInterrupted(RunError):
    """Ctrl-C or a stop signal: what was finished is kept and a rerun into the same folder
    resumes (exit 130, or 128 + the signal's number)."""

    def __init__(self, message: str, exit_code: int = EXIT_INTERRUPTED) -> None:
        super().__init__(message, exit_code)


@dataclass(frozen=True)
class RunOptions:
    """Everything about one run besides its config: what it reads, where it writes, how.

    The one carrier of a run's options: the command line maps its flags onto it, the
    Python API takes it (`evaluate(..., options=RunOptions(...))`, or its fields as
    keywords), the service and the engines read it. Frozen: change one with
    `dataclasses.replace`. `evaluate` sets `inputs`, `source`, `config`, `out_dir` and
    `stream` from its own arguments (`out=` is `out_dir`).
    """

    inputs: Sequence[Path] = ()
    """Attempt files in any format `redjury run` reads."""
    config: RunConfig = field(default_factory=lambda: RunConfig.model_validate({}))
    """The run's config (defaults when not given)."""
    out_dir: Path | None = None
    """The run folder; None judges in memory and writes no files."""
    skip_bad_lines: bool = False
    """Judge the good lines and record bad ones as input_error rows (else refuse)."""
    use_cache: bool = True
    """Read and write the judge cache (`--no-cache`: False)."""
    cache_path: Path | None = None
    """The judge cache's file (None: the user cache)."""
    verbose: int = 0
    """`-v`: print failing outputs under each result line."""
    colour: bool | None = None
    """Colour on the terminal; None: when `stream` is a terminal."""
    progress: bool | None = None
    """The progress bar; None: when `stream` is a terminal."""
    stream: TextIO | None = None
    """Where the terminal lines go (None: nowhere)."""
    config_path: str | None = None
    """The config file's path, recorded in the report's header."""
    offline: bool = False
    """Never download audit data; use the cache."""
    source: AttemptSource | None = None
    """Attempts given from Python instead of files (`inputs` is then ignored)."""
    preflight: bool = True
    """Ask each judge endpoint once before judging (a broken judge stops the run, exit 2)."""
    engine: str = "local"
    """Where the run happens: "local" (this process) or "ray" (redjury.engines.ray_engine)."""
    ray_address: str | None = None
    """Ray: None starts a local Ray for the run; "auto" or an address joins a cluster."""
    ray_workers: int | None = None
    """Ray: scoring tasks (detectors) or judge actors at once; None: one per CPU."""
    keep_shards: bool = False
    """Ray: leave the attempt rows in shard files instead of gathering them into the report."""
    workers: int | None = None
    """Local runs with detectors only: processes that read and score a large JSONL input
    (redjury.engines.processes); None: one per CPU, 1: this process alone."""


@dataclass
class RunResult:
    out_dir: Path | None
    report_path: Path | None
    hitlog_path: Path | None
    eval_rows: list[dict[str, Any]] = field(default_factory=list)
    attempts_scored: int = 0
    attempts_resumed: int = 0
    input_errors: int = 0
    exit_code: int = 0
    # Judges (and model-backed detectors) that gave no verdict too often, in words (exit 5).
    judge_failures: list[str] = field(default_factory=list)
    # In-memory runs: every report row and every hitlog row.
    report_rows: list[dict[str, Any]] | None = None
    hitlog_rows: list[dict[str, Any]] | None = None


def config_fingerprint(config: RunConfig) -> str:
    """A hash of everything that decides a row of the report; a resume must match it
    (`redjury.config_decisive` names which settings those are).

    Command-line overrides are applied to the config before this, so a resume with another
    `--eval-threshold` or bootstrap setting is refused like a changed config file.
    """
    return settings_fingerprint(decisive_settings(config))


def inputs_fingerprint(paths: Sequence[Path]) -> str:
    """A hash of the input files, in order, by their full paths: a resume must match it
    (another file given, or one left out, is another run)."""
    names = [str(Path(p).resolve()) for p in paths]
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()[:16]


def build_detectors(options: RunOptions) -> list[Detector]:
    detectors: list[Detector] = [cls(params) for cls, params in detector_specs(options)]
    if options.config.evaluation.judges:
        from redjury.judges.panel import JudgePanelDetector

        detectors.append(
            JudgePanelDetector.from_spec(
                options.config.evaluation,
                cache_path=options.cache_path,
                use_cache=options.use_cache,
            )
        )
    return detectors


def detector_specs(options: RunOptions) -> list[tuple[type[Detector], Any]]:
    """The configured detectors (judge panel aside) as (class, params), cache switches applied."""
    specs: list[tuple[type[Detector], Any]] = []
    for cls, params in resolve_detectors(options.config):
        # Judge-backed detectors follow the run's cache switches too.
        fields = type(params).model_fields
        update: dict[str, Any] = {}
        if not options.use_cache and "cache" in fields:
            update["cache"] = False
        if (
            options.cache_path is not None
            and "cache_path" in fields
            and getattr(params, "cache_path", None) is None
        ):
            update["cache_path"] = str(options.cache_path)
        specs.append((cls, params.model_copy(update=update) if update else params))
    return specs


# -- the write stage -------------------------------------------------------------------------


@dataclass
class RunOutput:
    """Where rows go: the report and the hitlog, files or lists, with a way back.

    A resumed run writes the report anew (header, kept rows, then its own) while the
    earlier report and hitlog are set aside (`*.prev`, a hard link where the system allows):
    a run that fails puts them back as they were; one that ends, or is interrupted, drops
    them."""

    report: RowSink
    hitlog: RowSink
    report_path: Path | None = None
    hitlog_path: Path | None = None
    # Files this run created (removed again when the input is refused before judging).
    created: bool = False
    _marks: tuple[int, int] = (0, 0)
    # (file, its earlier version set aside or None where there was none).
    set_aside: list[tuple[Path, Path | None]] = field(default_factory=list)
    committed: bool = False

    @classmethod
    def in_memory(cls) -> RunOutput:
        return cls(MemoryWriter(), MemoryWriter())

    @classmethod
    def open_files(
        cls, out_dir: Path, header: dict[str, Any], kept: Iterable[dict[str, Any]]
    ) -> RunOutput:
        """Write the report as header + kept rows (drops a torn line and old summaries)."""
        report_path, hitlog_path = out_dir / REPORT_NAME, out_dir / HITLOG_NAME
        created = not report_path.exists()
        out_dir.mkdir(parents=True, exist_ok=True)
        set_aside = []
        if not created:  # the report is replaced below; the hitlog must not be truncated
            set_aside = [_set_aside(report_path), _set_aside(hitlog_path, unlink=True)]
        tmp = report_path.with_suffix(".tmp")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write(dumps(header) + "\n")
                for row in kept:
                    fh.write(dumps(row) + "\n")
        except BaseException:  # a kept row refused as it is read again: the files as they were
            tmp.unlink(missing_ok=True)
            for path, earlier in set_aside:
                if earlier is not None:
                    os.replace(earlier, path)
            raise
        os.replace(tmp, report_path)
        # Flushed once per window of attempts: a kill loses at most the window in progress.
        report = JsonlWriter(report_path, "a", flush_every=0, sync_every=SYNC_BYTES)
        hitlog = JsonlWriter(hitlog_path, "w", flush_every=0, sync_every=SYNC_BYTES)
        return cls(report, hitlog, report_path, hitlog_path, created, set_aside=set_aside)

    def mark(self) -> None:
        """Remember the current end of both files: `rollback` returns to it."""
        self._marks = (self.report.tell(), self.hitlog.tell())

    def rollback(self) -> None:
        """Undo this run's writing: the files as they were before it (none, for a new
        report; in memory, the rows as they were at `mark`)."""
        if self.committed:
            return
        if self.report_path is None:
            self.report.truncate(self._marks[0])
            self.hitlog.truncate(self._marks[1])
        self.close()
        if self.created and self.report_path is not None and self.hitlog_path is not None:
            self.report_path.unlink(missing_ok=True)
            self.hitlog_path.unlink(missing_ok=True)
        for path, earlier in self.set_aside:
            if earlier is None:
                path.unlink(missing_ok=True)
            else:
                os.replace(earlier, path)
        self.set_aside = []

    def commit(self) -> None:
        """What this run wrote stays: the earlier files set aside are dropped."""
        self.committed = True
        for _, earlier in self.set_aside:
            if earlier is not None:
                earlier.unlink(missing_ok=True)
        self.set_aside = []

    def check_still_there(self) -> None:
        """The report and hitlog are still the files this run opened (not removed or
        replaced with their folder during the run)."""
        for writer in (self.report, self.hitlog):
            if isinstance(writer, JsonlWriter) and not writer.still_at_path():
                raise RunError(
                    f"{writer.path}: removed or replaced during the run (was the run "
                    "folder deleted?); what this run wrote is lost: run it again"
                )

    def flush(self) -> None:
        self.report.flush()
        self.hitlog.flush()

    def sync_soon(self) -> None:
        """Start syncing both files while the run goes on (see `JsonlWriter.sync_soon`)."""
        self.hitlog.sync_soon()
        self.report.sync_soon()

    def close(self) -> None:
        self.hitlog.close()
        self.report.close()


def _set_aside(path: Path, unlink: bool = False) -> tuple[Path, Path | None]:
    """Keep `path` as it is under `<path>.prev` (None when there is no such file), for the
    run to write a new file at `path` (`unlink`: the path is made free for it)."""
    if not path.exists():
        return path, None
    earlier = path.with_name(path.name + ".prev")
    earlier.unlink(missing_ok=True)  # left by a run killed before it could drop it
    try:
        os.link(path, earlier)
    except OSError:  # a filesystem without hard links
        shutil.copy2(path, earlier)
    if unlink:
        path.unlink()
    return path, earlier


# The rows of an earlier run's report that a resumed run keeps.
KEPT_KINDS = frozenset({"attempt", "input_error", "audit", "audit_gate"})


@dataclass
class ResumeState:
    """What an earlier run into the same folder left: its header and what a resume needs of
    the rows worth keeping. The rows themselves stay in the file (`rows` reads them again):
    memory holds only the kept ids with their content hashes (`done`, an `IdStore`), the
    places of kept bad lines and the audit gate's row, so a resume of millions of judged
    attempts fits where a first run does."""

    header: dict[str, Any] | None = None
    path: Path | None = None
    done: IdStore = field(default_factory=IdStore)
    errors: set[tuple[str, int]] = field(default_factory=set)
    gate_row: dict[str, Any] | None = None

    @property
    def attempts(self) -> int:
        """The kept attempt rows (each id once)."""
        return len(self.done)

    def rows(self, kinds: frozenset[str] = KEPT_KINDS) -> Iterator[dict[str, Any]]:
        """The kept rows of these kinds, read again from the report, in its order."""
        for _, row in self.numbered_rows(kinds):
            yield row

    def numbered_rows(
        self, kinds: frozenset[str] = KEPT_KINDS
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """`rows`, each with its line number in the report."""
        if self.path is None:
            return
        for line, row in _numbered_report_rows(self.path):
            kind = row.get("entry_type")
            if isinstance(kind, str) and kind in kinds:
                yield line, row

    def _keep(self, row: dict[str, Any]) -> None:
        kind = row.get("entry_type")
        if kind == "init" and self.header is None:
            self.header = row
        elif kind == "attempt":
            kept = row.get("content_hash")  # another type (an edit): differs from any input's
            self.done.add(str(row.get("id")), kept if isinstance(kept, str | None) else repr(kept))
        elif kind == "input_error":
            where = (row.get("file", ""), row.get("line", 0))
            if isinstance(where[0], str) and isinstance(where[1], int):
                self.errors.add(where)
        elif kind == "audit_gate" and self.gate_row is None:
            self.gate_row = row

    @classmethod
    def read(
        cls,
        report_path: Path,
        fingerprint: str,
        inputs_key: str,
        settings: dict[str, Any] | None = None,
    ) -> ResumeState:
        """The rows to keep, once the report is shown to be from this very run: the same
        configuration and the same input files (a changed attempt is found as it is read).
        `settings` (this run's, as kept in the header) lets a refusal name what differs."""
        if not report_path.exists():
            return cls()
        state = cls(path=report_path)
        for row in _report_rows(report_path):
            state._keep(row)
        if state.header is None:
            raise RunError(
                f"{report_path}: exists but is not a redjury report; choose another --out"
            )
        if state.header.get("config_fingerprint") != fingerprint:
            raise RunError(_config_refusal(report_path, state.header, fingerprint, settings))
        recorded = state.header.get("inputs_fingerprint")
        if recorded != inputs_key:
            why = (
                "was written by an older redjury that did not record its input files"
                if recorded is None
                else "was written from other input files "
                f"({', '.join(map(str, state.header.get('inputs') or []))})"
            )
            raise RunError(
                f"{report_path}: {why}; give the same input files in the same order to "
                f"resume it, or start fresh: {FRESH_START}"
            )
        return state

    def attempt_hashes(self) -> IdStore:
        """id -> the kept row's content hash (None in a row without one)."""
        return self.done

    def error_lines(self) -> set[tuple[str, int]]:
        return self.errors

    def gate(self) -> dict[str, Any] | None:
        return self.gate_row


def _config_refusal(
    report_path: Path, header: dict[str, Any], fingerprint: str, settings: dict[str, Any] | None
) -> str:
    """One line: the report was written under other decisive settings, and which ones (a
    report from before they were kept: the two fingerprints), and by which redjury when
    another wrote it (a build whose settings have other defaults)."""
    detail = refusal_detail(header.get(DECISIVE_KEY), settings or {})
    if detail is None:
        detail = f"fingerprint {header.get('config_fingerprint')} vs {fingerprint}"
    version = header.get("redjury_version")
    if version != __version__:
        detail += f"; written by redjury {version}, this is {__version__}"
    return (
        f"{report_path}: was written with a different configuration ({detail}); "
        "resume it with the same config and flags, or choose another --out"
    )


def _uncountable_refusal(path: Path | None, line: int, row: dict[str, Any], exc: Exception) -> str:
    """One line: which kept row, and which of its fields, a resume cannot count."""
    from redjury.report.row_check import row_problem

    what = row_problem(row) or f"{type(exc).__name__}: {exc}"
    return (
        f"{path}:{line}: a kept attempt row (id {row.get('id')!r}) cannot be counted ({what}); "
        f"the report was changed after redjury wrote it: restore it, or {FRESH_START}"
    )


def _report_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The complete rows of a report, streamed (a torn last line is skipped)."""
    for _, row in _numbered_report_rows(path):
        yield row


def _numbered_report_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The complete rows of a report with their line numbers, streamed (a torn last line is
    skipped). orjson reads them; a line it refuses (a number beyond 64 bits) is read by
    `read_rows`' parser."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                return
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                try:
                    row = json.loads(raw)
                except ValueError:
                    continue
                _check_unicode(path, number, row)
            if isinstance(row, dict):
                yield number, row


def _check_unicode(path: Path, number: int, row: Any) -> None:
    """A line orjson refused and Python's parser read: refused when its text escapes a lone
    surrogate (`\\ud800`), which no file can hold. redjury never writes one; an edit can."""
    try:
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise RunError(
            f"{path}:{number}: holds text that is not Unicode (a lone surrogate escape); the "
            f"report was changed after redjury wrote it: restore it, or {FRESH_START}"
        ) from None


# -- the tally stage -------------------------------------------------------------------------


class RunTallies:
    """Everything counted from attempt rows as they are made: eval tallies, digest, hitlog."""

    def __init__(
        self,
        evaluator: Evaluator,
        header: dict[str, Any],
        hitlog: RowSink,
        generator: str | None = None,
        generations_per_prompt: int | None = None,
    ) -> None:
        self.tally = RunTally(evaluator)
        self.digest = DigestBuilder(header)
        self.hitlog = hitlog
        self.build_hit = HitlogLines(generator, generations_per_prompt)

    def add(self, row: dict[str, Any]) -> None:
        self.tally.add(row, self._on_hits)
        self.digest.add_attempt(row)

    def _on_hits(self, row: dict[str, Any], detector: str, failed: list[tuple[int, float]]) -> None:
        self.hitlog.write_line(self.build_hit.lines(row, detector, failed))


# -- the read stage --------------------------------------------------------------------------


@dataclass
class InputGate:
    """Turns input records into attempts to judge: line errors, duplicate ids, resumed ids.

    With `refuse_on_error` (no --skip-bad-lines) the first bad line stops judging; the rest
    of the input is still read so the error lists every bad line (up to a limit). A resumed
    id whose attempt differs from the kept row's (`done`: id -> content hash) stops
    the run. Ids are held in `IdStore`s: memory stays bounded however many there are.
    With `limits` (records per file, as a first pass counted them) a file is read
    no further than that pass read it: what was written to it since is not judged.
    """

    refuse_on_error: bool
    done: IdStore = field(default_factory=IdStore)
    done_errors: set[tuple[str, int]] = field(default_factory=set)
    good: int = 0
    bad: int = 0
    errors: list[LineError] = field(default_factory=list)
    limits: dict[str, int] | None = None
    # Where the kept rows are (named when a changed attempt stops the run).
    kept_in: str = "the run folder"
    # The id as the kept rows wrote it (a configured marker in an id is masked there).
    id_view: Callable[[str], str] | None = None
    # Resumed ids found in the input, and records past a file's limit.
    matched: int = 0
    unchecked: int = 0
    # The ids read so far: beside `done`, sharing its filter and table file, so a resume
    # that reads its kept ids again holds one filter and one page cache, not two.
    _seen: IdStore = field(init=False)
    _read: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._seen = self.done.beside()

    @property
    def refused(self) -> bool:
        return self.refuse_on_error and self.bad > 0

    def attempts(
        self, records: Iterable[InputRecord], on_error: Callable[[LineError], None]
    ) -> Iterator[Attempt]:
        for rec in records:
            if self.limits is not None and self._past_limit(rec.path):
                continue
            attempt = rec.attempt
            attempt_id = None if attempt is None else attempt.id
            if self.admit(rec.path, rec.line, attempt_id, rec.error, on_error, attempt):
                assert attempt is not None
                yield attempt

    def _past_limit(self, path: str) -> bool:
        assert self.limits is not None
        read = self._read[path] = self._read.get(path, 0) + 1
        if read > self.limits.get(path, 0):
            self.unchecked += 1
            return True
        return False

    def admit(
        self,
        path: str,
        line: int,
        attempt_id: str | None,
        err: LineError | None,
        on_error: Callable[[LineError], None],
        attempt: Attempt | None = None,
    ) -> bool:
        """Count one record (an attempt's id, or the error that kept it from being one);
        True when its attempt is to be judged now. A resumed id is checked against its
        kept row when `attempt` is given (a run with resumed ids always gives it)."""
        if attempt_id is not None and not self._seen.add(attempt_id):
            err = LineError(path, line, "id", f"duplicate id {self._shown(attempt_id)!r}")
        if err is not None or attempt_id is None:
            self._bad(err or LineError(path, line, "(line)", "unreadable"), on_error)
            return False
        self.good += 1
        if not self.done:
            return not self.refused
        found, kept = self.done.find(self._shown(attempt_id))
        if found:
            self.matched += 1
            if attempt is not None and not self.refused:
                self._same_as_kept(path, line, attempt, kept)
            return False
        return not self.refused

    def _shown(self, attempt_id: str) -> str:
        return attempt_id if self.id_view is None else self.id_view(attempt_id)

    def _same_as_kept(self, path: str, line: int, attempt: Attempt, kept: str | None) -> None:
        if kept == content_hash(attempt):
            return
        why = (
            "its kept row has no content hash (written by an older redjury), so a change "
            "cannot be ruled out"
            if kept is None
            else "the attempt differs from the one judged there, so its verdict no longer holds"
        )
        raise RunError(
            f"{path}:{line}: id {self._shown(attempt.id)!r}: input changed since the kept rows in "
            f"{self.kept_in}: {why}; to judge the input as it is now, start fresh: "
            f"{FRESH_START}"
        )

    def admit_ids(self, ids: list[str | None]) -> bool:
        """A block of records at once, when each is an attempt to judge now: an id new to
        the run and not judged before, and nothing refused. True when all were counted as
        `admit` counts them; False, counting nothing, when any needs `admit`'s own look."""
        if self.refused or None in ids:
            return False
        keys: list[str] = ids  # type: ignore[assignment]  # no None, as checked above
        if self.done and not self.done.isdisjoint(map(self._shown, keys)):
            return False
        if not self._seen.add_new(keys):
            return False
        self.good += len(ids)
        return True

    def _bad(self, err: LineError, on_error: Callable[[LineError], None]) -> None:
        self.bad += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(err)
        if not self.refuse_on_error and (err.path, err.line) not in self.done_errors:
            on_error(err)

    def refusal(self, names: str, empty_reason: str) -> InputError | RunError | None:
        """The error that refuses this input, or None when there is something to judge."""
        if self.refused:
            return InputError(self.errors, self.bad)
        if self.matched < len(self.done):
            return RunError(
                f"{names}: input changed since the kept rows in {self.kept_in}: "
                f"{len(self.done) - self.matched} attempts judged there are no longer in it; "
                f"to judge the input as it is now, start fresh: {FRESH_START}"
            )
        if self.good == 0:
            if self.bad:
                return InputError(
                    self.errors, self.bad, f"{names}: no valid attempts (every line is bad)"
                )
            return InputError([], 0, empty_reason)
        return None


def _ignore_error(err: LineError) -> None:
    """A first pass writes no rows: the gate keeps the errors it counts."""


def input_error_row(err: LineError) -> dict[str, Any]:
    row: dict[str, Any] = {
        "entry_type": "input_error",
        "file": err.path,
        "line": err.line,
        "field": err.field,
        "reason": err.reason,
    }
    if err.where is not None:  # a place in a tool's document: `sample 7 epoch 2`
        row["where"] = err.where
    return row


# -- the score stage -------------------------------------------------------------------------


class _Completions:
    """Judges attempts concurrently and hands each row on as soon as it is finished.

    Rows are emitted in the order they finish, so an interrupt loses only what was still
    in flight; a resume matches attempts by id.
    """

    def __init__(self, emit: Callable[[dict[str, Any]], None], limit: int) -> None:
        import asyncio  # imported by the judged runs alone

        self.emit = emit
        self.limit = limit
        self.tasks: set[asyncio.Future[dict[str, Any]]] = set()
        self.ready: deque[asyncio.Future[dict[str, Any]]] = deque()
        self.wake = asyncio.Event()

    def start(self, coro: Any) -> None:
        import asyncio

        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[dict[str, Any]]) -> None:
        self.tasks.discard(task)
        if not task.cancelled():
            self.ready.append(task)
        self.wake.set()

    def emit_ready(self) -> None:
        while self.ready:
            self.emit(self.ready.popleft().result())

    async def wait_below(self, n: int) -> None:
        """Emit finished rows until fewer than `n` attempts are in flight."""
        self.emit_ready()
        while len(self.tasks) >= n:
            self.wake.clear()
            await self.wake.wait()
            self.emit_ready()

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.ready:  # retrieved: the run ends with the first error it met
            task.exception()


# -- the run ---------------------------------------------------------------------------------


class ScoringSpread(Protocol):
    """Scoring spread over processes other than this one; an engine hands it to the run
    (`redjury.engines.local`), the pipeline never picks one."""

    # Its workers are never this process (Ray's): one worker is spread too.
    remote: bool

    def workers(self, run: Run, detectors: list[Detector]) -> int:
        """Processes to read and score in; 1 (0 for a remote spread): this one."""

    def score(
        self, run: Run, scorer: AttemptScorer, gate: InputGate, emit: Any, header: dict[str, Any]
    ) -> None:
        """Read and score `run.inputs` in `run.worker_processes` processes."""


class Run:
    """One run into one output folder (or into memory), composed of the stages above."""

    def __init__(self, options: RunOptions, spread: ScoringSpread | None = None) -> None:
        self.options = options
        self.spread = spread
        self.config = options.config
        self.evaluator: Evaluator = load_evaluator(
            self.config.evaluator.type, self.config.evaluator.threshold
        )
        self.printer = TerminalPrinter(
            options.stream,
            narrow=self.config.reporting.narrow,
            verbose=options.verbose,
            colour=options.colour,
            show_z=self.config.reporting.show_z,
        )
        self.inputs: AttemptSource = options.source or InputSet(list(options.inputs))
        self.scored = 0
        self.resumed = 0
        # Processes that read and scored (1: this one; see redjury.engines.processes).
        self.worker_processes = 1
        self.input_errors = 0
        self.output: RunOutput | None = None
        # Records per input file that the first pass checked (runs with judges).
        self.checked: dict[str, int] | None = None
        self.lock: FolderLock | None = None
        # What masks ids in the rows (set when the output is opened): see InputGate.id_view.
        self.id_mask: Redactor | None = None
        self.judge_failures: list[JudgeFailure] = []
        # Attempts in all, when a first pass counted them (runs with judges): the progress' total.
        self.total_attempts: int | None = None

    # -- stages ----------------------------------------------------------------------
    def check_paths(self) -> None:
        for p in self.inputs.paths:
            if problem := path_problem(p):
                raise RunError(f"{p}: {problem}")
        self.check_outputs()

    def folder_outputs(self) -> list[tuple[Path, str]]:
        """Every file the run writes in its folder, with what it is."""
        out_dir = self.options.out_dir
        if out_dir is None:
            return []
        report = out_dir / REPORT_NAME
        paths = [
            (report, "this run's report"),
            (report.with_suffix(".tmp"), "this run's report"),
            (out_dir / HITLOG_NAME, "this run's hitlog"),
        ]
        if any(r.name == "html" for r in self.config.reporting.writer_requests()):
            from redjury.report.html import HTML_NAME

            paths.append((out_dir / HTML_NAME, "this run's HTML report"))
        return paths

    def check_outputs(self) -> None:
        """No output may be an input, another output, or a symbolic link (exit 2 before
        anything is written); every writer asked for is registered and takes its settings."""
        from redjury.report.outputs import asked_writers

        asked_writers(self.config.reporting)
        outputs = self.folder_outputs()
        for path in self.inputs.paths:
            for output, what in outputs:
                if same_path(path, output):
                    raise RunError(f"{path}: is {what}, not an input: give the files it judges")
        for output, _ in outputs:
            if problem := output_problem(output, []):
                raise RunError(f"{output}: {problem}")
        if outputs:
            self._check_writer_paths(outputs)

    def _check_writer_paths(self, outputs: list[tuple[Path, str]]) -> None:
        """A writer's `path` (JUnit's, a plugin writer's) is no input, no file of the run
        folder and no other writer's file."""
        taken = [(p, "an input file of this run") for p in self.inputs.paths] + outputs
        for key, _, settings in self.config.reporting.writer_requests():
            target = settings.get("path")
            if not isinstance(target, str | os.PathLike) or not str(target):
                continue
            where = "--junit" if key == "reporting.junit" else f"{key}.path"
            if problem := output_problem(Path(target), taken):
                raise RunError(f"{where} {target}: {problem}")
            if not Path(target).exists() or Path(target).is_file():  # not /dev/null, a pipe
                taken.append((Path(target), f"the file {where} writes"))

    def check_first(self) -> None:
        """A whole pass over the input before anything is judged (runs with judges: no
        judge call is spent on an input that will be refused). It counts each file's
        records: judging reads no further (`InputGate.limits`)."""
        gate = InputGate(False)
        counts: dict[str, int] = {}
        for rec in self.inputs.records():
            counts[rec.path] = counts.get(rec.path, 0) + 1
            attempt_id = None if rec.attempt is None else rec.attempt.id
            gate.admit(rec.path, rec.line, attempt_id, rec.error, _ignore_error)
        if gate.bad and not self.options.skip_bad_lines:
            raise InputError(gate.errors, gate.bad)
        self.total_attempts = gate.good
        refusal = gate.refusal(self._input_names(), self.inputs.empty_reason())
        if refusal is not None:
            raise refusal
        self.checked = counts

    def _input_names(self) -> str:
        return ", ".join(str(p) for p in self.inputs.paths) or "the attempts"

    async def preflight(self, detectors: list[Detector]) -> None:
        """Ask each judge endpoint once: a judge that cannot work stops the run (exit 2)."""
        if not self.options.preflight:
            return
        from redjury.judges.preflight import PreflightError, run_preflight

        try:
            await run_preflight(detectors)
        except PreflightError as exc:
            raise RunError(str(exc)) from None

    def header(
        self,
        fingerprint: str,
        inputs_key: str,
        seed: int,
        detectors: list[Detector],
        settings: dict[str, Any],
        secrets: list[str],
    ) -> dict[str, Any]:
        markers, always = run_redactors(detectors)
        return always.apply(
            markers.apply(
                {
                    "entry_type": "init",
                    "redjury_version": __version__,
                    "run_id": str(uuid.uuid4()),
                    "start_time": dt.datetime.now(dt.UTC).isoformat(),
                    "inputs": [str(p) for p in self.inputs.paths],
                    "config_path": self.options.config_path,
                    # Secrets masked whole, whatever their length (a 3-character marker
                    # is below what text masking looks for, and stood here in clear).
                    "config": stored_settings(
                        without_url_credentials(self.config.model_dump(mode="json")), secrets
                    ),
                    "config_fingerprint": fingerprint,
                    DECISIVE_KEY: settings,
                    "inputs_fingerprint": inputs_key,
                    "seed": seed,
                    "detectors": [d.name for d in detectors],
                    "evaluator": self.evaluator.describe(),
                    "python": sys.version.split()[0],
                    **_upstream_files(detectors),
                    "stored_state": stored_state(self.config, detectors),
                }
            )
        )

    def open(self, detectors: list[Detector]) -> tuple[RunOutput, ResumeState, dict[str, Any]]:
        """Open the output, resuming what an earlier run into the same folder kept."""
        self.id_mask = id_redactor(*run_redactors(detectors), self.config.reporting.redact)
        decisive = decisive_settings(self.config)
        fingerprint = settings_fingerprint(decisive)
        secrets = secret_values(detectors)
        kept = stored_settings(decisive, secrets)
        inputs_key = inputs_fingerprint(self.inputs.paths)
        out_dir = self.options.out_dir
        if out_dir is not None:
            self.lock_folder(out_dir)
        state = (
            ResumeState()
            if out_dir is None
            else ResumeState.read(out_dir / REPORT_NAME, fingerprint, inputs_key, kept)
        )
        seed = self.config.reporting.seed
        if seed is None:
            seed = (state.header or {}).get("seed", pysecrets.randbits(32))
        header = state.header or self.header(
            fingerprint, inputs_key, seed, detectors, kept, secrets
        )
        for entry in header.get("stored_state") or ():
            self._say(describe_stored(entry))
        if out_dir is None:
            output = RunOutput.in_memory()
            output.report.write(header)
        else:
            # The kept rows are streamed from the report before it is replaced.
            output = RunOutput.open_files(out_dir, header, state.rows())
        self.output = output
        return output, state, header

    def tallies(self, header: dict[str, Any], output: RunOutput) -> RunTallies:
        self.inputs.prepare()
        generator, gpp = None, None
        for setup in self.inputs.garak_setup.values():
            generator = generator or setup.generator
            gpp = gpp or setup.generations_per_prompt
        return RunTallies(self.evaluator, header, output.hitlog, generator, gpp)

    def replay(self, state: ResumeState, tallies: RunTallies) -> None:
        """Count the attempt rows a resumed run kept, as if they had just been made. A kept
        row that cannot be counted (the report was edited) stops the run, naming it."""
        for line, row in state.numbered_rows(frozenset({"attempt"})):
            try:
                tallies.add(row)
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
                raise RunError(_uncountable_refusal(state.path, line, row, exc)) from None
            self.resumed += 1
        if self.resumed:
            self._say(f"resuming: {self.resumed} attempts already in {self.options.out_dir}")

    async def gate(self, detectors: list[Detector], state: ResumeState, output: RunOutput) -> None:
        """The pre-run judge audit; raises (exit 3) when its gate says stop."""
        audit = self.config.evaluation.audit
        if not audit.enabled:
            return
        recorded = state.gate()
        if recorded is None:
            go_on = await self._audit(detectors, output.report)
        else:  # resumed: the recorded gate decides again
            go_on = bool(recorded.get("passed")) or audit.on_failure != "stop"
        if go_on:
            return
        output.report.write(
            {
                "entry_type": "completion",
                "end_time": dt.datetime.now(dt.UTC).isoformat(),
                "run_id": (state.header or {}).get("run_id"),
                "attempts": 0,
                "stopped": "the judge audit failed its robustness gate "
                "(evaluation.audit.on_failure: stop); nothing was judged",
            }
        )
        output.close()
        output.commit()
        raise RunError(
            "the judge audit failed its robustness gate and on_failure is stop: "
            f"nothing was judged; see the audit rows in {output.report_path or 'the report'}",
            exit_code=3,
        )

    def score_sync(self, attempts: Iterator[Attempt], scorer: AttemptScorer, emit: Any) -> None:
        """Detectors only: windows of attempts scored in turn, flushed once per window."""
        window: list[Attempt] = []
        for attempt in attempts:
            window.append(attempt)
            if len(window) >= WINDOW_SYNC:
                emit.rows(scorer.score_window(window))
                window.clear()
        if window:
            emit.rows(scorer.score_window(window))
        emit.flush()

    async def score_async(
        self, attempts: Iterator[Attempt], scorer: AttemptScorer, emit: Any
    ) -> None:
        """With judges: a sliding window of attempts in flight; rows written as they finish."""
        # Batch judges gather a whole batch of requests before any is answered.
        limit = max([MAX_PENDING, *(getattr(d, "pending_window", 0) for d in scorer.async_)])
        window = _Completions(emit.judged_row, limit)
        try:
            for attempt in attempts:
                await window.wait_below(limit)
                window.start(scorer.score_one(attempt))
            await window.wait_below(1)
        finally:
            window.cancel()
        emit.flush()

    def finish(
        self, header: dict[str, Any], tallies: RunTallies, detectors: list[Detector]
    ) -> list[dict[str, Any]]:
        """Eval rows, probe summaries, digest and completion: written, then printed."""
        assert self.output is not None
        # Every attempt row and hit is written: they reach the disk while the intervals are
        # computed, and the closing fsync waits only for the rows below.
        self.output.sync_soon()
        report = self.output.report
        seed = int(header.get("seed") or 0)
        eval_rows = []
        reporting = self.config.reporting
        graded = {
            "level": reporting.bootstrap_confidence_level,
            "iterations": reporting.bootstrap_num_iterations,
            "seed": seed,
        }
        for row in tallies.tally.eval_rows(self._statistics(seed, detectors), graded):
            report.write(row)
            if row["entry_type"] == "eval":
                eval_rows.append(row)
                tallies.digest.add_eval(row)
        digest_row = tallies.digest.row()
        report.write(digest_row)
        self.judge_failures = self._judge_failures(digest_row, eval_rows, tallies, detectors)
        report.write(self._completion(header, detectors) | judge_savings(digest_row))
        self.output.check_still_there()
        self.output.close()
        self.output.commit()
        hits_limit = 20 if self.options.verbose else 0
        for row in eval_rows:
            first = tallies.tally.tallies[(row["probe"], row["detector"])].first_hits
            self._print(self.printer.eval_row, row, first[:hits_limit] if hits_limit else ())
        self._print(self.printer.judge_abstentions, digest_row.get("judge_panel"))
        answers = cache_answers(detectors)
        if answers is not None:
            served = f"{answers['from_cache']} of {answers['answers']}"
            self._say(f"judge cache: {served} judge answers came from it")
        for failure in self.judge_failures:
            self._say(f"judges failed: {failure.line()}")
        return eval_rows

    def _judge_failures(
        self,
        digest_row: dict[str, Any],
        eval_rows: list[dict[str, Any]],
        tallies: RunTallies,
        detectors: list[Detector],
    ) -> list[JudgeFailure]:
        if not any(getattr(d, "judges", None) or d.name == "guardrail" for d in detectors):
            return []  # no model behind any detector: spare the judges' import
        from redjury.judges.preflight import model_origins

        origins = model_origins(detectors)
        if not origins:
            return []
        panel = digest_row.get("judge_panel")
        limit = self.config.reporting.max_abstention_rate
        reasons = tallies.digest.first_reasons
        return judge_failures(panel, eval_rows, reasons, origins, limit)

    def _completion(self, header: dict[str, Any], detectors: list[Detector]) -> dict[str, Any]:
        completion: dict[str, Any] = {
            "entry_type": "completion",
            "end_time": dt.datetime.now(dt.UTC).isoformat(),
            "run_id": header.get("run_id"),
            "attempts": self.scored + self.resumed,
            "attempts_resumed": self.resumed,
            "input_errors": self.input_errors,
        }
        if self.worker_processes > 1:
            completion["workers"] = self.worker_processes
        answers = cache_answers(detectors)
        if answers is not None:
            completion["judge_cache"] = answers
        if self.judge_failures:
            completion["judges_failed"] = [f.line() for f in self.judge_failures]
        for det in detectors:
            stats = getattr(det, "stats", None)
            if callable(stats):
                completion[f"{det.name}_stats"] = stats()
        return completion

    # -- composition -----------------------------------------------------------------
    def execute(self) -> RunResult:
        """Run to the end in this thread (its own event loop when judges need one)."""
        self.check_paths()
        detectors = build_detectors(self.options)
        try:
            with self.guarded():
                if self._needs_loop(detectors):
                    import asyncio  # here: a run without judges never needs it (50 ms)

                    return asyncio.run(self._execute_async(detectors))
                return self._execute_sync(detectors)
        except KeyboardInterrupt as interrupt:
            raise self._interrupted(interrupt) from None
        except OSError as exc:
            raise self._failed_on_disk(exc) from None
        finally:
            for det in detectors:
                if det.name == "guardrail":  # its HTTP client lives on its own loop thread
                    det.close()  # type: ignore[attr-defined]

    async def aexecute(self) -> RunResult:
        """Run inside the caller's event loop (the judges share it)."""
        self.check_paths()
        detectors = build_detectors(self.options)
        with self.guarded():
            if self._needs_loop(detectors):
                return await self._execute_async(detectors)
            return self._execute_sync(detectors)

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """Around a run: one that fails leaves an earlier report as it was (a new one is
        kept for a resume, unless its input was refused); an interrupted one keeps what it
        wrote; the run folder's lock, taken when the output is opened, is let go."""
        try:
            yield
        except RunInterrupted:
            raise
        except (InputError, RunError):
            self._undo(refused=True)
            raise
        except Exception:
            self._undo(refused=False)
            raise
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None

    def _undo(self, refused: bool) -> None:
        output = self.output
        if output is None:
            return
        with contextlib.suppress(OSError):  # the run's own error is the one to report
            if refused or not output.created:
                output.rollback()
            else:
                output.close()

    def lock_folder(self, out_dir: Path) -> None:
        """Hold the run folder's lock for the run: a second run on it is refused (exit 2)
        before it reads or writes anything there."""
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = FolderLock(out_dir)
        try:
            lock.acquire()
        except FolderBusy as busy:
            raise RunError(
                f"{out_dir}: in use by another redjury run (process {busy}); wait for it "
                "to end, or choose another --out"
            ) from None
        except OSError as exc:
            raise RunError(f"{lock.path}: cannot lock the run folder: {exc.strerror}") from None
        self.lock = lock

    def _needs_loop(self, detectors: list[Detector]) -> bool:
        return any(is_async(d) for d in detectors) or self.config.evaluation.audit.enabled

    def _execute_sync(self, detectors: list[Detector]) -> RunResult:
        self._preflight_sync(detectors)
        scorer = AttemptScorer(detectors, *run_redactors(detectors), self.config.reporting.redact)
        output, state, header = self.open(detectors)
        tallies = self.tallies(header, output)
        self.replay(state, tallies)
        gate = self._input_gate(state, refuse=not self.options.skip_bad_lines)
        emit = _Emitter(self, output, tallies, WINDOW_SYNC)
        output.mark()
        try:
            spread = self._spread_for(detectors, gate)
            if spread is not None:
                spread.score(self, scorer, gate, emit, header)
            else:
                attempts = gate.attempts(self.inputs.records(), emit.input_error)
                self.score_sync(attempts, scorer, emit)
        finally:
            emit.close()
        self._refuse_or_go_on(gate, output)
        return self._result(self.finish(header, tallies, detectors))

    def _preflight_sync(self, detectors: list[Detector]) -> None:
        """A guardrail may ask a model (Llama Guard) from a run with no event loop of its
        own: its server is asked once too, before anything is written."""
        if self.options.preflight and any(d.name == "guardrail" for d in detectors):
            import asyncio

            asyncio.run(self.preflight(detectors))

    def _spread_for(self, detectors: list[Detector], gate: InputGate) -> ScoringSpread | None:
        """The spread that reads and scores (None: this process does), its processes in
        `worker_processes`; see redjury.engines.processes. A resumed run reads in this
        process: each resumed attempt is compared with its kept row, which workers do not do."""
        if self.spread is None or self.options.workers == 1 or gate.done:
            return None
        self.worker_processes = self.spread.workers(self, detectors)
        if self.worker_processes > 1 or (self.spread.remote and self.worker_processes > 0):
            return self.spread
        self.worker_processes = 1
        return None

    async def _execute_async(self, detectors: list[Detector]) -> RunResult:
        try:
            self.check_first()
            await self.preflight(detectors)
            scorer = AttemptScorer(
                detectors, *run_redactors(detectors), self.config.reporting.redact
            )
            output, state, header = self.open(detectors)
            for det in detectors:
                use_folder = getattr(det, "use_run_folder", None)
                if use_folder is not None:
                    use_folder(self.options.out_dir)
            return await self._judge(detectors, scorer, output, state, header)
        finally:
            for det in detectors:
                await det.aclose()

    async def _judge(
        self,
        detectors: list[Detector],
        scorer: AttemptScorer,
        output: RunOutput,
        state: ResumeState,
        header: dict[str, Any],
    ) -> RunResult:
        """The judged run after its output is open: audit gate, score, refuse or finish."""
        tallies = self.tallies(header, output)
        self.replay(state, tallies)
        await self.gate(detectors, state, output)
        # The input is checked again as it is judged: a file changed since the first pass
        # cannot slip a bad line, a duplicate or an unchecked attempt past the checks.
        gate = self._input_gate(state, refuse=not self.options.skip_bad_lines)
        emit = _Emitter(self, output, tallies, WINDOW_ASYNC, timed=True)
        output.mark()
        try:
            attempts = gate.attempts(self.inputs.records(), emit.input_error)
            if scorer.async_:
                await self.score_async(attempts, scorer, emit)
            else:
                self.score_sync(attempts, scorer, emit)
        finally:
            emit.close()
        self._refuse_or_go_on(gate, output)
        return self._result(self.finish(header, tallies, detectors))

    def _input_gate(self, state: ResumeState, refuse: bool) -> InputGate:
        return InputGate(
            refuse,
            done=state.attempt_hashes(),
            done_errors=state.error_lines(),
            limits=self.checked,
            kept_in=str(self.options.out_dir),
            id_view=self.id_mask.apply if self.id_mask is not None else None,
        )

    def _refuse_or_go_on(self, gate: InputGate, output: RunOutput) -> None:
        """A refused input leaves no trace: the rows written for it are taken back."""
        self.input_errors = gate.bad
        refusal = gate.refusal(self._input_names(), self.inputs.empty_reason())
        if refusal is not None:
            output.rollback()
            raise refusal
        if gate.unchecked:
            self._say(
                f"{gate.unchecked} input records written after the input was checked were "
                "not judged; run the same command again to judge them"
            )

    def _result(self, eval_rows: list[dict[str, Any]]) -> RunResult:
        assert self.output is not None
        out = self.output
        return RunResult(
            self.options.out_dir,
            out.report_path,
            out.hitlog_path,
            eval_rows,
            self.scored,
            self.resumed,
            self.input_errors,
            self._exit_code(),
            [f.line() for f in self.judge_failures],
            report_rows=out.report.rows if isinstance(out.report, MemoryWriter) else None,
            hitlog_rows=out.hitlog.rows if isinstance(out.hitlog, MemoryWriter) else None,
        )

    def _exit_code(self) -> int:
        """5 when judges failed (unless abstentions are allowed), else 0; the CI gates are
        applied after the run, by every face alike (`redjury.api.finish_job`)."""
        if self.judge_failures and not self.config.reporting.allow_abstentions:
            return EXIT_JUDGES_FAILED
        return 0

    def _interrupted(self, interrupt: KeyboardInterrupt | None = None) -> RunInterrupted:
        """Ctrl-C or a stop signal (see redjury.interrupts): what is kept, how to resume."""
        interrupt = interrupt or KeyboardInterrupt()
        if self.output is not None:
            self.output.commit()  # what was judged is kept: the run resumes from it
        where = self.output.report_path if self.output else None
        kept = self.scored + self.resumed
        if where is None:
            return RunInterrupted(
                f"{cause(interrupt)} after {kept} attempts; nothing was written",
                exit_code(interrupt),
            )
        return RunInterrupted(
            f"{cause(interrupt)}: {kept} judged attempts are kept in {where}; run the same "
            "command again (same --out) to resume where it stopped",
            exit_code(interrupt),
        )

    def _failed_on_disk(self, exc: OSError) -> RunError:
        """A file the run reads or writes failed (a full disk, a file-size limit, a read-only
        folder): one line naming it and saying what was kept (exit 2)."""
        where = exc.filename or self.options.out_dir or "the run's files"
        what = exc.strerror or str(exc) or type(exc).__name__
        report = self.output.report_path if self.output else None
        if report is None:
            kept = "nothing was judged"
        else:
            kept = (
                f"{report} keeps the attempts judged before it, up to its last flush "
                f"({self.scored + self.resumed} judged in all); once fixed, the same command "
                "resumes"
            )
        return RunError(f"{where}: {what}; {kept}")

    def _say(self, text: str) -> None:
        self._print(self.printer.message, text)

    def _print(self, fn: Callable[..., None], *args: Any) -> None:
        """Terminal lines are a courtesy: a closed stdout (`| head`) never stops the run."""
        try:
            fn(*args)
        except BrokenPipeError:
            silence_stdout()

    async def _audit(self, detectors: list[Detector], report: RowSink) -> bool:
        """The pre-run judge audit; False when its gate says stop."""
        from redjury.audit.command import aaudit_before_run
        from redjury.errors import AuditError

        panel = next((d for d in detectors if d.name == "judge_panel"), None)
        try:
            go_on = await aaudit_before_run(
                self.config,
                report.write,
                panel=panel,
                use_cache=self.options.use_cache,
                cache_path=self.options.cache_path,
                offline=self.options.offline,
                echo=self._say,
            )
        except AuditError as exc:
            raise RunError(f"judge audit: {exc}") from None
        report.flush()
        return go_on

    def _statistics(
        self, seed: int, detectors: list[Detector]
    ) -> Callable[[str, str, DetectorTally], dict[str, Any]]:
        from redjury.report.statistics import eval_statistics

        lookup = None
        if any(d.name == "judge_panel" for d in detectors):
            from redjury.audit.datasets import cache_dir_of
            from redjury.audit.runner import audit_correction_lookup

            lookup = audit_correction_lookup(
                cache_dir_of(self.config.evaluation.audit.dataset), detectors
            )
        statistics = eval_statistics(self.config.reporting, seed, lookup)
        files = _upstream_files(detectors)
        if not files:
            return statistics

        def with_files(probe: str, detector: str, tally: DetectorTally) -> dict[str, Any]:
            extra = statistics(probe, detector, tally)
            return {**extra, **files} if detector == "judge_panel" else extra

        return with_files


def _upstream_files(detectors: list[Detector]) -> dict[str, Any]:
    """`{"upstream_files": {judge: file, sha256, prompt hashes}}` for the judges that read a
    source's prompt (`template: upstream`); empty when none did."""
    files: dict[str, Any] = {}
    for detector in detectors:
        found = getattr(detector, "upstream_files", None)
        if callable(found):
            files.update(found())
    return {"upstream_files": files} if files else {}


def import_statistics_soon() -> None:
    """Import what `Run._statistics` imports (numpy with it, ~0.1 s) in a thread while the
    workers score and this process mostly waits for them; started once they have forked, so
    no worker inherits the thread or a lock it holds. The finish's own import waits for this
    one, if it has not ended."""
    threading.Thread(
        target=importlib.import_module,
        args=("redjury.report.statistics",),
        name="redjury-import",
        daemon=True,
    ).start()


class _Emitter:
    """The write stage as the scoring loop sees it: rows to the report and the tallies,
    input errors as rows, a flush (and the progress bar) once per window."""

    def __init__(
        self, run: Run, output: RunOutput, tallies: RunTallies, window: int, timed: bool = False
    ) -> None:
        self.run = run
        self.output = output
        self.tallies = tallies
        self.window = window
        self.unflushed = 0
        self.progressed = 0  # rows the progress counted as they came (judged_row)
        self.progress = RunProgress(run.resumed, run.options.progress, run.total_attempts)
        # When the oldest unflushed row must be flushed; `timed` (inside an event loop): a
        # timer flushes it then even when no row comes after it.
        self.flush_due = float("inf")
        self.timed = timed
        self._timer: asyncio.TimerHandle | None = None

    def row(self, row: dict[str, Any]) -> None:
        with held():
            self._row(row)

    def _row(self, row: dict[str, Any]) -> None:
        self.output.report.write(row)
        self.tallies.add(row)
        self._scored()

    def judged_row(self, row: dict[str, Any]) -> None:
        """A row judges took time over: the progress moves with each one (counted before the
        row, whose write may flush)."""
        self.progressed += 1
        self.progress.advance(1)
        self.row(row)

    def scored_rows(self, rows: list[tuple[bytes, bytes]]) -> None:
        """Some of a chunk's rows scored in a worker process (the gate left others out):
        each report line with its hitlog lines, counted here one by one."""
        report, hitlog, tallies = self.output.report, self.output.hitlog, self.tallies
        with held():
            for line, hits in rows:
                report.write_line(line)
                if hits:
                    hitlog.write_line(hits)
                row = orjson.loads(line)
                tallies.tally.add(row)
                tallies.digest.add_attempt(row)
                self._scored()

    def scored_block(
        self,
        report_lines: memoryview,
        hit_lines: memoryview,
        rows: int,
        counted: tuple[RunTally, DigestBuilder],
    ) -> None:
        """`rows` rows scored in a worker process as one block of report lines and one of
        their hitlog lines, with the worker's tallies of exactly these rows."""
        with held():
            self.output.report.write_block(report_lines)
            if hit_lines:
                self.output.hitlog.write_block(hit_lines)
            self.tallies.tally.merge(counted[0])
            self.tallies.digest.merge(counted[1])
            self._scored(rows)

    def _scored(self, rows: int = 1) -> None:
        self.run.scored += rows
        if not self.unflushed:
            self._flush_by(time.monotonic() + FLUSH_AFTER_S)
        self.unflushed += rows
        if self.unflushed >= self.window or time.monotonic() >= self.flush_due:
            self.flush()

    def _flush_by(self, due: float) -> None:
        self.flush_due = due
        if self.timed and self._timer is None:
            import asyncio

            self._timer = asyncio.get_running_loop().call_later(FLUSH_AFTER_S, self._flush_timed)

    def _flush_timed(self) -> None:
        self._timer = None
        if self.unflushed:
            self.flush()

    def rows(self, rows: Iterable[dict[str, Any]]) -> None:
        with held():
            for row in rows:
                self._row(row)

    def input_error(self, err: LineError) -> None:
        self.output.report.write(input_error_row(err))

    def flush(self) -> None:
        self.output.flush()
        self.progress.advance(self.unflushed - self.progressed)
        self.unflushed = self.progressed = 0
        self.flush_due = float("inf")
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Runs on every exit, Ctrl-C included: what was finished reaches the disk."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.output.flush()
        self.progress.close()


def silence_stdout() -> None:
    """stdout was closed by its reader: send the rest of the terminal output nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while a run allocates its millions of short-lived dicts.

    A run keeps a small window of attempts alive, and the objects it builds hold no cycles,
    yet Python's collector runs every 700 container allocations and, now and then, walks
    every object the process holds (pydantic's and numpy's included). Setting the objects
    that exist before the run aside (`gc.freeze`) and collecting the youngest generation
    every 50,000 allocations took a whole run over a 20,000-attempt garak report from
    4.0–4.7 s to 3.2–3.6 s, at the same peak memory. Cycles are still collected, less often.
    Both are undone when the last of the runs going on in the process ends (runs in threads
    share the setting)."""
    global _gc_runs, _gc_saved
    with _gc_lock:
        if _gc_runs == 0:
            _gc_saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(_gc_saved[0], RUN_GC_THRESHOLD), *_gc_saved[1:])
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0:
                gc.set_threshold(*_gc_saved)
                gc.unfreeze()
