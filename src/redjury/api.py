"""The Python API: judge attempts, one reply, or the judges themselves, from code.

Everything the command line does goes through these functions; `redjury run` is
`evaluate(..., out=DIR, stream=sys.stdout)` plus flag parsing.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from redjury.attempts import Attempt
from redjury.config import RunConfig, load_config, parse_config
from redjury.detectors.base import Detector, Finding
from redjury.inputs import AttemptList, AttemptSource
from redjury.pipeline import RunOptions, RunResult
from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME, dumps, read_rows

if TYPE_CHECKING:
    import pandas

    from redjury.audit.runner import AuditResult

Attempts = str | Path | Sequence[str | Path] | Iterable[Attempt | Mapping[str, Any]]
ConfigLike = RunConfig | Mapping[str, Any] | str | Path | None


def as_config(config: ConfigLike) -> RunConfig:
    """A RunConfig from a RunConfig, a dict (the YAML's content) or a YAML file path."""
    if config is None:
        return load_config(None)
    if isinstance(config, RunConfig):
        return config
    if isinstance(config, str | Path):
        return load_config(config)
    return parse_config(dict(config), "config")


def _paths_or_source(attempts: Attempts) -> tuple[list[Path], AttemptSource | None]:
    if isinstance(attempts, str | Path):
        return [Path(attempts)], None
    items = list(attempts)
    if items and all(isinstance(a, str | Path) for a in items):
        return [Path(a) for a in items], None  # type: ignore[arg-type]
    return [], AttemptList([a if isinstance(a, Attempt) else dict(a) for a in items])  # type: ignore[arg-type]


class Results:
    """What a run found: attempt rows, eval rows with intervals, hitlog, audit, summary.

    Rows are plain dicts in the report's JSONL shape (see the README's "Reading the
    results"); `attempts` holds one per attempt with `detector_results`, `verdicts` and
    (redacted) `evidence`. A run written to a folder is read back only when asked.
    """

    def __init__(
        self,
        rows: list[dict[str, Any]] | None,
        hitlog: list[dict[str, Any]] | None,
        out_dir: Path | None = None,
        terminal: str = "",
        exit_code: int = 0,
        input_errors: int = 0,
        eval_rows: list[dict[str, Any]] | None = None,
    ) -> None:
        self._rows = rows
        self._hitlog = hitlog
        self.out_dir = out_dir
        self.terminal = terminal
        self.exit_code = exit_code
        self.input_errors = input_errors
        self._evals = eval_rows
        self._by_kind: dict[str, list[dict[str, Any]]] = {}
        # Why `exit_code` is 5: judges that gave no verdict too often, one line each.
        self.judge_failures: list[str] = []

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every report row, in the order written."""
        if self._rows is None:
            assert self.out_dir is not None
            self._rows = list(read_rows(self.out_dir / REPORT_NAME))
        return self._rows

    @property
    def hitlog(self) -> list[dict[str, Any]]:
        """One row per failing output, in garak's hitlog shape."""
        if self._hitlog is None:
            assert self.out_dir is not None
            self._hitlog = list(read_rows(self.out_dir / HITLOG_NAME))
        return self._hitlog

    def _kind(self, kind: str) -> list[dict[str, Any]]:
        if not self._by_kind:
            for row in self.rows:
                self._by_kind.setdefault(str(row.get("entry_type")), []).append(row)
        return self._by_kind.get(kind, [])

    @property
    def header(self) -> dict[str, Any]:
        """The run's `init` row: config, fingerprint, seed, detectors."""
        return next(iter(self._kind("init")), {})

    @property
    def attempts(self) -> list[dict[str, Any]]:
        """One row per attempt: its fields, scores, verdict labels and evidence."""
        return self._kind("attempt")

    @property
    def evals(self) -> list[dict[str, Any]]:
        """One row per probe × detector: counts, attack-success rate and its intervals."""
        return self._evals if self._evals is not None else self._kind("eval")

    @property
    def probe_summaries(self) -> list[dict[str, Any]]:
        """One row per probe with its output and detection counts."""
        return self._kind("probe_summary")

    @property
    def audit(self) -> list[dict[str, Any]]:
        """The judge audit's `audit` rows and its `audit_gate` row, when one ran."""
        return [r for r in self.rows if r.get("entry_type") in ("audit", "audit_gate")]

    @property
    def input_error_rows(self) -> list[dict[str, Any]]:
        """Bad input lines skipped with `skip_bad_lines` (file, line, field, reason)."""
        return self._kind("input_error")

    @property
    def digest(self) -> dict[str, Any]:
        """Breakdowns per intent, hazard, generator and the judges' agreement."""
        return next(iter(self._kind("digest")), {})

    def verdicts(self, detector: str) -> dict[str, list[str]]:
        """Verdict labels per attempt id for one detector."""
        return {
            r["id"]: r["verdicts"][detector]
            for r in self.attempts
            if detector in r.get("verdicts", {})
        }

    def summary(self) -> str:
        """The text the terminal shows: one line per probe × detector."""
        return self.terminal

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every report row to `path` as JSONL; returns the path."""
        target = Path(path)
        with target.open("w", encoding="utf-8") as fh:
            for row in self.rows:
                fh.write(dumps(row) + "\n")
        return target

    def to_pandas(self, kind: str = "eval") -> pandas.DataFrame:
        """A DataFrame of one kind of row (`eval`, `attempt`, `hitlog`, `probe_summary`, …).

        Needs pandas (`pip install 'redjury[pandas]'`).
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas needs pandas: pip install 'redjury[pandas]'") from exc
        rows = self.hitlog if kind == "hitlog" else self._kind(kind)
        return pd.DataFrame(rows)

    @classmethod
    def from_run(cls, result: RunResult, terminal: str) -> Results:
        """The results of a finished pipeline run (rows as the report file holds them)."""
        evals = [json.loads(dumps(r)) for r in result.eval_rows]
        results = cls(
            result.report_rows,
            result.hitlog_rows,
            result.out_dir,
            terminal,
            result.exit_code,
            result.input_errors,
            evals,
        )
        results.judge_failures = list(result.judge_failures)
        return results


async def aevaluate(
    attempts: Attempts,
    config: ConfigLike = None,
    *,
    out: str | Path | None = None,
    skip_bad_lines: bool = False,
    use_cache: bool = True,
    cache_path: str | Path | None = None,
    offline: bool = False,
    stream: TextIO | None = None,
    verbose: int = 0,
    colour: bool | None = None,
    progress: bool | None = None,
    config_path: str | None = None,
    preflight: bool = True,
    engine: str = "local",
    ray_address: str | None = None,
    ray_workers: int | None = None,
    keep_shards: bool = False,
    workers: int | None = None,
) -> Results:
    """Judge attempts inside a running event loop (the judges share that loop).

    `attempts`: Attempt objects, dicts in redjury's JSONL shape, or paths of files in any
    format `redjury run` reads. `config`: a RunConfig, a dict or a YAML path. Files are
    written only when `out` is given; the terminal lines go to `stream` when given, and are
    always in `Results.summary()`. `preflight=False` skips asking each judge endpoint once
    before judging. Raises `InputError` for bad input (unless `skip_bad_lines`),
    `ConfigError` for a bad config, `RunError` when the run cannot go on (a judge that fails
    its preflight included). `engine="ray"` runs on Ray (`ray_address`: None starts a local
    Ray, `"auto"` joins a cluster; see the README's Ray section). `workers`: processes that
    read and score a large JSONL input when no judge runs (None: one per CPU, 1: none).
    """
    options, capture = _options(
        attempts, config, out, skip_bad_lines, use_cache, cache_path, offline, stream,
        verbose, colour, progress, config_path, preflight,
    )  # fmt: skip
    options.engine, options.ray_address = engine, ray_address
    options.ray_workers, options.keep_shards = ray_workers, keep_shards
    options.workers = workers
    from redjury.engines import run
    from redjury.engines.local import local_run

    if engine != "local":  # the engine drives its own cluster: keep this loop free meanwhile
        import asyncio  # here: runs without judges never need it

        result = await asyncio.to_thread(run, options)
    else:
        result = await local_run(options).aexecute()
    return Results.from_run(result, capture.text())


def evaluate(
    attempts: Attempts,
    config: ConfigLike = None,
    *,
    out: str | Path | None = None,
    skip_bad_lines: bool = False,
    use_cache: bool = True,
    cache_path: str | Path | None = None,
    offline: bool = False,
    stream: TextIO | None = None,
    verbose: int = 0,
    colour: bool | None = None,
    progress: bool | None = None,
    config_path: str | None = None,
    preflight: bool = True,
    engine: str = "local",
    ray_address: str | None = None,
    ray_workers: int | None = None,
    keep_shards: bool = False,
    workers: int | None = None,
) -> Results:
    """Judge attempts with the configured detectors and judges; see `aevaluate`.

    Runs its own event loop: inside a running loop (a notebook cell with `await`, an agent
    framework), use `await aevaluate(...)`.
    """
    options, capture = _options(
        attempts, config, out, skip_bad_lines, use_cache, cache_path, offline, stream,
        verbose, colour, progress, config_path, preflight,
    )  # fmt: skip
    options.engine, options.ray_address = engine, ray_address
    options.ray_workers, options.keep_shards = ray_workers, keep_shards
    options.workers = workers
    from redjury.engines import run

    result = run(options)
    return Results.from_run(result, capture.text())


class _Tee(io.StringIO):
    """Keeps the terminal text for `Results.summary()` and, when asked, prints it too."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is not None:
            self.stream.write(text)
        return super().write(text)

    def flush(self) -> None:
        if self.stream is not None:
            self.stream.flush()

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def text(self) -> str:
        return self.getvalue()


def _options(
    attempts: Attempts,
    config: ConfigLike,
    out: str | Path | None,
    skip_bad_lines: bool,
    use_cache: bool,
    cache_path: str | Path | None,
    offline: bool,
    stream: TextIO | None,
    verbose: int,
    colour: bool | None,
    progress: bool | None,
    config_path: str | None,
    preflight: bool,
) -> tuple[RunOptions, _Tee]:
    paths, source = _paths_or_source(attempts)
    capture = _Tee(stream)
    if config_path is None and isinstance(config, str | Path):
        config_path = str(config)
    options = RunOptions(
        inputs=paths,
        config=as_config(config),
        out_dir=Path(out) if out is not None else None,
        skip_bad_lines=skip_bad_lines,
        use_cache=use_cache,
        cache_path=Path(cache_path) if cache_path is not None else None,
        verbose=verbose,
        colour=colour if colour is not None else (False if stream is None else None),
        progress=progress if progress is not None else (False if stream is None else None),
        stream=capture,
        config_path=config_path,
        offline=offline,
        source=source,
        preflight=preflight,
    )
    return options, capture


# -- one reply, inline -----------------------------------------------------------------------


@dataclass(frozen=True)
class Detection:
    """One detector's finding on one reply: score, verdict label, redacted evidence."""

    detector: str
    score: float | None
    verdict: str
    evidence: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def failed(self) -> bool:
        """True when the attack succeeded (BROKE_THROUGH) or the check FAILED."""
        return self.verdict in ("BROKE_THROUGH", "FAILED")

    @classmethod
    def of(cls, detector: str, finding: Finding) -> Detection:
        """A Detection from a detector's Finding (its raw sensitive values left behind)."""
        return cls(detector, finding.score, finding.verdict.value, finding.evidence, finding.reason)


@dataclass
class Detections:
    """Every finding on one reply, by detector name."""

    findings: dict[str, Detection]

    def __getitem__(self, name: str) -> Detection:
        return self.findings[name]

    def __iter__(self) -> Iterator[Detection]:
        return iter(self.findings.values())

    def __len__(self) -> int:
        return len(self.findings)

    @property
    def failed(self) -> list[Detection]:
        """The findings that say the attack worked or the check failed."""
        return [d for d in self.findings.values() if d.failed]


DetectorSpec = str | Mapping[str, Any] | Detector


def _detector_key(spec: DetectorSpec) -> Any:
    if isinstance(spec, Mapping):
        return json.dumps(dict(spec), sort_keys=True, default=str)
    return spec


@lru_cache(maxsize=256)
def _build_detector(key: Any) -> Detector:
    from redjury.config import resolve_detectors

    entry = json.loads(key) if isinstance(key, str) and key.startswith("{") else {"type": key}
    [(cls, params)] = resolve_detectors(parse_config({"detectors": [entry]}, "detectors"))
    return cls(params)


def _detectors(specs: Sequence[DetectorSpec] | None) -> list[Detector]:
    if specs is None:
        from redjury.detectors.registry import detector_classes

        specs = [n for n, c in detector_classes().items() if c.default_enabled]
    return [s if isinstance(s, Detector) else _build_detector(_detector_key(s)) for s in specs]


def _reply_attempt(reply: str | None, fields: dict[str, Any]) -> Attempt:
    data = {"id": fields.pop("id", "inline"), "outputs": [reply], **fields}
    return Attempt.model_validate(data)


def detect(
    reply: str | None,
    detectors: Sequence[DetectorSpec] | None = None,
    *,
    goal: str | None = None,
    **fields: Any,
) -> Detections:
    """Score one reply with the deterministic and heuristic detectors, inline.

    `detectors`: names (`"pii_leak"`), config entries (`{"type": "secret_exfiltration",
    "markers": [...]}`) or Detector objects; default: those on by default. Other attempt
    fields (`prompt`, `messages`, `notes={"triggers": [...]}`, `latency_ms`, …) go in
    `fields`. Built detectors are reused between calls. For judge-backed detectors use
    `adetect`.
    """
    attempt = _reply_attempt(reply, {"goal": goal, **fields})
    found = {}
    for det in _detectors(detectors):
        found[det.name] = Detection.of(det.name, det.detect(attempt)[0])
    return Detections(found)


async def adetect(
    reply: str | None,
    detectors: Sequence[DetectorSpec] | None = None,
    *,
    goal: str | None = None,
    **fields: Any,
) -> Detections:
    """`detect` for judge-backed detectors too (agentic quality judges, a judge panel).

    Detectors given as Detector objects keep their engine, limits and cache between calls;
    close them with `await det.aclose()` when done.
    """
    attempt = _reply_attempt(reply, {"goal": goal, **fields})
    dets = _detectors(detectors)
    import asyncio

    results = await asyncio.gather(*(d.adetect(attempt) for d in dets))
    return Detections(
        {d.name: Detection.of(d.name, r[0]) for d, r in zip(dets, results, strict=True)}
    )


def judge_panel(config: ConfigLike, *, use_cache: bool = True) -> Detector:
    """The judge panel of a config as a detector, for `adetect` (close it with `aclose`)."""
    from redjury.judges.panel import JudgePanelDetector

    cfg = as_config(config)
    if not cfg.evaluation.judges:
        raise ValueError("the config has no evaluation.judges")
    return JudgePanelDetector.from_spec(cfg.evaluation, use_cache=use_cache)


# -- the judges' audit -----------------------------------------------------------------------


def audit_judges(
    config: ConfigLike,
    *,
    out: str | Path | None = None,
    detector: str | Detector | None = None,
    use_cache: bool = True,
    cache_path: str | Path | None = None,
    offline: bool = False,
) -> AuditResult:
    """Measure the judge panel (or a detector) against human labels, as `redjury audit` does.

    Returns the metrics per judge and for the panel, the robustness flip rates and the gate
    (`result.gate["passed"]`); with `out`, also writes the `audit` rows and the `audit_gate`
    row to `out/redjury.report.jsonl`. Raises `AuditError` when it cannot run (no dataset
    offline, no judges).
    """
    import asyncio

    from redjury.audit.command import aaudit, audit_rows
    from redjury.report.jsonl import JsonlWriter

    cfg = as_config(config)
    result = asyncio.run(
        aaudit(
            cfg,
            detector=detector,
            use_cache=use_cache,
            cache_path=Path(cache_path) if cache_path is not None else None,
            offline=offline,
            echo=lambda _line: None,
        )
    )
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        writer = JsonlWriter(folder / REPORT_NAME, "w")
        try:
            for row in audit_rows(result, cfg.evaluation.audit.on_failure):
                writer.write(row)
        finally:
            writer.close()
    return result


# -- a finished run folder -------------------------------------------------------------------


def write_html(out_dir: str | Path) -> Path:
    """Write `out_dir/redjury.report.html` (one offline file) from the report; its path."""
    from redjury.report.outputs import write_html as _write_html

    return _write_html(Path(out_dir))


def print_summary(out_dir: str | Path, *, markdown: str | Path | None = None) -> None:
    """Print a run folder's breakdowns (probe × detector, intent, hazard, generator) as
    tables; with `markdown`, also write them there (every input-derived field escaped)."""
    from redjury.report.outputs import print_summary as _print_summary

    _print_summary(Path(out_dir), Path(markdown) if markdown is not None else None)
