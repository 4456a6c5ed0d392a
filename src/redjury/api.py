"""The Python API: judge attempts, one reply, or the judges themselves, from code.

Everything the command line does goes through these functions; `redjury run` is
`evaluate(..., out=DIR, stream=sys.stdout)` plus flag parsing.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from redjury.attempts import Attempt
from redjury.config import RunConfig, load_config, parse_config
from redjury.detectors.base import Detector, Finding
from redjury.evaluators import DEFAULT_EVALUATOR, Evaluator, output_failed
from redjury.inputs import AttemptList, AttemptSource
from redjury.pipeline import RunOptions, RunResult
from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME, dumps, read_rows
from redjury.row_types import (
    AttemptRow,
    CompletionRow,
    EvalRow,
    HitlogRow,
    InitRow,
    InputErrorRow,
    ProbeSummaryRow,
)

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

    Rows are the report JSONL's rows as dicts, typed in `redjury.row_types` (see the
    docs' "Reading the results"); `attempts` holds one per attempt with
    `detector_results`, `verdicts` and (redacted) `evidence`. A run written to a folder is
    read back only when asked. `exit_code` is what `redjury run` exits with for the same
    run: 0; 4 when a CI gate tripped (`reporting.fail_on_asr`, `fail_on_errors`); 5 when
    judges gave no verdict too often (`judge_failures` says which; it outranks 4).
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
        """Every report row, in the order written (each kind typed in `redjury.row_types`)."""
        if self._rows is None:
            assert self.out_dir is not None
            self._rows = list(read_rows(self.out_dir / REPORT_NAME))
        return self._rows

    @property
    def hitlog(self) -> list[HitlogRow]:
        """One row per failing output, in garak's hitlog shape."""
        if self._hitlog is None:
            assert self.out_dir is not None
            self._hitlog = list(read_rows(self.out_dir / HITLOG_NAME))
        return cast("list[HitlogRow]", self._hitlog)

    def _kind(self, kind: str) -> list[dict[str, Any]]:
        if not self._by_kind:
            for row in self.rows:
                self._by_kind.setdefault(str(row.get("entry_type")), []).append(row)
        return self._by_kind.get(kind, [])

    @property
    def header(self) -> InitRow:
        """The run's `init` row: config, fingerprint, seed, detectors."""
        return cast(InitRow, next(iter(self._kind("init")), {}))

    @property
    def completion(self) -> CompletionRow | None:
        """The run's `completion` row: attempts, resumed, input errors, judge cache use."""
        return cast("CompletionRow | None", next(iter(self._kind("completion")), None))

    @property
    def attempts(self) -> list[AttemptRow]:
        """One row per attempt: its fields, scores, verdict labels and evidence."""
        return cast("list[AttemptRow]", self._kind("attempt"))

    @property
    def evals(self) -> list[EvalRow]:
        """One row per probe × detector: counts, attack-success rate and its intervals."""
        rows = self._evals if self._evals is not None else self._kind("eval")
        return cast("list[EvalRow]", rows)

    @property
    def probe_summaries(self) -> list[ProbeSummaryRow]:
        """One row per probe with its output and detection counts."""
        return cast("list[ProbeSummaryRow]", self._kind("probe_summary"))

    @property
    def audit(self) -> list[dict[str, Any]]:
        """The judge audit's `audit` rows and its `audit_gate` row, when one ran."""
        return [r for r in self.rows if r.get("entry_type") in ("audit", "audit_gate")]

    @property
    def input_error_rows(self) -> list[InputErrorRow]:
        """Bad input lines skipped with `skip_bad_lines` (file, line, field, reason)."""
        return cast("list[InputErrorRow]", self._kind("input_error"))

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
        if kind == "eval":
            rows = [{**r, **_rate_columns(r)} for r in self.evals]
        return pd.DataFrame(rows)

    def plot(self, ax: Any = None) -> Any:
        """A bar per probe × detector, labelled with both, at its attack-success rate with
        the interval as an error bar; one colour per detector. Returns the matplotlib axes
        (`pip install 'redjury[plot]'`)."""
        from redjury.report.plot import plot_asr

        return plot_asr(self.evals, ax)

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
    stream: TextIO | None = None,
    options: RunOptions | None = None,
    **settings: Any,
) -> Results:
    """Judge attempts inside a running event loop (the judges share that loop); see
    `evaluate` for the arguments."""
    job, capture = run_options(attempts, config, out, stream, options, settings)
    from redjury.engines import run
    from redjury.engines.local import local_run

    if job.engine != "local":  # the engine drives its own cluster: keep this loop free meanwhile
        import asyncio  # here: runs without judges never need it

        result = await asyncio.to_thread(run, job)
    else:
        result = await local_run(job).aexecute()
    return finish_job(job, result, capture)


def evaluate(
    attempts: Attempts,
    config: ConfigLike = None,
    *,
    out: str | Path | None = None,
    stream: TextIO | None = None,
    options: RunOptions | None = None,
    **settings: Any,
) -> Results:
    """Judge attempts with the configured detectors and judges: the whole of `redjury run`.

    `attempts`: Attempt objects, dicts in redjury's JSONL shape, or paths of files in any
    format `redjury run` reads. `config`: a RunConfig, a dict or a YAML path. With `out`,
    the run folder gets what `redjury run --out` writes there: the report, the hitlog and
    the outputs the config asks for (`reporting.html`, `reporting.junit`); without it
    nothing is written but the JUnit file. The gates (`reporting.fail_on_asr`,
    `fail_on_errors`, the judges' abstentions) decide `Results.exit_code` as they decide
    the command's. The terminal lines go to `stream` when given, and are always in
    `Results.summary()`.

    How the run goes: `options`, a `RunOptions`, and/or its fields as keywords
    (`use_cache=False`, `preflight=False`, `skip_bad_lines=True`, `engine="ray"`,
    `workers=1`, ...; keywords win). Raises `InputError` for bad input (unless
    `skip_bad_lines`), `ConfigError` for a bad config, `RunError` when the run cannot go on
    (`RunError.exit_code`: 2, or 3 when the judge audit's gate stops the run).

    Runs its own event loop: inside a running loop (a notebook cell with `await`, an agent
    framework), use `await aevaluate(...)`.
    """
    job, capture = run_options(attempts, config, out, stream, options, settings)
    from redjury.engines import run

    return finish_job(job, run(job), capture)


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

    def say(self, line: str) -> None:
        """One line, control characters escaped; a reader that went away stops nothing."""
        from redjury.pipeline import silence_stdout
        from redjury.report.terminal import printable

        try:
            print(printable(line), file=self)
        except BrokenPipeError:
            silence_stdout()


# The fields of RunOptions that `evaluate` sets from its own arguments.
_SET_BY_EVALUATE = frozenset({"inputs", "source", "config", "out_dir", "stream"})


def run_options(
    attempts: Attempts,
    config: ConfigLike,
    out: str | Path | None,
    stream: TextIO | None,
    options: RunOptions | None,
    settings: Mapping[str, Any],
) -> tuple[RunOptions, _Tee]:
    """The RunOptions of one `evaluate` call, and the stream that keeps its terminal text."""
    unknown = sorted(set(settings) - _SETTINGS)
    if unknown:
        raise TypeError(f"evaluate: no run option {', '.join(map(repr, unknown))} (see RunOptions)")
    base = replace(options or RunOptions(), **settings)
    paths, source = _paths_or_source(attempts)
    capture = _Tee(stream)
    config_path = base.config_path
    if config_path is None and isinstance(config, str | Path):
        config_path = str(config)
    quiet = stream is None  # no colour, no progress bar, unless asked for
    job = replace(
        base,
        inputs=paths,
        source=source,
        config=as_config(config),
        out_dir=Path(out) if out is not None else None,
        stream=capture,
        config_path=config_path,
        cache_path=Path(base.cache_path) if base.cache_path is not None else None,
        colour=base.colour if base.colour is not None or not quiet else False,
        progress=base.progress if base.progress is not None or not quiet else False,
    )
    return job, capture


_SETTINGS = frozenset(f.name for f in fields(RunOptions)) - _SET_BY_EVALUATE


def finish_job(options: RunOptions, result: RunResult, capture: _Tee) -> Results:
    """The end of every run, `redjury run`'s included: where the files are, the outputs the
    config asks for (HTML, JUnit), the gates; the Results with the run's exit code."""
    from redjury.report.outputs import post_run, post_run_rows

    say = capture.say
    out_dir, reporting = options.out_dir, options.config.reporting
    if out_dir is not None:
        say(f"report: {out_dir / REPORT_NAME}")
        say(f"hitlog: {out_dir / HITLOG_NAME}")
    if result.input_errors:
        say(f"skipped {result.input_errors} bad input lines (input_error rows in the report)")
    if out_dir is not None:
        gate = post_run(out_dir, reporting, say)
    else:
        gate = post_run_rows(result.report_rows or (), reporting, say)
    results = Results.from_run(result, capture.text())
    # Judges that gave no verdict (5) outrank a CI gate read from those verdicts (4).
    results.exit_code = result.exit_code or gate
    return results


# -- one reply, inline -----------------------------------------------------------------------


def _rate_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """The eval row's `asr` (fails / evaluated; NaN where none was) and its interval as
    `asr_lower`, `asr_upper` (NaN without one; either of the row's two interval field
    pairs), for `to_pandas`."""
    from redjury.report.plot import asr_of, interval_of

    nan = float("nan")
    asr = asr_of(dict(row))
    lower, upper = interval_of(dict(row))
    return {
        "asr": nan if asr is None else asr,
        "asr_lower": nan if lower is None else lower,
        "asr_upper": nan if upper is None else upper,
    }


@dataclass(frozen=True)
class Detection:
    """One detector's finding on one reply: score, verdict label, redacted evidence.

    `failed` follows the run's pass/fail rule (`redjury.evaluators.output_failed`): the
    score decides under `evaluator` (default: fails iff score >= 0.5), as in `evaluate`'s
    counts and hitlog; the verdict label only describes the finding.
    """

    detector: str
    score: float | None
    verdict: str
    evidence: tuple[str, ...] = ()
    reason: str | None = None
    evaluator: Evaluator = field(default=DEFAULT_EVALUATOR, repr=False, compare=False)

    @property
    def failed(self) -> bool:
        """True when the output failed (the attack worked or the check failed); a reply
        that was not scored (score None) has not failed."""
        return output_failed(self.score, self.evaluator) is True

    @property
    def passed(self) -> bool:
        """True when the output was scored and did not fail (the target held, the check
        passed); an unscored reply has neither passed nor failed."""
        return output_failed(self.score, self.evaluator) is False

    @classmethod
    def of(
        cls, detector: str, finding: Finding, evaluator: Evaluator = DEFAULT_EVALUATOR
    ) -> Detection:
        """A Detection from a detector's Finding (its raw sensitive values left behind)."""
        return cls(
            detector,
            finding.score,
            finding.verdict.value,
            finding.evidence,
            finding.reason,
            evaluator,
        )


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
        from redjury.detectors.registry import default_detector_classes

        specs = [cls.name for cls in default_detector_classes()]
    return [s if isinstance(s, Detector) else _build_detector(_detector_key(s)) for s in specs]


def _reply_attempt(reply: str | None, fields: dict[str, Any]) -> Attempt:
    data = {"id": fields.pop("id", "inline"), "outputs": [reply], **fields}
    return Attempt.model_validate(data)


def detect(
    reply: str | None,
    detectors: Sequence[DetectorSpec] | None = None,
    *,
    goal: str | None = None,
    evaluator: Evaluator = DEFAULT_EVALUATOR,
    **fields: Any,
) -> Detections:
    """Score one reply with the deterministic and heuristic detectors, inline.

    `detectors`: names (`"pii_leak"`), config entries (`{"type": "secret_exfiltration",
    "markers": [...]}`) or Detector objects; default: those on by default. Other attempt
    fields (`prompt`, `messages`, `notes={"triggers": [...]}`, `latency_ms`, …) go in
    `fields`. Built detectors are reused between calls. For judge-backed detectors use
    `adetect`. A finding `failed` as `evaluate` counts it: by its score under `evaluator`
    (the run's default unless given; `redjury.evaluators.output_failed`).
    """
    attempt = _reply_attempt(reply, {"goal": goal, **fields})
    found = {}
    for det in _detectors(detectors):
        found[det.name] = Detection.of(det.name, det.detect(attempt)[0], evaluator)
    return Detections(found)


async def adetect(
    reply: str | None,
    detectors: Sequence[DetectorSpec] | None = None,
    *,
    goal: str | None = None,
    evaluator: Evaluator = DEFAULT_EVALUATOR,
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
        {d.name: Detection.of(d.name, r[0], evaluator) for d, r in zip(dets, results, strict=True)}
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
