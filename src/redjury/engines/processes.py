"""Worker processes for the read and score stages of a local run with detectors only.

A run over a large garak or redjury JSONL file spends most of its time on work that is
per line: the JSON parse, the checks, the Attempt, the detectors, the report row and its
hitlog lines. Forked workers do that work for chunks of the file (byte ranges cut at line
ends) while this process keeps everything that depends on order: the input gate
(duplicate ids, resumed ids, bad lines), the report and the hitlog in input order, and the
tallies. A worker sends back, per record, the attempt id or the line's error, the report
row as a JSON line and its hitlog lines, so the files are the ones a single process writes.
The lines go through memory this process shares with the workers (a slot per chunk in
flight), not through the pool's pipe: that saves pickling tens of megabytes and copying them
twice more on the way, and a chunk whose every row is admitted is written in two calls.

Used only where that holds without the workers talking to each other: built-in detectors
that need no event loop (judges and custom plugins stay in one process: they may keep
state or hold resources that do not survive a fork), input files in garak's or redjury's
JSONL format (not a merged garak report, whose repeated uuids are numbered in file order),
a platform that forks, and input large enough to pay for the workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import io
import mmap
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Container, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redjury.detectors.base import Detector
from redjury.evaluators import Evaluator, RunTally
from redjury.formats.garak import garak_line_records
from redjury.formats.jsonl import redjury_line_records
from redjury.inputs import InputSet
from redjury.records import InputRecord, LineError
from redjury.report.digest import DigestBuilder
from redjury.report.hitlog import HitlogLines
from redjury.report.jsonl import row_line
from redjury.rows import AttemptScorer, is_async

# prctl(2): the signal a process gets when its parent thread ends.
PR_SET_PDEATHSIG = 1
# Below this much input a single process finishes before workers would have started.
MIN_BYTES = 4 << 20
# Bytes of input lines a worker reads and scores at once.
CHUNK_BYTES = 1 << 20
# Chunks handed out ahead of the one being written, per worker: enough to keep every worker
# busy, few enough that the results waiting in this process stay a few megabytes.
AHEAD_PER_WORKER = 2
# Workers when the run does not say (`RunOptions.workers`).
MAX_AUTO_WORKERS = 8
# Room for one chunk's report and hitlog lines in the memory shared with the workers (about
# as many bytes as the chunk's input as a rule); lines that do not fit come through the pool.
SLOT_BYTES = 16 << 20
# How long a stopped run waits for its killed workers to end (SIGKILL: at once, as a rule).
KILL_WAIT_S = 10.0

# One record, its line numbered from the chunk's first: the line, the attempt id (None for a
# bad line), the line's error, and the lengths of its report line and of its hitlog lines
# (-1 and 0 where the attempt was not scored: a bad line, or judged before).
Record = tuple[int, str | None, LineError | None, int, int]


@dataclass
class ChunkResult:
    """A worker's answer for one chunk: its records, and the tallies of every scored row.

    The scored rows' report lines, in order, then their hitlog lines, are in the chunk's
    slot of the shared memory, or in `data` when they did not fit."""

    lines: int
    records: list[Record]
    tally: RunTally
    digest: DigestBuilder
    # The scored rows: how many, and the bytes of their report lines and hitlog lines.
    scored: int = 0
    rows_length: int = 0
    hits_length: int = 0
    data: bytes | None = None

    def lines_view(self, shared: mmap.mmap, slot: int) -> memoryview:
        if self.data is not None:
            return memoryview(self.data)
        return memoryview(shared)[slot * SLOT_BYTES : (slot + 1) * SLOT_BYTES]


@dataclass(frozen=True)
class Chunk:
    """A byte range of one input file, cut at line ends."""

    name: str
    garak: bool
    start: int
    end: int


@dataclass
class WorkerJob:
    """What the workers need: inherited through the fork here (never pickled); built in each
    worker from what a Ray run sends (`redjury.engines.ray_files`)."""

    scans: dict[str, Any]
    scorer: AttemptScorer
    evaluator: Evaluator
    header: dict[str, Any]
    build_hit: HitlogLines
    done: Container[str]
    # None: a worker that is not forked from this process (Ray's) sends its lines back.
    shared: mmap.mmap | None = None


_JOB: WorkerJob | None = None


def auto_workers() -> int:
    """One worker per CPU this process may use, up to `MAX_AUTO_WORKERS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_AUTO_WORKERS)


def can_use_workers(inputs: Any, detectors: list[Detector], workers: int) -> bool:
    """Whether this run may read and score in worker processes (see the module's doc)."""
    if workers < 2 or not isinstance(inputs, InputSet):
        return False
    # macOS lists fork but its system libraries are not safe in a forked child.
    if sys.platform == "darwin" or "fork" not in multiprocessing.get_all_start_methods():
        return False
    if threading.active_count() > 1:
        return False  # forking a process with threads can copy a held lock
    if not all(_forkable(d) for d in detectors):
        return False
    return cuttable(inputs) and sum(p.stat().st_size for p in inputs.paths) >= MIN_BYTES


def cuttable(inputs: Any) -> bool:
    """Whether every input is a file of garak's or redjury's JSONL whose chunks can be read
    and checked on their own (a merged garak report's repeated uuids are numbered in file
    order; a pipe or a device cannot be cut into byte ranges)."""
    if not isinstance(inputs, InputSet) or not inputs.paths:
        return False
    for path in inputs.paths:
        if not path.is_file():
            return False
        fmt = inputs.format_of(path)
        if fmt not in ("garak", "redjury") or (fmt == "garak" and inputs.repeated_uuids(path)):
            return False
    return True


def _forkable(det: Detector) -> bool:
    builtin = type(det).__module__.startswith("redjury.detectors.")
    return builtin and not is_async(det) and not _is_guardrail(det)


def _is_guardrail(det: Detector) -> bool:
    # A guardrail detector exists only where its module was imported: a run without one
    # does not import it (nor what it imports) to find that out.
    module = sys.modules.get("redjury.detectors.guardrail")
    return module is not None and isinstance(det, module.GuardrailDetector)


def file_chunks(path: Path, garak: bool, size: int) -> Iterator[Chunk]:
    """Byte ranges of about `size` bytes, each ending after a newline (or at the end)."""
    name = str(path)
    length = path.stat().st_size
    start = 0
    with path.open("rb") as fh:
        while start < length:
            fh.seek(min(start + size, length))
            fh.readline()
            end = min(fh.tell(), length)
            yield Chunk(name, garak, start, end)
            start = end


# -- the worker side -------------------------------------------------------------------------


def _worker_setup(parent: int) -> None:
    """Ctrl-C reaches the whole process group, a stop signal may too: the run stops in the
    parent, which flushes what is finished, and the workers end with the pool. A parent that
    dies at once (kill -9) takes its workers with it instead of leaving them waiting."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent:  # it died before that took hold
        os._exit(1)


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that forked it ends."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no C library to ask: the parent's pool still ends us
        pass


def score_chunk(chunk: Chunk, slot: int) -> ChunkResult:
    """A worker's task: the chunk's records, scored and tallied; their lines in `slot`."""
    job = _JOB
    assert job is not None, "score_chunk runs in a worker forked by score_in_workers"
    result, lines = read_and_score(job, chunk)
    result.data = _store(job.shared, slot, lines)
    return result


def read_and_score(job: WorkerJob, chunk: Chunk) -> tuple[ChunkResult, list[bytes]]:
    """The chunk read from its file, its records scored and tallied; the scored rows' report
    lines, then their hitlog lines (what `ChunkResult` says its data holds)."""
    with open(chunk.name, "rb") as fh:
        fh.seek(chunk.start)
        data = fh.read(chunk.end - chunk.start)
    result = ChunkResult(
        data.count(b"\n") + (not data.endswith(b"\n")),
        [],
        RunTally(job.evaluator),
        DigestBuilder(job.header),
    )
    report_lines, hit_lines = _score_records(job, _chunk_records(job, chunk, data), result)
    result.scored = len(report_lines)
    result.rows_length = sum(map(len, report_lines))
    result.hits_length = sum(map(len, hit_lines))
    return result, report_lines + hit_lines


def _chunk_records(job: WorkerJob, chunk: Chunk, data: bytes) -> Iterator[InputRecord]:
    lines = enumerate(io.BytesIO(data), 1)
    if chunk.garak:
        return garak_line_records(chunk.name, lines, job.scans[chunk.name])
    return redjury_line_records(chunk.name, lines)


def _score_records(
    job: WorkerJob, records: Iterator[InputRecord], result: ChunkResult
) -> tuple[list[bytes], list[bytes]]:
    """Each record into `result`; the attempts not judged before are scored together and
    tallied as `RunTallies` does (hitlog lines by the tally's own rule). Returns the scored
    rows' report lines and their hitlog lines."""
    out = result.records
    todo: list[int] = []
    attempts = []
    for rec in records:
        attempt = rec.attempt
        out.append((rec.line, None if attempt is None else attempt.id, rec.error, -1, 0))
        if attempt is not None and rec.error is None and attempt.id not in job.done:
            todo.append(len(out) - 1)
            attempts.append(attempt)
    build = job.build_hit
    hits: list[bytes] = []

    def on_hits(row: dict[str, Any], detector: str, failed: list[tuple[int, float]]) -> None:
        hits.append(build.lines(row, detector, failed))

    report_lines: list[bytes] = []
    hit_lines: list[bytes] = []
    for index, row in zip(todo, job.scorer.score_window(attempts), strict=True):
        result.tally.add(row, on_hits)
        result.digest.add_attempt(row)
        line, attempt_id, _, _, _ = out[index]
        report_line = row_line(row)
        report_lines.append(report_line)
        hit_lines.extend(hits)
        out[index] = (line, attempt_id, None, len(report_line), sum(map(len, hits)))
        hits.clear()
    return report_lines, hit_lines


def _store(shared: mmap.mmap | None, slot: int, lines: list[bytes]) -> bytes | None:
    """The lines into the slot (None), or joined when they do not fit in it."""
    if shared is None or sum(map(len, lines)) > SLOT_BYTES:
        return b"".join(lines)
    at = slot * SLOT_BYTES
    for line in lines:
        end = at + len(line)
        shared[at:end] = line
        at = end
    return None


# -- this process ----------------------------------------------------------------------------


def score_in_workers(
    run: Any,
    scorer: AttemptScorer,
    gate: Any,
    emit: Any,
    header: dict[str, Any],
    workers: int,
    on_forked: Callable[[], None] | None = None,
) -> None:
    """Read and score `run.inputs` in `workers` forked processes; gate, write and tally here.
    `on_forked` is called once the workers have forked (this process then mostly waits)."""
    global _JOB
    tallies = emit.tallies
    # Anonymous and shared: the forked workers write into the same pages this process reads.
    shared = mmap.mmap(-1, SLOT_BYTES * AHEAD_PER_WORKER * workers)
    scans = run.inputs.scans
    _JOB = WorkerJob(scans, scorer, run.evaluator, header, tallies.build_hit, gate.done, shared)
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker_setup, initargs=(os.getpid(),)
    )
    try:
        chunks = _in_order(pool, input_chunks(run.inputs), workers, on_forked)
        for chunk, base, slot, result in chunks:
            with result.lines_view(shared, slot) as lines:
                take_chunk(chunk, base, result, lines, gate, emit)
    except BaseException:
        # Ctrl-C, a stop signal, an error: the chunks in flight are not taken any more, so
        # their workers are not waited for (a stuck one would hang the run's end).
        _kill_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB = None
        # A view still held by an exception's traceback keeps it open; it goes with the view.
        with contextlib.suppress(BufferError):
            shared.close()
    emit.flush()


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """The workers killed and waited for (bounded), then this process's own end of the results
    pipe closed. A worker killed (or stopped, then killed) in the middle of sending a result
    leaves part of it in the pipe; the pool's thread waits for the rest, which never comes,
    and `shutdown` waits for that thread. With every writing end closed it reads the end of
    the pipe instead, takes the pool as broken and ends."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError):
            process.kill()
    # A sentinel is ready once its process has ended; waiting on it reaps nothing, so the
    # pool's own thread still joins its processes as it always does.
    with contextlib.suppress(ValueError, OSError):  # a process already closed by the pool
        _wait_ended(processes)
    results: Any = getattr(pool, "_result_queue", None)
    with contextlib.suppress(AttributeError, OSError):
        results._writer.close()


def _wait_ended(processes: list[Any]) -> None:
    """Until each of `processes` has ended, or KILL_WAIT_S have passed."""
    deadline = time.monotonic() + KILL_WAIT_S
    sentinels = [p.sentinel for p in processes]
    while sentinels and (left := deadline - time.monotonic()) > 0:
        ended = multiprocessing.connection.wait(sentinels, timeout=left)
        sentinels = [s for s in sentinels if s not in ended]


def take_chunk(
    chunk: Chunk, base: int, result: ChunkResult, lines: memoryview, gate: Any, emit: Any
) -> None:
    """A chunk's records through the gate, in order (error rows are written as they come).
    When every scored row is admitted (as a rule) its lines are written as the worker laid
    them out and the worker's tallies count them all at once; otherwise each admitted row
    is written and counted on its own."""
    records = result.records
    if not (result.scored == len(records) and gate.admit_ids([r[1] for r in records])):
        spans = _admit_each(chunk, base, result, gate, emit)
        if len(spans) < result.scored:
            # Copied out: the slot takes a later chunk's lines once this one is taken.
            rows = [(bytes(lines[a : a + n]), bytes(lines[h : h + m])) for a, n, h, m in spans]
            emit.scored_rows(rows)
            return
    rows_end = result.rows_length
    emit.scored_block(
        lines[:rows_end],
        lines[rows_end : rows_end + result.hits_length],
        result.scored,
        (result.tally, result.digest),
    )


def _admit_each(
    chunk: Chunk, base: int, result: ChunkResult, gate: Any, emit: Any
) -> list[tuple[int, int, int, int]]:
    """Each record through the gate on its own; the admitted rows' spans in the chunk's
    lines (report line start and length, then hitlog lines start and length)."""
    spans: list[tuple[int, int, int, int]] = []
    at = 0
    hits_at = result.rows_length
    for line, attempt_id, err, length, hits_length in result.records:
        if err is not None:
            err = dataclasses.replace(err, line=err.line + base)
        if gate.admit(chunk.name, line + base, attempt_id, err, emit.input_error):
            assert length > 0, "the gate admits only attempts the worker scored"
            spans.append((at, length, hits_at, hits_length))
        if length > 0:
            at += length
            hits_at += hits_length
    return spans


def input_chunks(inputs: InputSet, size: int = CHUNK_BYTES) -> Iterator[Chunk]:
    for path in inputs.paths:
        yield from file_chunks(path, inputs.format_of(path) == "garak", size)


def _in_order(
    pool: ProcessPoolExecutor,
    chunks: Iterator[Chunk],
    workers: int,
    on_forked: Callable[[], None] | None = None,
) -> Iterator[tuple[Chunk, int, int, ChunkResult]]:
    """Each chunk's result in input order, with the number of the file's lines before it and
    its slot in the shared memory; at most `AHEAD_PER_WORKER` chunks per worker are out at
    once, so a slot is handed out again only after its last chunk was taken. `on_forked` is
    called once the pool has forked its workers (at its first task)."""
    slots = AHEAD_PER_WORKER * workers
    pending: deque[tuple[Chunk, int, Future[ChunkResult]]] = deque()
    base: dict[str, int] = {}

    def ready() -> tuple[Chunk, int, int, ChunkResult]:
        chunk, slot, future = pending.popleft()
        result = future.result()
        # A file's first chunk starts at line 1 (a file given twice is read twice).
        before = base.get(chunk.name, 0) if chunk.start else 0
        base[chunk.name] = before + result.lines
        return chunk, before, slot, result

    for number, chunk in enumerate(chunks):
        slot = number % slots
        pending.append((chunk, slot, pool.submit(score_chunk, chunk, slot)))
        if number == 0 and on_forked is not None:
            on_forked()
        if len(pending) >= slots:
            yield ready()
    while pending:
        yield ready()
