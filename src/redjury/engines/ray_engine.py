"""The Ray engine: the single-process run's stages, with scoring spread over a Ray cluster.

A run with detectors only over JSONL files goes through `redjury.engines.ray_files`: Ray
actors read byte ranges of the files themselves and the driver writes the local engine's
files from their compact results. The rest (judge panels, Parquet, merged garak reports)
goes this way: the driver runs the read stage (`InputGate`: line errors, duplicate ids, resumed ids) and
hands blocks of attempts to Ray Data. Detectors run in Ray Data tasks (`map_batches`);
judge panels in a pool of actors, each with its own async judge engine and a share of the
configured concurrency limits (split across actors, never multiplied). A worker scores a
block, writes its attempt rows and hitlog rows as shard files (tmp + rename, named by the
run session and block number, so a retried block replaces its own files), and sends back
its tallies. The driver merges the tallies in block order (so the eval rows, probe
summaries, digest and hitlog equal a single-process run's), gathers the shards into
`redjury.report.jsonl` (each attempt once) and finishes like `Run.finish`.

Shards live in `<out>/redjury.shards/`; every node must see `<out>` (a shared filesystem).
A rerun into the same folder skips the attempts already in a shard or in the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import re
import shutil
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from redjury.attempts import Attempt
from redjury.detectors.base import Detector
from redjury.engines.base import Engine
from redjury.engines.ray_files import reads_on_workers, run_files_on_ray
from redjury.engines.sources import RaySources
from redjury.errors import RunError
from redjury.evaluators import Evaluator, RunTally
from redjury.idstore import IdStore
from redjury.inputs import AttemptSource
from redjury.judges.config import EvaluationSpec
from redjury.pipeline import (
    ResumeState,
    Run,
    RunInterrupted,
    RunOptions,
    RunOutput,
    RunResult,
    RunTallies,
    build_detectors,
    detector_specs,
)
from redjury.plugins import ENGINES
from redjury.redaction import run_redactors
from redjury.report.digest import DigestBuilder
from redjury.report.hitlog import HitlogLines
from redjury.report.jsonl import dumps_line, read_rows
from redjury.rows import AttemptScorer, is_async

SHARD_DIR = "redjury.shards"
ROWS_SUFFIX = ".rows.jsonl"
HITS_SUFFIX = ".hits.jsonl"
# Attempts per block with detectors only.
BLOCK_SYNC = 2048
# With judges, an actor judges one block at a time: a block is this many rounds of its share
# of the concurrency limit, so the pause at each block's end (the last round drains, shards
# are written, the next block comes) costs a few per cent at most.
JUDGED_ROUNDS = 16
# Blocks an actor judges at once (sharing its engine and its limits).
BLOCKS_PER_ACTOR = 2
# Attempts handed to Ray Data at once; the driver reads the next wave while one is scored.
# (A wave of judged blocks starts its own actor pool: judged waves are as long as possible.)
WAVE_ATTEMPTS = 65_536
# Completion-row judge counters that are peaks, not sums.
_PEAKS = frozenset({"in_flight", "max_in_flight"})
# Seconds to wait for a Ray cluster's head to answer before the run is refused.
CONNECT_TIMEOUT_S = 5.0
T = TypeVar("T")
_ID_HEAD = re.compile(rb'^\{"entry_type":"attempt","status":2,"id":"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Job:
    """What every worker needs to score blocks of one run session (pickled once per wave)."""

    key: str
    shard_dir: str
    header: dict[str, Any]
    evaluator: Evaluator
    specs: list[tuple[type[Detector], Any]]
    evaluation: EvaluationSpec | None
    redact: bool
    use_cache: bool
    cache_path: str | None
    generator: str | None
    generations_per_prompt: int | None

    def detectors(self) -> list[Detector]:
        detectors: list[Detector] = [cls(params) for cls, params in self.specs]
        if self.evaluation is not None:
            from redjury.judges.panel import JudgePanelDetector

            detectors.append(
                JudgePanelDetector.from_spec(
                    self.evaluation,
                    cache_path=Path(self.cache_path) if self.cache_path else None,
                    use_cache=self.use_cache,
                )
            )
        return detectors

    def scorer(self, detectors: list[Detector]) -> AttemptScorer:
        return AttemptScorer(detectors, *run_redactors(detectors), self.redact)

    def shard(self, block: int, suffix: str) -> Path:
        return Path(self.shard_dir) / f"{self.key}-{block:08d}{suffix}"


def split_limits(evaluation: EvaluationSpec, actors: int) -> EvaluationSpec:
    """Each actor's share of the judge concurrency limits: together never above the config's."""
    return evaluation.model_copy(
        update={
            "max_concurrency": max(1, evaluation.max_concurrency // actors),
            "per_endpoint_concurrency": max(1, evaluation.per_endpoint_concurrency // actors),
        }
    )


def block_size(job: Job) -> int:
    if job.evaluation is None:
        return BLOCK_SYNC
    return JUDGED_ROUNDS * job.evaluation.max_concurrency


def judge_actors(evaluation: EvaluationSpec, wanted: int) -> int:
    """Actors such that every one gets at least one request of each limit."""
    return max(1, min(wanted, evaluation.max_concurrency, evaluation.per_endpoint_concurrency))


# -- the worker side -------------------------------------------------------------------------


def _write_atomic(path: Path, lines: Iterator[bytes]) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        for line in lines:
            fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def finish_block(job: Job, block: int, rows: list[dict[str, Any]], stats: Any = None) -> bytes:
    """Tally one block's rows, write its shards (hitlog first), return the pickled tallies."""
    tally = RunTally(job.evaluator)
    digest = DigestBuilder(job.header)
    build = HitlogLines(job.generator, job.generations_per_prompt)
    hits: list[bytes] = []

    def on_hits(row: dict[str, Any], detector: str, failed: list[tuple[int, float]]) -> None:
        hits.append(build.lines(row, detector, failed))

    for row in rows:
        tally.add(row, on_hits)
        digest.add_attempt(row)
    _write_atomic(job.shard(block, HITS_SUFFIX), iter(hits))
    # The rows shard is written last: its presence says the block is done.
    _write_atomic(job.shard(block, ROWS_SUFFIX), (dumps_line(r) for r in rows))
    return pickle.dumps((block, len(rows), tally, digest, stats))


_SCORERS: dict[str, AttemptScorer] = {}


def score_blocks(batch: Any, job: Job) -> dict[str, list[Any]]:
    """A Ray Data task: score blocks with the detectors (built once per worker process)."""
    scorer = _SCORERS.get(job.key)
    if scorer is None:
        _SCORERS.clear()
        scorer = _SCORERS[job.key] = job.scorer(job.detectors())
    out: list[bytes] = []
    for block, payload in zip(batch["block"], batch["payload"], strict=True):
        attempts: list[Attempt] = pickle.loads(payload)
        out.append(finish_block(job, int(block), scorer.score_window(attempts)))
    return {"result": out}


class JudgeBlocks:
    """A Ray Data actor: judges blocks with redjury's async engine on the actor's event loop.

    `__call__` is a coroutine, so Ray Data runs it on one event loop per actor and an actor
    takes a second block while the first one's last requests drain: the actor's share of the
    concurrency limit stays busy across block ends. Both blocks share the actor's engine, so
    its limits hold for the two together.
    """

    def __init__(self, job: Job) -> None:
        self.job = job
        self.actor = uuid.uuid4().hex
        self.detectors = job.detectors()
        self.scorer = job.scorer(self.detectors)

    async def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: list[bytes] = []
        for block, payload in zip(batch["block"], batch["payload"], strict=True):
            attempts: list[Attempt] = pickle.loads(payload)
            rows = await asyncio.gather(*(self.scorer.score_one(a) for a in attempts))
            for det in self.detectors:
                det.flush_cache()  # the block's verdicts reach the judge cache before its shards
            stats = (self.actor, self._stats())
            out.append(
                await asyncio.to_thread(finish_block, self.job, int(block), list(rows), stats)
            )
        return {"result": out}

    def _stats(self) -> dict[str, dict[str, int]]:
        """This actor's counters so far (sums since it started; peaks as peaks)."""
        out = {}
        for det in self.detectors:
            stats = getattr(det, "stats", None)
            if callable(stats):
                out[det.name] = dict(stats())
        return out


def merge_actor_stats(
    latest: dict[str, dict[str, dict[str, int]]],
) -> dict[str, dict[str, int]]:
    """The whole run's judge counters from each actor's latest counters: sums add up across
    actors, peaks take the highest."""
    merged: dict[str, dict[str, int]] = {}
    for per_detector in latest.values():
        for name, counts in per_detector.items():
            into = merged.setdefault(name, {})
            for k, v in counts.items():
                into[k] = max(into.get(k, 0), v) if k in _PEAKS else into.get(k, 0) + v
    return merged


def _latest(before: dict[str, dict[str, int]], now: dict[str, dict[str, int]]) -> None:
    """Keep each counter's highest value: an actor's counters only grow, and its blocks may
    report out of order."""
    for name, counts in now.items():
        into = before.setdefault(name, {})
        for k, v in counts.items():
            into[k] = max(into.get(k, 0), v)


# -- the driver ------------------------------------------------------------------------------


@dataclass
class Shards:
    """The shard folder of an output: rows kept by earlier sessions, new blocks of this one."""

    root: Path
    key: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def earlier(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(f"*{ROWS_SUFFIX}") if not self.mine(p))

    def mine(self, path: Path) -> bool:
        return path.name.startswith(self.key + "-")

    def rows_of_mine(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob(f"{self.key}-*{ROWS_SUFFIX}"))

    def remove_mine(self) -> None:
        """Take back this session's shards (a refused input leaves no trace)."""
        if self.root.is_dir():
            for p in self.root.iterdir():
                if self.mine(p):
                    p.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.root.rmdir()  # only when empty: earlier sessions' shards stay


def _row_id(line: bytes) -> str | None:
    head = _ID_HEAD.match(line)
    if head is not None and b"\\" not in head.group(1):
        return head.group(1).decode()
    row = orjson.loads(line)
    return str(row.get("id")) if isinstance(row, dict) else None


class RayRun(Run):
    """`Run` with the score stage on Ray; read, tally and write are the single-process parts."""

    def __init__(self, options: RunOptions) -> None:
        if options.out_dir is None:
            raise RunError("the Ray engine writes files: give an output folder (--out)")
        source: AttemptSource = (
            RaySources(list(options.inputs)) if options.source is None else options.source
        )
        super().__init__(options)
        self.inputs = source
        self.shards = Shards(options.out_dir / SHARD_DIR)
        # Blocks scored but not yet merged (merging goes in block order, as they come).
        self.blocks: dict[int, tuple[int, RunTally, DigestBuilder]] = {}
        self.merged = 0
        self._tallies: RunTallies | None = None
        # Judge actor → its latest counters (see `merge_actor_stats`).
        self.actor_stats: dict[str, dict[str, dict[str, int]]] = {}
        self.stats: dict[str, dict[str, int]] = {}
        # Ids resumed from earlier sessions' shards (not in the report): `gather` copies them.
        # Made beside the kept ids as a resume reads them (`replay_all`).
        self.from_shards = IdStore()

    def check_paths(self) -> None:
        missing = self.inputs.missing() if isinstance(self.inputs, RaySources) else None
        if missing is not None:
            raise RunError(str(missing))
        self.check_outputs()

    def execute(self) -> RunResult:
        import ray

        self.check_paths()
        detectors = build_detectors(self.options)
        judged = any(is_async(d) for d in detectors)
        started = not ray.is_initialized()
        if started:
            connect(self.options.ray_address)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        try:
            with self.guarded():
                return self._execute(detectors, judged)
        except KeyboardInterrupt as interrupt:
            raise self._interrupted(interrupt) from None
        except OSError as exc:
            raise self._failed_on_disk(exc) from None
        finally:
            asyncio.run(_close(detectors))
            if started:
                _quiet_after_shutdown()
                ray.shutdown()

    def _interrupted(self, interrupt: KeyboardInterrupt | None = None) -> RunInterrupted:
        """As `Run`'s, counting the rows in this session's shards (the blocks that finished)."""
        self.scored = sum(_count_lines(p) for p in self.shards.rows_of_mine())
        return super()._interrupted(interrupt)

    def _execute(self, detectors: list[Detector], judged: bool) -> RunResult:
        if judged:
            self.check_first()
        output, state, header = self.open(detectors)
        tallies = self.tallies(header, output)
        done = self.replay_all(state, tallies, output)
        self._tallies = tallies
        if judged or self.config.evaluation.audit.enabled:
            asyncio.run(self._gate(detectors, state, output))
        gate = self._input_gate(state, refuse=not self.options.skip_bad_lines)
        gate.done = done
        job = self.job(header, tallies, judged)
        self.shards.root.mkdir(parents=True, exist_ok=True)
        output.mark()
        try:
            attempts = gate.attempts(self.inputs.records(), self._input_error(output))
            self.score(_blocks(attempts, block_size(job)), job, judged)
        finally:
            output.flush()
        self.input_errors = gate.bad
        refusal = gate.refusal(self._input_names(), self.inputs.empty_reason())
        if refusal is not None:
            self.shards.remove_mine()
            output.rollback()
            raise refusal
        self.merge(tallies, output)
        if not self.options.keep_shards:
            self.gather(output)
        eval_rows = self.finish(header, tallies, detectors)
        if not self.options.keep_shards:
            shutil.rmtree(self.shards.root, ignore_errors=True)
        return self._result(eval_rows)

    async def _gate(self, detectors: list[Detector], state: ResumeState, output: RunOutput) -> None:
        """The judge audit on the driver; its HTTP clients are closed on the loop that made them."""
        try:
            await self.gate(detectors, state, output)
        finally:
            await _close(detectors)

    def _input_error(self, output: RunOutput) -> Any:
        from redjury.pipeline import input_error_row

        return lambda err: output.report.write(input_error_row(err))

    def replay_all(self, state: ResumeState, tallies: RunTallies, output: RunOutput) -> IdStore:
        """Count the rows an earlier run kept, in the report and in shards, each id once;
        id -> the kept row's content hash."""
        self.replay(state, tallies)
        done = state.attempt_hashes()
        # Beside the kept ids (as the input gate's ids are, and `gather`'s beside these):
        # one filter and one table file between them all, not one each.
        self.from_shards = done.beside()
        resumed = self.resumed
        for path in self.shards.earlier():
            for row in read_rows(path):
                key = str(row.get("id"))
                if row.get("entry_type") == "attempt" and done.add(key, row.get("content_hash")):
                    self.from_shards.add(key)
                    tallies.add(row)
                    self.resumed += 1
        if self.resumed > resumed:
            self._say(f"resuming: {self.resumed} attempts already in {self.options.out_dir}")
        return done

    def job(self, header: dict[str, Any], tallies: RunTallies, judged: bool) -> Job:
        evaluation = self.config.evaluation if self.config.evaluation.judges else None
        if evaluation is not None:
            evaluation = split_limits(evaluation, self.actors())
        return Job(
            key=self.shards.key,
            shard_dir=str(self.shards.root.resolve()),
            header=header,
            evaluator=self.evaluator,
            specs=detector_specs(self.options),
            evaluation=evaluation,
            redact=self.config.reporting.redact,
            use_cache=self.options.use_cache,
            cache_path=str(self.options.cache_path) if self.options.cache_path else None,
            generator=tallies.build_hit.generator,
            generations_per_prompt=tallies.build_hit.generations_per_prompt,
        )

    def workers(self) -> int:
        import ray

        if self.options.ray_workers:
            return self.options.ray_workers
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def actors(self) -> int:
        return judge_actors(self.config.evaluation, self.workers())

    def score(self, blocks: Iterator[tuple[int, bytes]], job: Job, judged: bool) -> None:
        """Waves of blocks through Ray Data; the next wave is read (in a thread) while one is
        scored here, in the main thread, where Ctrl-C or SIGTERM ends Ray Data's iteration."""
        size = max(1, WAVE_ATTEMPTS // block_size(job))
        reading = _in_background(_wave, blocks, size)
        try:
            while wave := reading.result():
                reading = _in_background(_wave, blocks, size)
                self._collect(self._run_wave(wave, job, judged))
        except BaseException:
            # The reader writes input_error rows to the report: done before the report's
            # last flush (a wave's reading is bounded).
            with contextlib.suppress(BaseException):
                reading.result()
            raise

    def _run_wave(self, wave: list[tuple[int, bytes]], job: Job, judged: bool) -> list[bytes]:
        import ray

        items = [{"block": b, "payload": p} for b, p in wave]
        ds: Any = ray.data.from_items(items, override_num_blocks=len(items))
        if judged:
            ds = ds.map_batches(
                JudgeBlocks,
                fn_constructor_kwargs={"job": job},
                batch_size=1,
                # Two blocks at once per actor: one starts while the other drains.
                compute=ray.data.ActorPoolStrategy(
                    size=self.actors(),
                    max_tasks_in_flight_per_actor=BLOCKS_PER_ACTOR,
                    max_concurrent_calls_per_actor=BLOCKS_PER_ACTOR,
                ),
            )
        else:
            ds = ds.map_batches(
                score_blocks,
                fn_kwargs={"job": job},
                batch_size=1,
                compute=ray.data.TaskPoolStrategy(size=self.workers()),
            )
        return [row["result"] for row in ds.iter_rows()]

    def _collect(self, results: list[bytes]) -> None:
        for payload in results:
            block, n, tally, digest, stats = pickle.loads(payload)
            self.blocks[block] = (n, tally, digest)
            self.scored += n
            if stats is not None:
                actor, counts = stats
                _latest(self.actor_stats.setdefault(actor, {}), counts)
        self._merge_ready()

    def _merge_ready(self) -> None:
        """Merge the blocks that are next in order (tallies, then their hitlog shards), so
        the driver holds only the blocks that finished ahead of an earlier one."""
        assert self._tallies is not None and self.output is not None
        hitlog = self.output.hitlog
        while self.merged in self.blocks:
            _, tally, digest = self.blocks.pop(self.merged)
            self._tallies.tally.merge(tally)
            self._tallies.digest.merge(digest)
            hitlog.flush()
            with self.shards_of(self.merged, HITS_SUFFIX).open("rb") as src:
                shutil.copyfileobj(src, hitlog._fh)  # type: ignore[union-attr]
            self.merged += 1

    def merge(self, tallies: RunTallies, output: RunOutput) -> None:
        """The judge counters of all actors (the blocks were merged as they came, in order:
        every block of the input has come by now)."""
        assert not self.blocks, f"blocks never merged: {sorted(self.blocks)[:5]}"
        self.stats = merge_actor_stats(self.actor_stats)

    def shards_of(self, block: int, suffix: str) -> Path:
        return self.shards.root / f"{self.shards.key}-{block:08d}{suffix}"

    def gather(self, output: RunOutput) -> None:
        """Earlier sessions' shards (each id once), then this session's blocks in order."""
        report = output.report
        report.flush()
        fh = report._fh  # type: ignore[union-attr]
        written = self.from_shards.beside()
        for path in self.shards.earlier():
            with path.open("rb") as src:
                for line in src:
                    key = _row_id(line) if line.endswith(b"\n") else None
                    if key is not None and key in self.from_shards and written.add(key):
                        fh.write(line)
        written.close()
        self.from_shards.close()
        for block in range(self.merged):
            with self.shards_of(block, ROWS_SUFFIX).open("rb") as src:
                shutil.copyfileobj(src, fh)
        report.flush()

    def _completion(self, header: dict[str, Any], detectors: list[Detector]) -> dict[str, Any]:
        completion = super()._completion(header, [])
        completion["engine"] = "ray"
        for name, stats in sorted(self.stats.items()):
            completion[f"{name}_stats"] = stats
        return completion


def _wave(blocks: Iterator[tuple[int, bytes]], size: int) -> list[tuple[int, bytes]]:
    return [b for _, b in zip(range(size), blocks, strict=False)]


def _in_background(fn: Callable[..., T], *args: Any) -> Future[T]:
    """`fn(*args)` in a daemon thread, so that no exit waits for it."""
    future: Future[T] = Future()

    def work() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the waiting driver
                future.set_exception(exc)

    threading.Thread(target=work, name="redjury-ray-wave", daemon=True).start()
    return future


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _blocks(attempts: Iterator[Attempt], size: int) -> Iterator[tuple[int, bytes]]:
    block: list[Attempt] = []
    number = 0
    for attempt in attempts:
        block.append(attempt)
        if len(block) >= size:
            yield number, pickle.dumps(block, protocol=5)
            number += 1
            block = []
    if block:
        yield number, pickle.dumps(block, protocol=5)


async def _close(detectors: list[Detector]) -> None:
    for det in detectors:
        await det.aclose()


def connect(address: str | None) -> None:
    """Start or join Ray for a run. No address: RAY_ADDRESS when set, else a new local Ray,
    never a cluster that an earlier `ray start` left its address file for. A cluster that
    does not answer within `CONNECT_TIMEOUT_S` refuses the run (exit 2), naming the address."""
    import ray

    from redjury.interrupts import handlers_kept

    origin = "--ray-address"
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, origin = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    if address is not None and address != "local":
        _check_head(address, origin)
    try:
        with handlers_kept():  # ray.init sets a SIGTERM handler of its own
            ray.init(address=address or "local", log_to_driver=False)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise RunError(f"{origin} {address}: cannot join the Ray cluster: {exc}") from None


def _check_head(address: str, origin: str) -> None:
    """Refuse an address whose cluster head does not accept a connection (Ray itself waits
    20 s for an address that does not answer, and without end for a stale address file)."""
    head, found_in = _head_of(address, origin)
    host, _, port = head.rpartition(":")
    if not port.isdigit():
        raise RunError(f"{origin} {address}: not a Ray address (host:port, ray://host:port, auto)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RunError(
            f"{origin} {address}: no Ray cluster answers at {head}{found_in} ({reason}); "
            "start it, give another address, or leave --ray-address out for a local Ray"
        ) from None


def _head_of(address: str, origin: str) -> tuple[str, str]:
    """host:port of the cluster head an address names, and where `auto` found it."""
    if "://" in address:  # ray://head:10001, a Ray Client server
        return address.split("://", 1)[1].rstrip("/"), ""
    if address != "auto":
        return address, ""
    from ray._common.utils import get_ray_address_file
    from ray._private.services import canonicalize_bootstrap_address

    try:
        head = canonicalize_bootstrap_address("auto")
    except ConnectionError:
        head = None
    if head is None:
        raise RunError(f"{origin} auto: no Ray cluster is running on this machine")
    if os.environ.get("RAY_ADDRESS"):
        return head, " (from RAY_ADDRESS)"
    return head, f" (from {get_ray_address_file(None)}, left by `ray start`)"


def run_on_ray(options: RunOptions) -> RunResult:
    """Judge the inputs on Ray into `options.out_dir`: the same files as a local run."""
    try:
        import ray
    except ImportError:
        raise RunError("the Ray engine needs Ray: pip install 'redjury[ray]'") from None
    if options.out_dir is None or not reads_on_workers(options):
        return RayRun(options).execute()
    started = not ray.is_initialized()
    if started:
        connect(options.ray_address)
    try:
        return run_files_on_ray(options)
    finally:
        if started:
            _quiet_after_shutdown()
            ray.shutdown()


ENGINE = ENGINES.register(Engine("ray", run_on_ray))


def _quiet_after_shutdown() -> None:
    """Before this run's own Ray stops: Ray Data's background threads (its stats reporter)
    may still call into Ray afterwards. Such a call must neither start a new local Ray
    (auto-connect) nor print a traceback about a Ray that is gone."""
    from ray._private import auto_init_hook

    auto_init_hook.enable_auto_connect = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
