"""garak's side of the benchmark, run in garak's own virtual environment: one timed run per
invocation, the result as one JSON line on stdout.

Configured as garak's own evaluator tests configure it (tests/evaluators/test_evaluators.py):
`_config.load_base_config()`, a report file opened line-buffered, no hitlog file yet, a run
id, target type and name, 5 generations, seed 42, no Z-scores, wide output.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import data  # noqa: E402  (the benchmark's shared generator, stdlib only)
from garak import _config  # noqa: E402

RUN_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def configure(report_path: Path, ci_method: str, iterations: int) -> None:
    _config.load_base_config()
    _config.reporting.confidence_interval_method = ci_method
    _config.reporting.bootstrap_num_iterations = iterations
    _config.transient.report_filename = str(report_path)
    _config.transient.reportfile = open(report_path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
    _config.transient.run_id = RUN_ID
    _config.transient.hitlogfile = None
    _config.plugins.target_type = "test.TestGenerator"
    _config.plugins.target_name = "test-model"
    _config.run.generations = data.GENERATIONS
    _config.run.seed = 42
    _config.system.show_z = False
    _config.system.verbose = 0
    _config.system.narrow_output = False


def garak_attempts(scored: list[data.ScoredAttempt]) -> list:
    from garak.attempt import Attempt, Message

    out = []
    for s in scored:
        a = Attempt(prompt=Message(text=s.prompt, lang="en"))
        a.uuid = uuid.UUID(s.uuid)
        a.probe_classname = data.PROBE
        a.goal = s.goal
        a.seq = s.seq
        a.intent = s.intent
        a.outputs = list(s.outputs)
        a.detector_results = {data.DETECTOR: list(s.scores)}
        a.status = 2
        out.append(a)
    return out


def cmd_evaluate(args: argparse.Namespace) -> dict:
    from garak.evaluators.base import ThresholdEvaluator

    attempts = garak_attempts(data.scored_attempts(args.attempts))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "bench.report.jsonl"
        configure(report, args.ci, args.iterations)
        sink = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            ThresholdEvaluator(0.5).evaluate(attempts)
        _config.transient.reportfile.flush()
        if _config.transient.hitlogfile is not None:
            _config.transient.hitlogfile.flush()
        seconds = time.perf_counter() - t0
        _config.transient.reportfile.close()
        if _config.transient.hitlogfile is not None:
            _config.transient.hitlogfile.close()
        rows = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
        hitlog = report.with_name("bench.hitlog.jsonl")
        hits = sum(1 for _ in hitlog.open(encoding="utf-8")) if hitlog.exists() else 0
    ev = next(r for r in rows if r["entry_type"] == "eval")
    return {
        "seconds": seconds,
        "counts": {k: ev[k] for k in ("passed", "fails", "nones")},
        "intents": ev.get("intents", {}),
        "hitlog_rows": hits,
        "ci": [ev.get("confidence_lower"), ev.get("confidence_upper")],
    }


def as_a_run_writes(attempts: list) -> list:
    """The rows a garak run writes for these attempts, in its order: each attempt once the
    target has answered (status 1, no scores: the probe writes it), then each again scored
    (status 2: the harness writes it). One attempt in three replies with a typographic
    apostrophe, as models do, which garak writes unescaped (`ensure_ascii=False`)."""
    import copy

    for a in attempts[::3]:
        a.outputs = [o.text.replace("here is", "here\u2019s") for o in a.outputs]
    answered = []
    for a in attempts:
        b = copy.deepcopy(a)
        b.status = 1
        b.detector_results = {}
        answered.append(b)
    return answered + attempts


def cmd_write_report(args: argparse.Namespace) -> dict:
    """garak's report.jsonl of the case-1 attempts, written by garak's own Attempt.as_dict;
    `--as-a-run` writes the rows a garak run writes for them (`as_a_run_writes`)."""
    attempts = garak_attempts(data.scored_attempts(args.attempts))
    if args.as_a_run:
        attempts = as_a_run_writes(attempts)
    path = Path(args.out)
    with path.open("w", encoding="utf-8") as fh:
        setup = {
            "entry_type": "start_run setup",
            "plugins.target_type": "test.TestGenerator",
            "plugins.target_name": "test-model",
            "run.generations": data.GENERATIONS,
        }
        fh.write(json.dumps(setup) + "\n")
        for a in attempts:
            fh.write(json.dumps(a.as_dict(), ensure_ascii=False) + "\n")
    return {"path": str(path), "bytes": path.stat().st_size}


def cmd_detectors(args: argparse.Namespace) -> dict:
    from garak import _plugins
    from garak.attempt import Attempt, Message

    _config.load_base_config()
    attempts = []
    total_bytes = 0
    replies = 0
    for _, trigger, texts in data.reply_attempts(args.attempts):
        a = Attempt(prompt=Message(text="benchmark prompt", lang="en"))
        a.notes["triggers"] = [trigger]
        a.outputs = texts
        attempts.append(a)
        total_bytes += sum(len(t.encode()) for t in texts)
        replies += len(texts)
    out: dict = {"replies": replies, "bytes": total_bytes}
    for name in args.detectors.split(","):
        det = _plugins.load_plugin(f"detectors.{name}")
        # Only detection is timed; hits are counted afterwards, the same on both sides.
        t0 = time.perf_counter()
        results = [det.detect(a) for a in attempts]
        seconds = time.perf_counter() - t0
        hits = sum(1 for scores in results for s in scores if s is not None and s >= 0.5)
        # Each detector starts from the same heap: the last one's results are not left for
        # the garbage collector to walk while the next one is timed (both sides do this).
        del results
        gc.collect()
        out[name] = {"seconds": seconds, "hits": hits}
    return out


def cmd_bootstrap(args: argparse.Namespace) -> dict:
    from garak.analyze.bootstrap_ci import calculate_bootstrap_ci

    _config.load_base_config()
    _config.run.seed = 42
    _config.reporting.bootstrap_num_iterations = args.iterations
    fails = int(args.n * 0.3)
    results = [1] * fails + [0] * (args.n - fails)
    t0 = time.perf_counter()
    ci = calculate_bootstrap_ci(results=results, sensitivity=1.0, specificity=1.0)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "ci": [float(ci[0]) / 100, float(ci[1]) / 100]}


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--attempts", type=int, required=True)
    e.add_argument("--ci", choices=("bootstrap", "none"), required=True)
    e.add_argument("--iterations", type=int, default=10_000)
    w = sub.add_parser("write-report")
    w.add_argument("--attempts", type=int, required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--as-a-run", action="store_true")
    d = sub.add_parser("detectors")
    d.add_argument("--attempts", type=int, required=True)
    d.add_argument(
        "--detectors", default="mitigation.MitigationBypass,promptinject.AttackRogueString"
    )
    b = sub.add_parser("bootstrap")
    b.add_argument("--n", type=int, required=True)
    b.add_argument("--iterations", type=int, default=10_000)
    args = p.parse_args()
    result = {
        "evaluate": cmd_evaluate,
        "write-report": cmd_write_report,
        "detectors": cmd_detectors,
        "bootstrap": cmd_bootstrap,
    }[args.cmd](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
