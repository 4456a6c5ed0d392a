"""The Ray engine over JSONL files with detectors only: Ray actors read the input themselves.

The driver cuts each input file into byte ranges of whole lines (`processes.file_chunks`,
offsets only: it never reads a line) and hands them round-robin to one actor per worker.
An actor opens the file at that range, parses, checks, scores and tallies the chunk exactly
as a local worker process does (`processes.read_and_score`) and sends back a compact
result: per record its line, id or error and the lengths of its lines, the chunk's tallies
and digest, and its report and hitlog lines in one block of bytes. The driver takes the
results in input order through the same code as the local engine (`processes.take_chunk`:
the input gate, duplicate ids, the report and hitlog in order, the tallies), so the files
are the local engine's. At most `AHEAD_PER_WORKER` chunks per actor are out at once: the
driver holds a few results, whatever the size of the input.

Every node must see the input files at the same path (a shared filesystem, as the output
folder of a judged Ray run). A resumed run reads and scores on the driver, as the local
engine does (each resumed attempt is compared with its kept row); so does a run whose
inputs cannot be cut (Parquet, a merged garak report), which the judged path takes
(`redjury.engines.ray_engine`).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from redjury.detectors.base import Detector
from redjury.engines.processes import (
    AHEAD_PER_WORKER,
    Chunk,
    ChunkResult,
    WorkerJob,
    cuttable,
    input_chunks,
    read_and_score,
    take_chunk,
)
from redjury.evaluators import Evaluator
from redjury.inputs import InputSet
from redjury.pipeline import Run, RunOptions, RunResult, detector_specs
from redjury.redaction import run_redactors
from redjury.report.hitlog import HitlogLines
from redjury.rows import AttemptScorer

# Bytes of input an actor reads and scores per task: a few thousand attempts, so Ray's
# per-task cost (a millisecond or two) is well under 1% of the task's time.
RAY_CHUNK_BYTES = 2 << 20
# An actor that dies (a node lost, a worker killed) is started again and its chunks sent
# again; a chunk's result is only taken once, in order, so nothing is lost or doubled.
MAX_RESTARTS = 3


def reads_on_workers(options: RunOptions) -> bool:
    """Whether a Ray run goes this way: detectors only (no judge panel, no audit), no
    async detector, every input a JSONL file that can be cut at line ends."""
    config = options.config
    if options.source is not None or config.evaluation.judges or config.evaluation.audit.enabled:
        return False
    if any(cls.adetect is not Detector.adetect for cls, _ in detector_specs(options)):
        return False
    return cuttable(InputSet(list(options.inputs)))


@dataclass(frozen=True)
class ActorJob:
    """What every actor needs to score chunks of one run (sent once to each; kept by Ray to
    start it again after a crash); each actor builds its detectors from it."""

    scans: dict[str, Any]
    evaluator: Evaluator
    header: dict[str, Any]
    specs: list[tuple[type[Detector], Any]]
    redact: bool
    generator: str | None
    generations_per_prompt: int | None

    def worker_job(self) -> WorkerJob:
        detectors = [cls(params) for cls, params in self.specs]
        scorer = AttemptScorer(detectors, *run_redactors(detectors), self.redact)
        build_hit = HitlogLines(self.generator, self.generations_per_prompt)
        return WorkerJob(self.scans, scorer, self.evaluator, self.header, build_hit, frozenset())


class ChunkScorer:
    """A Ray actor (one per worker): reads and scores the chunks it is given."""

    def __init__(self, job: ActorJob) -> None:
        self.job = job.worker_job()

    def score(self, chunk: Chunk) -> ChunkResult:
        result, lines = read_and_score(self.job, chunk)
        result.data = b"".join(lines)
        return result


@dataclass
class RayActors:
    """The score stage of a run on Ray actors (`pipeline.ScoringSpread`)."""

    count: int
    remote = True

    def workers(self, run: Run, detectors: list[Detector]) -> int:
        return self.count

    def score(
        self, run: Run, scorer: AttemptScorer, gate: Any, emit: Any, header: dict[str, Any]
    ) -> None:
        import ray

        tallies = emit.tallies
        job = ActorJob(
            scans=dict(run.inputs.scans),  # type: ignore[attr-defined]
            evaluator=run.evaluator,
            header=header,
            specs=detector_specs(run.options),
            redact=run.config.reporting.redact,
            generator=tallies.build_hit.generator,
            generations_per_prompt=tallies.build_hit.generations_per_prompt,
        )
        actor: Any = ray.remote(ChunkScorer).options(
            num_cpus=1,
            max_restarts=MAX_RESTARTS,
            max_task_retries=MAX_RESTARTS,
            scheduling_strategy="SPREAD",
        )
        actors = [actor.remote(job) for _ in range(self.count)]
        try:
            chunks = input_chunks(run.inputs, RAY_CHUNK_BYTES)  # type: ignore[arg-type]
            for chunk, base, result in _in_order(actors, chunks):
                assert result.data is not None
                with memoryview(result.data) as lines:
                    take_chunk(chunk, base, result, lines, gate, emit)
        finally:
            for a in actors:
                with contextlib.suppress(Exception):
                    ray.kill(a)
        emit.flush()


def _in_order(actors: list[Any], chunks: Iterator[Chunk]) -> Iterator[tuple[Chunk, int, Any]]:
    """Each chunk's result in input order with the number of its file's lines before it;
    chunk i goes to actor i mod N, at most `AHEAD_PER_WORKER` per actor out at once. The
    chunks still out when the run stops (Ctrl-C, an error) are cancelled."""
    import ray

    pending: deque[tuple[Chunk, Any]] = deque()
    base: dict[str, int] = {}
    limit = AHEAD_PER_WORKER * len(actors)

    def ready() -> tuple[Chunk, int, ChunkResult]:
        chunk, ref = pending.popleft()
        # Waited for in Python, not in `ray.get`: Ray turns a signal that lands in its own
        # wait into a plain KeyboardInterrupt, and SIGTERM would read as Ctrl-C.
        result: ChunkResult = ref.future().result()
        before = base.get(chunk.name, 0) if chunk.start else 0
        base[chunk.name] = before + result.lines
        return chunk, before, result

    try:
        for number, chunk in enumerate(chunks):
            pending.append((chunk, actors[number % len(actors)].score.remote(chunk)))
            if len(pending) >= limit:
                yield ready()
        while pending:
            yield ready()
    finally:
        for _, ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref)


class RayFilesRun(Run):
    """`Run` with its score stage on Ray actors that read the input files themselves."""

    def _completion(self, header: dict[str, Any], detectors: list[Detector]) -> dict[str, Any]:
        completion = super()._completion(header, detectors)
        completion["engine"] = "ray"
        return completion


def run_files_on_ray(options: RunOptions) -> RunResult:
    """Judge JSONL files with detectors on Ray actors (Ray already joined): `ray_workers`
    of them, or one per CPU of the cluster; never more than its CPUs (an actor holds one
    for the run, so one more would wait for a CPU that never comes)."""
    import ray

    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    workers = min(options.ray_workers or cpus, cpus)
    return RayFilesRun(options, spread=RayActors(workers)).execute()
