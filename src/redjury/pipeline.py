"""One run: attempts in → detectors and judges → verdicts → streamed report, hitlog and eval rows."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import secrets as pysecrets
import sys
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from redjury import __version__
from redjury.attempts import Attempt
from redjury.config import RunConfig, resolve_detectors
from redjury.detectors.base import Detector, Finding
from redjury.evaluators import DetectorTally, Evaluator, HitlogBuilder, RunTally, load_evaluator
from redjury.inputs import InputError, InputSet, LineError, check_inputs
from redjury.redaction import Redactor
from redjury.report.digest import DigestBuilder
from redjury.report.jsonl import HITLOG_NAME, REPORT_NAME, JsonlWriter, dumps, read_rows
from redjury.report.terminal import TerminalPrinter

# Rows written between flushes (a kill loses at most these; they are redone on resume).
WINDOW_SYNC = 512
WINDOW_ASYNC = 256
# Attempts being judged at once (their requests still queue behind the engine's limits).
MAX_PENDING = 512
# Attempt fields copied into the report row when present.
_ROW_FIELDS = (
    "goal",
    "prompt",
    "outputs",
    "messages",
    "intent",
    "hazard",
    "goal_context",
    "context",
    "source",
    "expected",
    "latency_ms",
    "usage",
    "notes",
    "run_id",
    "seq",
    "generator",
)

_TEXT_FIELDS = tuple(f for f in _ROW_FIELDS if f not in ("latency_ms", "usage", "seq"))


class RunError(Exception):
    """A run that cannot go on; `exit_code` says how the CLI should end."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class RunOptions:
    inputs: list[Path]
    config: RunConfig
    out_dir: Path
    skip_bad_lines: bool = False
    use_cache: bool = True
    cache_path: Path | None = None
    verbose: int = 0
    colour: bool | None = None
    progress: bool | None = None
    stream: TextIO | None = None
    config_path: str | None = None
    offline: bool = False
    preflight: bool = True


@dataclass
class RunResult:
    out_dir: Path
    report_path: Path
    hitlog_path: Path
    eval_rows: list[dict[str, Any]] = field(default_factory=list)
    attempts_scored: int = 0
    attempts_resumed: int = 0
    input_errors: int = 0
    exit_code: int = 0


def config_fingerprint(config: RunConfig) -> str:
    """A hash of everything that decides an attempt row; a resume must match it."""
    decisive = {
        "detectors": None
        if config.detectors is None
        else [d.model_dump() for d in config.detectors],
        "schema_dir": config.schema_dir,
        "evaluation": config.evaluation.model_dump(mode="json", exclude={"audit"}),
        "redact": config.reporting.redact,
    }
    return hashlib.sha256(json.dumps(decisive, sort_keys=True, default=str).encode()).hexdigest()[
        :16
    ]


def build_detectors(options: RunOptions) -> list[Detector]:
    detectors: list[Detector] = []
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
        detectors.append(cls(params.model_copy(update=update) if update else params))
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


def _is_async(det: Detector) -> bool:
    return type(det).adetect is not Detector.adetect


class _AttemptScorer:
    """Scores attempts with every detector and turns the findings into a redacted report row."""

    def __init__(
        self, detectors: list[Detector], markers: Redactor, always: Redactor, redact: bool
    ) -> None:
        self.sync = [d for d in detectors if not _is_async(d)]
        self.async_ = [d for d in detectors if _is_async(d)]
        self.markers = markers
        self.always = always
        self.redact = redact

    async def score_one(self, attempt: Attempt) -> dict[str, Any]:
        """Score one attempt, awaiting the async detectors (judges) together."""
        results = await asyncio.gather(*(d.adetect(attempt) for d in self.async_))
        findings: dict[str, list[Finding]] = {d.name: d.detect(attempt) for d in self.sync}
        for det, found in zip(self.async_, results, strict=True):
            findings[det.name] = found
        return self.row(attempt, findings)

    def score_window(self, attempts: list[Attempt]) -> list[dict[str, Any]]:
        """Rows for attempts scored by the synchronous detectors only (no judges in the run)."""
        return [self.row(a, {d.name: d.detect(a) for d in self.sync}) for a in attempts]

    def row(self, attempt: Attempt, findings: dict[str, list[Finding]]) -> dict[str, Any]:
        row: dict[str, Any] = {
            "entry_type": "attempt",
            "status": 2,
            "id": attempt.id,
            "probe": attempt.probe,
        }
        # Read the fields directly: a pydantic dump per attempt costs more than all of this.
        fields = attempt.__dict__
        for key in _ROW_FIELDS:
            value = fields[key]
            if value is None or value == {}:
                continue
            # Lists and dicts are shared, not copied: nothing mutates a row's values
            # (redaction builds new ones).
            if key == "messages":
                value = [{"role": t.role, "content": t.content} for t in value]
            elif key == "usage":
                value = value.model_dump(exclude_none=True)
            row[key] = value
        results: dict[str, list[float | None]] = dict(attempt.detector_results)
        verdicts: dict[str, list[str]] = {}
        evidence: dict[str, list[list[str]]] = {}
        reasons: dict[str, list[str | None]] = {}
        details: dict[str, list[Any]] = {}
        found: list[str] = []
        for name, fs in findings.items():
            results[name] = [f.score for f in fs]
            verdicts[name] = [f.verdict.value for f in fs]
            # One pass for the rarely-set fields; most findings carry none of them.
            has_evidence = has_reason = has_details = False
            for f in fs:
                if f.evidence:
                    has_evidence = True
                if f.reason:
                    has_reason = True
                if f.details:
                    has_details = True
                if f.sensitive:
                    found.extend(f.sensitive)
            if has_evidence:
                evidence[name] = [list(f.evidence) for f in fs]
            if has_reason:
                reasons[name] = [f.reason for f in fs]
            if has_details:
                details[name] = [f.details for f in fs]
        row["detector_results"] = results
        row["verdicts"] = verdicts
        if evidence:
            row["evidence"] = evidence
        if reasons:
            row["reasons"] = reasons
        if details:
            row["details"] = details
        # Only the recorded text can hold a secret: detector evidence is masked at source.
        if self.redact:
            if attempt.notes.get("triggers"):
                # Canaries planted for this attempt are markers too, found or not.
                found.extend(attempt.triggers)
            redactor = self.markers.with_values(found) if found else self.markers
            if self.always:
                redactor = redactor.with_values(self.always.values)
        else:
            redactor = self.always
        if redactor:
            for key in _TEXT_FIELDS:
                if key in row:
                    row[key] = redactor.apply(row[key])
        return row


class Run:
    """The state of one run into one output folder."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.config = options.config
        self.out_dir = options.out_dir
        self.report_path = self.out_dir / REPORT_NAME
        self.hitlog_path = self.out_dir / HITLOG_NAME
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
        self.inputs = InputSet(list(options.inputs))
        self.tally = RunTally(self.evaluator)
        self.generator: str | None = None
        self.generations_per_prompt: int | None = None

    # -- input ---------------------------------------------------------------------
    def check(self) -> tuple[int, int]:
        for p in self.inputs.paths:
            if not p.is_file():
                raise RunError(f"{p}: no such input file")
        good, errors, total_errors = check_inputs(self.inputs)
        if errors and not self.options.skip_bad_lines:
            raise InputError(errors, total_errors)
        if good == 0:
            names = ", ".join(str(p) for p in self.inputs.paths)
            if total_errors:
                raise InputError(
                    errors, total_errors, f"{names}: no valid attempts (every line is bad)"
                )
            raise InputError([], 0, f"{names}: no attempts to judge (the input is empty)")
        for setup in self.inputs.garak_setup.values():
            self.generator = self.generator or setup.generator
            self.generations_per_prompt = (
                self.generations_per_prompt or setup.generations_per_prompt
            )
        return good, total_errors

    # -- resume ----------------------------------------------------------------------
    def _header(
        self,
        fingerprint: str,
        seed: int,
        detector_names: list[str],
        always: Redactor,
        markers: Redactor,
    ) -> dict[str, Any]:
        config_dump = self.config.model_dump(mode="json")
        return always.apply(
            markers.apply(
                {
                    "entry_type": "init",
                    "redjury_version": __version__,
                    "run_id": str(uuid.uuid4()),
                    "start_time": dt.datetime.now(dt.UTC).isoformat(),
                    "inputs": [str(p) for p in self.inputs.paths],
                    "config_path": self.options.config_path,
                    "config": config_dump,
                    "config_fingerprint": fingerprint,
                    "seed": seed,
                    "detectors": detector_names,
                    "evaluator": self.evaluator.describe(),
                    "python": sys.version.split()[0],
                }
            )
        )

    def _resume_state(self, fingerprint: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The old header and the rows worth keeping (attempts and input errors)."""
        if not self.report_path.exists():
            return None, []
        header: dict[str, Any] | None = None
        kept: list[dict[str, Any]] = []
        for row in read_rows(self.report_path):
            kind = row.get("entry_type")
            if kind == "init" and header is None:
                header = row
            elif kind in ("attempt", "input_error", "audit", "audit_gate"):
                kept.append(row)
        if header is None:
            raise RunError(
                f"{self.report_path}: exists but is not a redjury report; choose another --out"
            )
        if header.get("config_fingerprint") != fingerprint:
            raise RunError(
                f"{self.report_path}: was written with a different configuration "
                f"(fingerprint {header.get('config_fingerprint')} vs {fingerprint}); "
                "resume it with the same config or choose another --out"
            )
        return header, kept

    # -- the run ---------------------------------------------------------------------
    def execute(self) -> RunResult:
        good, bad = self.check()
        detectors = build_detectors(self.options)
        return asyncio.run(self._execute(detectors, good))

    async def _execute(self, detectors: list[Detector], good: int) -> RunResult:
        from redjury.judges.preflight import PreflightError, run_preflight

        try:
            if self.options.preflight:
                try:
                    await run_preflight(detectors)
                except PreflightError as exc:
                    raise RunError(str(exc)) from None
            return await self._run(detectors, good)
        finally:
            for det in detectors:
                await det.aclose()

    async def _run(self, detectors: list[Detector], good: int) -> RunResult:
        cfg = self.config
        fingerprint = config_fingerprint(cfg)
        marker_values: list[str] = []
        always_values: list[str] = []
        for det in detectors:
            (always_values if det.name == "judge_panel" else marker_values).extend(det.secrets())
        markers, always = Redactor(marker_values), Redactor(always_values)
        scorer = _AttemptScorer(detectors, markers, always, cfg.reporting.redact)

        self.out_dir.mkdir(parents=True, exist_ok=True)
        old_header, kept = self._resume_state(fingerprint)
        seed = (
            cfg.reporting.seed
            if cfg.reporting.seed is not None
            else (old_header or {}).get("seed", pysecrets.randbits(32))
        )
        header = old_header or self._header(
            fingerprint, seed, [d.name for d in detectors], always, markers
        )
        # Rewrite the report as header + kept rows (drops a torn line and old summaries),
        # and rebuild the hitlog from the kept attempt rows, so a resumed run ends equal to
        # an uninterrupted one.
        tmp = self.report_path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(dumps(header) + "\n")
            for row in kept:
                fh.write(dumps(row) + "\n")
        os.replace(tmp, self.report_path)
        # Flushed once per window of attempts: a kill loses at most the window in progress.
        report = JsonlWriter(self.report_path, "a", flush_every=0)
        hitlog = JsonlWriter(self.hitlog_path, "w", flush_every=0)

        build_hit = HitlogBuilder(self.generator, self.generations_per_prompt)
        # The digest row's breakdowns, built as rows are made: no second read of the report.
        digest = DigestBuilder(header)

        def on_hit(row: dict[str, Any], detector: str, idx: int, score: float) -> None:
            hitlog.write(build_hit(row, detector, idx, score))

        done: set[int] = set()
        done_errors: set[tuple[str, int]] = set()
        gate: dict[str, Any] | None = None
        for row in kept:
            kind = row["entry_type"]
            if kind == "attempt":
                done.add(hash(str(row.get("id"))))
                self.tally.add(row, on_hit)
                digest.add_attempt(row)
            elif kind == "input_error":
                done_errors.add((row.get("file", ""), row.get("line", 0)))
            elif kind == "audit_gate":
                gate = row
        go_on = True
        if cfg.evaluation.audit.enabled:
            if gate is None:
                go_on = await self._audit(detectors, report)
            else:  # resumed: the recorded gate decides again
                go_on = bool(gate.get("passed")) or cfg.evaluation.audit.on_failure != "stop"
        if not go_on:
            report.write(
                {
                    "entry_type": "completion",
                    "end_time": dt.datetime.now(dt.UTC).isoformat(),
                    "run_id": header.get("run_id"),
                    "attempts": 0,
                    "stopped": "the judge audit failed its robustness gate "
                    "(evaluation.audit.on_failure: stop); nothing was judged",
                }
            )
            report.close()
            hitlog.close()
            raise RunError(
                "the judge audit failed its robustness gate and on_failure is stop: "
                f"nothing was judged; see the audit rows in {self.report_path}",
                exit_code=3,
            )
        resumed = len(done)
        if resumed:
            self.printer.message(f"resuming: {resumed} attempts already in {self.report_path}")

        progress = _Progress(good, resumed, detectors, self.options.progress)
        window_size = WINDOW_ASYNC if scorer.async_ else WINDOW_SYNC
        window: list[Attempt] = []
        scored = 0
        input_errors = 0

        unflushed = 0

        def emit(row: dict[str, Any]) -> None:
            nonlocal scored, unflushed
            report.write(row)
            self.tally.add(row, on_hit)
            digest.add_attempt(row)
            scored += 1
            unflushed += 1
            if unflushed >= window_size:
                flush()

        def flush() -> None:
            nonlocal unflushed
            report.flush()
            hitlog.flush()
            progress.advance(unflushed)
            unflushed = 0

        def flush_window() -> None:
            for row in scorer.score_window(window):
                emit(row)
            window.clear()

        # With judges, attempts are scored as a sliding window: new attempts start as soon as
        # the oldest finishes, so the judges never wait for a whole window to drain; rows are
        # still written in input order, so a killed run leaves a clean prefix to resume from.
        pending: deque[asyncio.Future[dict[str, Any]]] = deque()

        async def take_oldest() -> None:
            emit(await pending.popleft())

        try:
            duplicates = self.inputs.duplicate_lines
            for rec in self.inputs.records():
                duplicate = duplicates.get((rec.path, rec.line)) if duplicates else None
                if rec.attempt is None or duplicate is not None:
                    input_errors += 1
                    err = rec.error or LineError(
                        rec.path, rec.line, "id", duplicate or "duplicate id"
                    )
                    if (err.path, err.line) not in done_errors:
                        report.write(
                            {
                                "entry_type": "input_error",
                                "file": err.path,
                                "line": err.line,
                                "field": err.field,
                                "reason": err.reason,
                            }
                        )
                    continue
                if done and hash(rec.attempt.id) in done:
                    continue
                if scorer.async_:
                    pending.append(asyncio.ensure_future(scorer.score_one(rec.attempt)))
                    while pending and (len(pending) >= MAX_PENDING or pending[0].done()):
                        await take_oldest()
                    continue
                window.append(rec.attempt)
                if len(window) >= window_size:
                    flush_window()
            while pending:
                await take_oldest()
            if window:
                flush_window()
            flush()
        finally:
            for task in pending:
                task.cancel()
            progress.close()
            hitlog.close()

        eval_rows = []
        stats_fields = self._statistics(seed, detectors)
        hits_limit = 20 if self.options.verbose else 0
        for row in self.tally.eval_rows(stats_fields):
            report.write(row)
            if row["entry_type"] == "eval":
                eval_rows.append(row)
                digest.add_eval(row)
                tally = self.tally.tallies[(row["probe"], row["detector"])]
                self.printer.eval_row(row, tally.first_hits[:hits_limit] if hits_limit else ())
        digest_row = digest.row()
        report.write(digest_row)
        self.printer.judge_abstentions(digest_row.get("judge_panel"))
        completion: dict[str, Any] = {
            "entry_type": "completion",
            "end_time": dt.datetime.now(dt.UTC).isoformat(),
            "run_id": header.get("run_id"),
            "attempts": scored + resumed,
            "attempts_resumed": resumed,
            "input_errors": input_errors,
        }
        for det in detectors:
            stats = getattr(det, "stats", None)
            if callable(stats):
                completion[f"{det.name}_stats"] = stats()
        report.write(completion)
        report.close()
        return RunResult(
            self.out_dir,
            self.report_path,
            self.hitlog_path,
            eval_rows,
            scored,
            resumed,
            input_errors,
        )

    async def _audit(self, detectors: list[Detector], report: JsonlWriter) -> bool:
        """The pre-run judge audit; False when its gate says stop."""
        from redjury.audit.command import aaudit_before_run
        from redjury.audit.runner import AuditError

        panel = next((d for d in detectors if d.name == "judge_panel"), None)
        try:
            go_on = await aaudit_before_run(
                self.config,
                report.write,
                panel=panel,
                use_cache=self.options.use_cache,
                cache_path=self.options.cache_path,
                offline=self.options.offline,
                echo=self.printer.message,
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
        return eval_statistics(self.config.reporting, seed, lookup)


class _Progress:
    """A progress bar on stderr for long runs in a terminal; silent otherwise."""

    def __init__(
        self, total: int, done: int, detectors: list[Detector], enabled: bool | None
    ) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() and total - done > 2000 and not os.environ.get("CI")
        self._bar: Any = None
        self._detectors = detectors
        if enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("judging"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} attempts"),
                TextColumn("{task.fields[rate]}"),
                TextColumn("{task.fields[extra]}"),
                TimeRemainingColumn(),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("run", total=total, completed=done, extra="", rate="")

    def advance(self, n: int) -> None:
        if self._bar is None:
            return
        extra = ""
        for det in self._detectors:
            stats = getattr(det, "stats", None)
            if callable(stats):
                s = stats()
                extra = f"{s.get('requests', 0)} judge calls, {s.get('abstentions', 0)} abstentions"
        speed = self._bar.tasks[0].speed
        rate = f"{speed:,.0f}/s" if speed else ""
        self._bar.update(self._task, advance=n, extra=extra, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def run(options: RunOptions) -> RunResult:
    """Library entry point: judge the inputs into `options.out_dir`."""
    return Run(options).execute()
