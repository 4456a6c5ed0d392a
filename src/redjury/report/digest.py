"""The `digest` row: per probe × detector, intent, hazard and generator counts with intervals,
and the technique × intent matrix, read back from a report JSONL in one streaming pass."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import orjson

from redjury.evaluators import Evaluator, load_evaluator, pass_below
from redjury.judges.abstentions import CAUSES, abstention_cause
from redjury.judges.costs import Usage, cost_summary, judge_prices
from redjury.report.garak_digest import garak_digest
from redjury.stats.settings import CISettings

# Eval-row fields copied into the digest beside the counts.
_EVAL_EXTRAS = (
    "confidence_method",
    "confidence",
    "confidence_lower",
    "confidence_upper",
    "confidence_correction",
    "corrected_rate",
    "interval_method",
    "interval_level",
    "interval_lower",
    "interval_upper",
    "interval_correction",
    "abstention_rate",
    "errors",
    "z_score",
    "defcon",
    "defcon_symbol",
)
# Attempt fields that get a breakdown of their own.
BREAKDOWNS = ("intent", "hazard", "generator")


def iter_report(path: Path) -> Iterator[dict[str, Any]]:
    """Complete rows of a report JSONL; a torn last line (a killed writer) is skipped."""
    for _, row in numbered_report_rows(path):
        yield row


def numbered_report_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_report`'s rows, each with its line number."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                return
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield number, row


def asr(fails: int, evaluated: int) -> float | None:
    return fails / evaluated if evaluated else None


def evaluator_of(header: dict[str, Any]) -> Evaluator:
    """The verdict policy the run used, rebuilt from the report's `init` row."""
    desc = header.get("evaluator") or {"type": "threshold", "threshold": 0.5}
    return load_evaluator(str(desc.get("type", "threshold")), float(desc.get("threshold", 0.5)))


def interval_settings(header: dict[str, Any]) -> CISettings | None:
    """Breakdowns use Wilson intervals under the run's level and minimum sample size."""
    reporting = (header.get("config") or {}).get("reporting") or {}
    if reporting.get("confidence_interval_method", "bootstrap") == "none":
        return None
    return CISettings(
        method="wilson",
        level=float(reporting.get("bootstrap_confidence_level", 0.95)),
        min_sample_size=int(reporting.get("bootstrap_min_sample_size", 30)),
    )


def counts_entry(
    passed: int, fails: int, nones: int, settings: CISettings | None
) -> dict[str, Any]:
    n = passed + fails
    out: dict[str, Any] = {
        "passed": passed,
        "fails": fails,
        "nones": nones,
        "total_evaluated": n,
        "asr": asr(fails, n),
    }
    if settings is not None and n:
        # Imported here: numpy loads when the first interval is computed, after the run.
        from redjury.stats.intervals import confidence_fields
        from redjury.stats.small_sample import small_sample_fields

        ci = confidence_fields(fails, n, settings)
        if ci:
            out["confidence_method"] = ci["confidence_method"]
            out["confidence"] = ci["confidence"]
            out["confidence_lower"] = ci["confidence_lower"]
            out["confidence_upper"] = ci["confidence_upper"]
        else:
            small = small_sample_fields(fails, n, settings)
            out.update({k: v for k, v in small.items() if k != "interval_correction"})
    return out


def _add_into(into: list[int], counts: list[int]) -> None:
    for i, n in enumerate(counts):
        into[i] += n


def _usage_fields(usage: Usage | None) -> dict[str, int]:
    """A judge's calls made and their tokens, and its answers taken from the cache."""
    calls, prompt, completion, cached, _, _ = usage or [0] * 6
    return {
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_answers": cached,
    }


@dataclass
class JudgeTally:
    """Per judge: votes at or above the panel threshold, below it, abstentions; per pair: agreement."""

    threshold: float
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)  # judge -> (in, out)
    votes: dict[str, list[int]] = field(default_factory=dict)  # judge -> [unsafe, safe, abstained]
    pairs: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # -> [both voted, agreed]
    causes: dict[str, dict[str, int]] = field(default_factory=dict)  # judge -> cause -> n
    usage: dict[str, Usage] = field(default_factory=dict)  # judge -> calls and tokens
    first_reasons: dict[str, str] = field(default_factory=dict)  # judge -> first abstention
    outputs: int = 0
    errors: int = 0
    cascaded: int = 0  # outputs the cascade decided without asking the judges
    calls_saved: int = 0
    # `short_circuit`: judge -> outputs it was not asked about (the verdict was settled).
    skipped: dict[str, int] = field(default_factory=dict)
    short_circuited: int = 0

    def add(self, detail: dict[str, Any]) -> None:
        if detail.get("decided_by"):
            self.cascaded += 1
            self.calls_saved += int(detail.get("calls_saved") or 0)
            return
        votes = detail.get("votes")
        if not isinstance(votes, dict):
            return
        self.outputs += 1
        self._add_usage(detail.get("judges") or ())
        self._add_skipped(detail.get("skipped") or ())
        if detail.get("error"):
            self.errors += 1
        for judge, reason in (detail.get("abstained") or {}).items():
            by_cause = self.causes.setdefault(judge, {})
            cause = abstention_cause(reason)
            by_cause[cause] = by_cause.get(cause, 0) + 1
            self.first_reasons.setdefault(judge, str(reason or "no reason given"))
        cast: dict[str, bool] = {}
        for judge, score in votes.items():
            bucket = self.votes.setdefault(judge, [0, 0, 0])
            if score is None:
                bucket[2] += 1
            else:
                unsafe = float(score) >= self.threshold
                bucket[0 if unsafe else 1] += 1
                cast[judge] = unsafe
        for a, b in combinations(sorted(cast), 2):
            pair = self.pairs.setdefault((a, b), [0, 0])
            pair[0] += 1
            pair[1] += cast[a] == cast[b]

    def _add_skipped(self, skipped: Any) -> None:
        if skipped:
            self.short_circuited += 1
        for judge in skipped:
            self.skipped[str(judge)] = self.skipped.get(str(judge), 0) + 1

    def _add_usage(self, votes: Any) -> None:
        """Calls made and cache hits per judge, with their tokens (an answer given without
        a call, or a failed call, has no tokens and is neither)."""
        for vote in votes:
            if not isinstance(vote, dict):
                continue
            tokens = (int(vote.get("prompt_tokens") or 0), int(vote.get("completion_tokens") or 0))
            if not any(tokens):
                continue
            u = self.usage.setdefault(str(vote.get("judge")), [0] * 6)
            at = 3 if vote.get("cached") else 0
            u[at] += 1
            u[at + 1] += tokens[0]
            u[at + 2] += tokens[1]

    def merge(self, other: JudgeTally) -> None:
        self.outputs += other.outputs
        self.errors += other.errors
        self.cascaded += other.cascaded
        self.calls_saved += other.calls_saved
        self.short_circuited += other.short_circuited
        for judge, n in other.skipped.items():
            self.skipped[judge] = self.skipped.get(judge, 0) + n
        for judge, counts in other.usage.items():
            _add_into(self.usage.setdefault(judge, [0] * 6), counts)
        for judge, counts in other.votes.items():
            _add_into(self.votes.setdefault(judge, [0, 0, 0]), counts)
        for pair, counts in other.pairs.items():
            _add_into(self.pairs.setdefault(pair, [0, 0]), counts)
        for judge, causes in other.causes.items():
            mine = self.causes.setdefault(judge, {})
            for cause, n in causes.items():
                mine[cause] = mine.get(cause, 0) + n
        for judge, reason in other.first_reasons.items():
            self.first_reasons.setdefault(judge, reason)

    def summary(self) -> dict[str, Any]:
        judges = []
        for judge, (unsafe, safe, abstained) in sorted(self.votes.items()):
            total = unsafe + safe + abstained
            judges.append(
                {
                    "judge": judge,
                    "unsafe": unsafe,
                    "safe": safe,
                    "abstained": abstained,
                    "abstention_rate": abstained / total if total else None,
                    "abstained_by_cause": {
                        c: n for c in CAUSES if (n := self.causes.get(judge, {}).get(c, 0))
                    },
                    **_usage_fields(self.usage.get(judge)),
                    "first_abstention": self.first_reasons.get(judge),
                }
            )
        agreement = [
            {"judges": [a, b], "both_voted": n, "agreed": k, "agreement": k / n if n else None}
            for (a, b), (n, k) in sorted(self.pairs.items())
        ]
        out: dict[str, Any] = {
            "threshold": self.threshold,
            "outputs": self.outputs,
            "errors": self.errors,
            "judges": judges,
            "agreement": agreement,
        }
        if self.cascaded:
            out["cascade"] = {"outputs": self.cascaded, "calls_saved": self.calls_saved}
        if self.short_circuited:
            out["short_circuit"] = {
                "outputs": self.short_circuited,
                "calls_saved": sum(self.skipped.values()),
            }
        cost = cost_summary(self.usage, self.prices, self.cascaded, self.skipped)
        if cost is not None:
            out["cost"] = cost
        return out


class DigestBuilder:
    """Aggregate counts only, so memory stays flat however many attempts the report holds."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        evaluator = evaluator_of(header)
        self.test = evaluator.test
        # `output_failed`, inlined for the common policy (see `pass_below`).
        self.threshold_of_test = pass_below(evaluator)
        self.settings = interval_settings(header)
        evaluation = (header.get("config") or {}).get("evaluation") or {}
        self.judges = JudgeTally(float(evaluation.get("threshold", 7.0)), judge_prices(evaluation))
        self.attempts = 0
        self.outputs = 0
        self.evals: list[dict[str, Any]] = []
        # (field, value, detector) -> [passed, fails, nones]
        self.breakdowns: dict[tuple[str, str, str], list[int]] = {}
        # (probe, intent) -> [passed, fails, nones]; an output is a hit when any detector failed it.
        self.matrix: dict[tuple[str, str], list[int]] = {}
        # detector -> the first reason it gave for an output it could not judge
        self.first_reasons: dict[str, str] = {}

    def merge(self, other: DigestBuilder) -> None:
        """Add the attempt counts of another builder (a Ray block) over the same run."""
        self.attempts += other.attempts
        self.outputs += other.outputs
        for key, counts in other.breakdowns.items():
            _add_into(self.breakdowns.setdefault(key, [0, 0, 0]), counts)
        for cell, counts in other.matrix.items():
            _add_into(self.matrix.setdefault(cell, [0, 0, 0]), counts)
        self.judges.merge(other.judges)
        for detector, reason in other.first_reasons.items():
            self.first_reasons.setdefault(detector, reason)

    def add_eval(self, row: dict[str, Any]) -> None:
        self.evals.append(row)

    def add_attempt(
        self, row: dict[str, Any], hits: list[tuple[str, int, float]] | None = None
    ) -> None:
        """Count one attempt row; its hits, as (detector, output index, score), are appended
        to `hits` when a list is given (the run's own tally lists them already)."""
        self.attempts += 1
        outputs = row.get("outputs") or []
        self.outputs += len(outputs)
        results = row.get("detector_results")
        if results:
            self._add_scores(row, results, hits)
        reasons = row.get("reasons")
        if reasons and results:
            self._first_reasons(reasons, results)
        for detail in (row.get("details") or {}).get("judge_panel") or ():
            if isinstance(detail, dict):
                self.judges.add(detail)

    def _first_reasons(self, reasons: dict[str, list[str | None]], results: dict[str, Any]) -> None:
        """Keep each detector's first reason for an output it could not judge (score None)."""
        for detector, per_output in reasons.items():
            if detector in self.first_reasons:
                continue
            scores = results.get(detector) or ()
            given = (r for r, s in zip(per_output, scores, strict=False) if r and s is None)
            if (first := next(given, None)) is not None:
                self.first_reasons[detector] = first

    def _add_scores(
        self,
        row: dict[str, Any],
        results: dict[str, Any],
        hits: list[tuple[str, int, float]] | None,
    ) -> None:
        keys = [
            (name, value if type(value) is str else str(value))
            for name in BREAKDOWNS
            if (value := row.get(name)) is not None
        ]
        intent = row.get("intent")
        # Per output, when several detectors scored it: 1 failed by some detector, 0 scored
        # and passed by all, -1 never scored. With one detector its own counts say the same.
        per_output: list[int] | None = [] if intent is not None and len(results) > 1 else None
        cell = [0, 0, 0]
        for detector, scores in results.items():
            passed, fails, nones = self._classify(detector, scores or (), per_output, hits)
            for name, value in keys:
                bucket = self.breakdowns.get((name, value, detector))
                if bucket is None:
                    bucket = self.breakdowns[(name, value, detector)] = [0, 0, 0]
                bucket[0] += passed
                bucket[1] += fails
                bucket[2] += nones
            if per_output is None:
                cell = [passed, fails, nones]
        if per_output is not None:
            for state in per_output:
                cell[0 if state == 0 else 1 if state == 1 else 2] += 1
        if intent is not None and any(cell):
            _add_into(
                self.matrix.setdefault((row.get("probe") or "default", str(intent)), [0, 0, 0]),
                cell,
            )

    def _classify(
        self,
        detector: str,
        scores: Any,
        per_output: list[int] | None,
        hits: list[tuple[str, int, float]] | None,
    ) -> tuple[int, int, int]:
        """One detector's (passed, fails, nones); its hits appended, `per_output` updated."""
        n = len(scores)
        if scores.count(None) == n:  # abstained on every output: each is at least known
            if per_output is not None and len(per_output) < n:
                per_output.extend([-1] * (n - len(per_output)))
            return 0, 0, n
        threshold = self.threshold_of_test
        test = self.test
        passed = fails = nones = 0
        for idx, score in enumerate(scores):
            if per_output is not None and idx == len(per_output):
                per_output.append(-1)
            if score is None:
                nones += 1
            elif (score < threshold) if threshold is not None else test(float(score)):
                passed += 1
                if per_output is not None and per_output[idx] < 0:
                    per_output[idx] = 0
            else:
                fails += 1
                if per_output is not None:
                    per_output[idx] = 1
                if hits is not None:
                    hits.append((detector, idx, float(score)))
        return passed, fails, nones

    def probe_detector(self) -> list[dict[str, Any]]:
        """The eval rows' counts and interval fields, worst attack-success rate first."""
        out = []
        for row in self.evals:
            entry: dict[str, Any] = {
                "probe": row.get("probe"),
                "detector": row.get("detector"),
                "passed": row.get("passed", 0),
                "fails": row.get("fails", 0),
                "nones": row.get("nones", 0),
                "total_evaluated": row.get("total_evaluated", 0),
                "asr": asr(row.get("fails", 0), row.get("total_evaluated", 0)),
            }
            entry.update({k: row[k] for k in _EVAL_EXTRAS if k in row})
            out.append(entry)
        out.sort(key=lambda e: (-(e["asr"] if e["asr"] is not None else -1.0), e["probe"] or ""))
        return out

    def breakdown(self, name: str) -> list[dict[str, Any]]:
        rows = []
        for (field_name, value, detector), (p, f, n) in self.breakdowns.items():
            if field_name == name:
                rows.append(
                    {name: value, "detector": detector, **counts_entry(p, f, n, self.settings)}
                )
        rows.sort(key=lambda e: (e[name], e["detector"]))
        return rows

    def technique_intent(self) -> dict[str, Any]:
        probes = sorted({p for p, _ in self.matrix})
        intents = sorted({i for _, i in self.matrix})
        cells: list[list[dict[str, Any] | None]] = []
        for probe in probes:
            line: list[dict[str, Any] | None] = []
            for intent in intents:
                c = self.matrix.get((probe, intent))
                line.append(None if c is None else counts_entry(c[0], c[1], c[2], self.settings))
            cells.append(line)
        return {
            "unit": "output; a hit when any detector failed it",
            "probes": probes,
            "intents": intents,
            "cells": cells,
        }

    def row(self) -> dict[str, Any]:
        digest: dict[str, Any] = {
            "entry_type": "digest",
            "attempts": self.attempts,
            "outputs": self.outputs,
            "breakdown_interval": None
            if self.settings is None
            else {
                "method": "wilson",
                "confidence": self.settings.level,
                "min_sample_size": self.settings.min_sample_size,
            },
            "probe_detector": self.probe_detector(),
        }
        for name in BREAKDOWNS:
            digest[f"by_{name}"] = self.breakdown(name)
        digest["technique_intent"] = self.technique_intent()
        if self.judges.outputs or self.judges.cascaded:
            digest["judge_panel"] = self.judges.summary()
        # garak's report_digest shows the first digest row as its own: its view goes last.
        digest.update(garak_digest(self.header, digest["probe_detector"]))
        return digest


def judge_savings(digest: dict[str, Any]) -> dict[str, Any]:
    """The completion row's `judge_cascade` (outputs decided, calls saved),
    `judge_short_circuit` (outputs settled before every judge was asked, calls saved) and `judge_cost`
    fields, from the digest row (so a resumed run counts its earlier sessions too)."""
    panel = digest.get("judge_panel") or {}
    keys = ("cascade", "short_circuit", "cost")
    return {f"judge_{key}": panel[key] for key in keys if key in panel}


def digest_row(report_path: Path) -> dict[str, Any]:
    """The digest of a report JSONL (its `init`, `attempt` and `eval` rows)."""
    builder: DigestBuilder | None = None
    for row in iter_report(report_path):
        kind = row.get("entry_type")
        if kind == "init":
            if builder is None:
                builder = DigestBuilder(row)
        elif builder is None:
            raise ValueError(f"{report_path}: not a redjury report (no init row first)")
        elif kind == "attempt":
            builder.add_attempt(row)
        elif kind == "eval":
            builder.add_eval(row)
    if builder is None:
        raise ValueError(f"{report_path}: empty report")
    return builder.row()


# The HTML embeds at most this many hits, each output cut to OUTPUT_CHARS; the hitlog has all.
HIT_LIMIT = 20_000
OUTPUT_CHARS = 2_000
FIRST_HITS = 3


@dataclass
class Hit:
    attempt_id: str
    probe: str
    detector: str
    score: float
    goal: str | None
    output: str | None
    intent: str | None


@dataclass
class ReportData:
    """What the HTML, JUnit and summary outputs need from one report, read in one pass."""

    path: Path
    header: dict[str, Any]
    digest: dict[str, Any]
    evals: list[dict[str, Any]]
    hits: list[Hit]
    hits_total: int
    first_hits: dict[tuple[str, str], list[str]]
    audit: list[dict[str, Any]]
    audit_gate: dict[str, Any] | None
    completion: dict[str, Any] | None
    input_errors: int


def report_path_of(out_dir: Path) -> Path:
    from redjury.report.jsonl import REPORT_NAME

    path = out_dir / REPORT_NAME if out_dir.is_dir() else out_dir
    if not path.is_file():
        raise ValueError(f"{out_dir}: no redjury report here (expected {REPORT_NAME})")
    return path


def load_report(out_dir: Path, hit_limit: int = HIT_LIMIT) -> ReportData:
    """Read a run folder's report; the digest is recomputed so older reports work too."""
    path = report_path_of(out_dir)
    return report_data(iter_report(path), path, hit_limit)


def report_data(
    rows: Iterable[dict[str, Any]], path: Path, hit_limit: int = HIT_LIMIT
) -> ReportData:
    """What the outputs need from a report's rows, in one pass (`path` names them)."""
    builder: DigestBuilder | None = None
    hits: list[Hit] = []
    hits_total = 0
    first_hits: dict[tuple[str, str], list[str]] = {}
    audit: list[dict[str, Any]] = []
    gate: dict[str, Any] | None = None
    completion: dict[str, Any] | None = None
    input_errors = 0
    for row in rows:
        kind = row.get("entry_type")
        if kind == "init":
            builder = builder or DigestBuilder(row)
            continue
        if kind == "audit":
            audit.append(row)
        elif kind == "audit_gate":
            gate = row
        elif kind == "input_error":
            input_errors += 1
        elif kind == "completion":
            completion = row
        if builder is None:
            if kind in ("attempt", "eval"):
                raise ValueError(f"{path}: not a redjury report (no init row first)")
            continue
        if kind == "eval":
            builder.add_eval(row)
        elif kind == "attempt":
            found: list[tuple[str, int, float]] = []
            builder.add_attempt(row, found)
            if not found:
                continue
            hits_total += len(found)
            outputs = row.get("outputs") or []
            probe = str(row.get("probe") or "default")
            for detector, idx, score in found:
                output = outputs[idx] if idx < len(outputs) else None
                text = None if output is None else str(output)[:OUTPUT_CHARS]
                firsts = first_hits.setdefault((probe, detector), [])
                if len(firsts) < FIRST_HITS and text:
                    firsts.append(text)
                if len(hits) < hit_limit:
                    hits.append(
                        Hit(
                            str(row.get("id")),
                            probe,
                            detector,
                            score,
                            row.get("goal"),
                            text,
                            row.get("intent"),
                        )
                    )
    if builder is None:
        raise ValueError(f"{path}: not a redjury report (no init row)")
    return ReportData(
        path=path,
        header=builder.header,
        digest=builder.row(),
        evals=builder.evals,
        hits=hits,
        hits_total=hits_total,
        first_hits=first_hits,
        audit=audit,
        audit_gate=gate,
        completion=completion,
        input_errors=input_errors,
    )
