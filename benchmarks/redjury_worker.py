"""redjury's side of the benchmark, run in this repository's Python: one timed run per
invocation, the result as one JSON line on stdout."""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import data  # noqa: E402

RUN_ID = "12345678-1234-5678-1234-567812345678"
GENERATOR = "test.TestGenerator test-model"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _scored_attempts(n: int) -> list:
    """Case 1's attempts, parsed: garak's scores given with each attempt."""
    from redjury.attempts import Attempt

    return [
        Attempt(
            id=s.uuid,
            probe=data.PROBE,
            goal=s.goal,
            prompt=s.prompt,
            outputs=list(s.outputs),
            intent=s.intent,
            seq=s.seq,
            run_id=RUN_ID,
            detector_results={data.DETECTOR: list(s.scores)},
        )
        for s in data.scored_attempts(n)
    ]


def cmd_evaluate(args: argparse.Namespace) -> dict:
    """Case 1: evaluate already-parsed attempts, compute the CI, write eval rows and hitlog."""
    from redjury.config import ReportingSpec
    from redjury.evaluators import RunTally, ThresholdEvaluator
    from redjury.redaction import Redactor
    from redjury.report.hitlog import HitlogLines
    from redjury.report.jsonl import JsonlWriter
    from redjury.report.statistics import eval_statistics
    from redjury.rows import AttemptScorer

    attempts = _scored_attempts(args.attempts)
    reporting = ReportingSpec(
        confidence_interval_method=args.ci, bootstrap_num_iterations=args.iterations, seed=42
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tally = RunTally(ThresholdEvaluator(0.5))
        # The pipeline's attempt → row step, with no detectors to run: the scores are given.
        scorer = AttemptScorer([], Redactor(), Redactor(), reporting.redact)
        # As the pipeline opens them: flushed once per window (here: once, at the end).
        report = JsonlWriter(Path(tmp) / "report.jsonl", "w", flush_every=0)
        hitlog = JsonlWriter(Path(tmp) / "hitlog.jsonl", "w", flush_every=0)

        build_hit = HitlogLines(GENERATOR, data.GENERATIONS)

        def on_hits(row: dict, detector: str, failed: list) -> None:
            # A detector's hits of one attempt as JSONL lines, spliced from its serialised
            # fields (as the pipeline writes them).
            hitlog.write_line(build_hit.lines(row, detector, failed))

        for attempt in attempts:
            tally.add(scorer.row(attempt, {}), on_hits)
        rows = list(tally.eval_rows(eval_statistics(reporting, 42)))
        for row in rows:
            report.write(row)
        report.flush()
        hitlog.flush()
        seconds = time.perf_counter() - t0
        report.close()
        hitlog.close()
        hits = sum(1 for _ in (Path(tmp) / "hitlog.jsonl").open(encoding="utf-8"))
    ev = next(r for r in rows if r["entry_type"] == "eval")
    return {
        "seconds": seconds,
        "counts": {k: ev[k] for k in ("passed", "fails", "nones")},
        "intents": ev.get("intents", {}),
        "hitlog_rows": hits,
        "ci": [ev.get("confidence_lower"), ev.get("confidence_upper")],
    }


def cmd_detectors(args: argparse.Namespace) -> dict:
    """Case 2: each detector over the same replies."""
    from redjury.attempts import Attempt
    from redjury.detectors.registry import get_detector_class

    attempts = []
    total_bytes = replies = 0
    for i, trigger, texts in data.reply_attempts(args.attempts):
        attempts.append(Attempt(id=str(i), outputs=texts, notes={"triggers": [trigger]}))
        total_bytes += sum(len(t.encode()) for t in texts)
        replies += len(texts)
    out: dict = {"replies": replies, "bytes": total_bytes}
    for name in args.detectors.split(","):
        out[name] = _time_detector(get_detector_class(name)(), attempts)
        if name == "jailbreak_heuristic":
            # The same replies with none taken from the heuristic's memo of recent ones:
            # its speed on replies that never repeat.
            from redjury.detectors import jailbreak

            limit, jailbreak._MEMO_TEXT_LIMIT = jailbreak._MEMO_TEXT_LIMIT, -1
            try:
                out[f"{name} afresh"] = _time_detector(get_detector_class(name)(), attempts)
            finally:
                jailbreak._MEMO_TEXT_LIMIT = limit
    return out


def _time_detector(det, attempts: list) -> dict:  # type: ignore[no-untyped-def]
    # Only detection is timed; hits are counted afterwards, the same on both sides.
    t0 = time.perf_counter()
    results = [det.detect(a) for a in attempts]
    seconds = time.perf_counter() - t0
    hits = sum(1 for fs in results for f in fs if f.score is not None and f.score >= 0.5)
    # Each detector starts from the same heap: the last one's results are not left for
    # the garbage collector to walk while the next one is timed (both sides do this).
    del results
    gc.collect()
    return {"seconds": seconds, "hits": hits}


def cmd_bootstrap(args: argparse.Namespace) -> dict:
    """Case 6: the bootstrap interval alone (30% failures, like garak's side)."""
    from redjury.stats import bootstrap_asr_interval

    fails = int(args.n * 0.3)
    t0 = time.perf_counter()
    lo, hi = bootstrap_asr_interval(fails, args.n, iterations=args.iterations, rng=42)
    return {"seconds": time.perf_counter() - t0, "ci": [lo, hi]}


def panel_config(args: argparse.Namespace) -> dict:
    evaluation: dict = {
        "judges": [
            {
                "name": f"judge-{k}",
                "connection": {"type": "OPENAI", "base_url": args.url},
                "generation": {"temperature": 0.0, "seed": 0},
                "scoring": {"type": "harmbench"},
            }
            for k in "abc"
        ],
        "max_retries": 0,
    }
    if args.concurrency:
        evaluation["max_concurrency"] = args.concurrency
        evaluation["per_endpoint_concurrency"] = args.concurrency
    return {"detectors": [], "evaluation": evaluation, "reporting": {"seed": 42}}


def cmd_panel(args: argparse.Namespace) -> dict:
    """Cases 3 and 4: a 3-judge panel over the attempts file through `redjury.engines.run`."""
    import warnings

    from redjury.config import parse_config
    from redjury.engines import run
    from redjury.pipeline import RunOptions

    warnings.simplefilter("ignore")
    config = parse_config(panel_config(args))
    with tempfile.TemporaryDirectory() as tmp:
        c0, t0 = _cpu(), time.perf_counter()
        result = run(
            RunOptions(
                inputs=[Path(args.input)],
                config=config,
                out_dir=Path(tmp) / "out",
                use_cache=not args.no_cache,
                cache_path=Path(args.cache) if args.cache else None,
                progress=False,
                stream=io.StringIO(),
            )
        )
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    row = result.eval_rows[0] if result.eval_rows else {}
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "attempts": result.attempts_scored,
        "counts": {k: row.get(k) for k in ("passed", "fails", "nones")},
    }


def cmd_api(args: argparse.Namespace) -> dict:
    """Case 1 through the public API: `redjury.evaluate()` on already-parsed attempts, as a
    user calls it (detectors none or the defaults, bootstrap CI, report and hitlog written)."""
    import redjury

    attempts = _scored_attempts(args.attempts)
    config: dict = {"reporting": {"seed": 42, "bootstrap_num_iterations": args.iterations}}
    if args.detectors == "none":
        config["detectors"] = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        redjury.evaluate(attempts, config, out=tmp, progress=False, offline=True)
        seconds = time.perf_counter() - t0
        counts = None
        for line in (Path(tmp) / "redjury.report.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if row.get("entry_type") == "eval" and row.get("detector") == data.DETECTOR:
                counts = {k: row[k] for k in ("passed", "fails", "nones")}
    return {"seconds": seconds, "counts": counts}


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--attempts", type=int, required=True)
    e.add_argument("--ci", choices=("bootstrap", "none"), required=True)
    e.add_argument("--iterations", type=int, default=10_000)
    d = sub.add_parser("detectors")
    d.add_argument("--attempts", type=int, required=True)
    d.add_argument("--detectors", default="jailbreak_heuristic,prompt_injection,pii_leak")
    b = sub.add_parser("bootstrap")
    b.add_argument("--n", type=int, required=True)
    b.add_argument("--iterations", type=int, default=10_000)
    a = sub.add_parser("api")
    a.add_argument("--attempts", type=int, required=True)
    a.add_argument("--iterations", type=int, default=10_000)
    a.add_argument("--detectors", choices=("none", "default"), required=True)
    j = sub.add_parser("panel")
    j.add_argument("--input", required=True)
    j.add_argument("--url", required=True)
    j.add_argument("--concurrency", type=int, default=0, help="0: redjury's defaults")
    j.add_argument("--cache", default="")
    j.add_argument("--no-cache", action="store_true")
    args = p.parse_args()
    result = {
        "evaluate": cmd_evaluate,
        "detectors": cmd_detectors,
        "bootstrap": cmd_bootstrap,
        "panel": cmd_panel,
        "api": cmd_api,
    }[args.cmd](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
