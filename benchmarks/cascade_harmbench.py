"""Judge calls the cascade saves, and what it costs in accuracy, on HarmBench's human-labelled
classifier validation set (596 joined records, from $REDJURY_TEST_DATA/harmbench).

The panel is one `harmbench` judge on a scripted local OpenAI-compatible server that answers
each record as the stored HarmBench Llama-2-13b classifier did (the set's `cls` column). Every
record is scored twice through the run's own scorer (`AttemptScorer.score_one`, HTTP calls
included, no cache): the panel alone, and the cascade (`held_by: [jailbreak_heuristic]`).
Calls are counted at the server; accuracy and Cohen's κ are against the human majority. A
panel abstention counts as "not a success" (there should be none: every answer is readable).

    python benchmarks/cascade_harmbench.py [--data DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from heuristic_accuracy import default_data

from redjury.audit.datasets import STORED_JUDGES, LabelledSample, read_harmbench
from redjury.audit.metrics import cohen_kappa
from redjury.audit.runner import to_attempt
from redjury.detectors.jailbreak import JailbreakHeuristicDetector
from redjury.judges.config import EvaluationSpec
from redjury.judges.panel import JudgePanelDetector
from redjury.redaction import run_redactors
from redjury.rows import AttemptScorer


class StoredClassifier(ThreadingHTTPServer):
    """Answers each judge request `Yes`/`No` as the stored classifier did on the record whose
    behaviour and generation the request quotes; counts the requests."""

    daemon_threads = True

    def __init__(self, samples: list[LabelledSample]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.samples = samples
        self.requests = 0
        self.by_model: dict[str, int] = {}
        self.unmatched = 0
        self.lock = threading.Lock()

    def answer(self, content: str, column: str = "cls") -> str:
        """`column`: the stored classifier answering (the judge's model name, where it is one)."""
        for s in self.samples:
            if s.response in content and s.goal in content:
                return "Yes" if s.stored.get(column) else "No"
        with self.lock:
            self.unmatched += 1
        return "No"


class _Handler(BaseHTTPRequestHandler):
    server: StoredClassifier

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        content = "\n".join(str(m.get("content")) for m in body.get("messages", ()))
        column = str(body.get("model"))
        column = column if column in STORED_JUDGES else "cls"
        with self.server.lock:
            self.server.requests += 1
            self.server.by_model[column] = self.server.by_model.get(column, 0) + 1
        reply = {
            "id": "cmpl",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": self.server.answer(content, column),
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Outcome:
    calls: int
    decided_by_cascade: int
    abstained: int
    accuracy: float
    kappa: float | None


def _panel(url: str, cascade: bool) -> JudgePanelDetector:
    spec = EvaluationSpec.model_validate(
        {
            "judges": [
                {
                    "name": "harmbench-cls",
                    "connection": {"base_url": url},
                    "generation": {"seed": 0},
                }
            ],
            "cascade": {"held_by": ["jailbreak_heuristic"] if cascade else []},
        }
    )
    return JudgePanelDetector.from_spec(spec, use_cache=False)


async def panel_scores(
    server: StoredClassifier, panel: JudgePanelDetector
) -> tuple[list[Any], list[dict[str, Any]], int]:
    """Every sample through the run's scorer (heuristic + `panel`) over HTTP: the panel's
    score and details per sample, and the requests the server saw."""
    detectors = [JailbreakHeuristicDetector(), panel]
    scorer = AttemptScorer(detectors, *run_redactors(detectors), True)
    before = server.requests
    try:
        rows = await asyncio.gather(*(scorer.score_one(to_attempt(s)) for s in server.samples))
    finally:
        await panel.aclose()
    scores = [r["detector_results"]["judge_panel"][0] for r in rows]
    details = [r["details"]["judge_panel"][0] for r in rows]
    return scores, details, server.requests - before


def agreement(scores: list[Any], samples: list[LabelledSample]) -> tuple[float, float | None]:
    """Accuracy and Cohen's kappa of the panel's scores against the human labels."""
    predicted = [s is not None and s >= 0.5 for s in scores]
    labels = [s.label for s in samples]
    correct = sum(p == t for p, t in zip(predicted, labels, strict=True))
    return correct / len(labels), cohen_kappa(predicted, labels)


def server_url(server: StoredClassifier) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


async def score_all(server: StoredClassifier, cascade: bool) -> Outcome:
    scores, details, calls = await panel_scores(server, _panel(server_url(server), cascade))
    accuracy, kappa = agreement(scores, server.samples)
    return Outcome(
        calls=calls,
        decided_by_cascade=sum(bool(d.get("decided_by")) for d in details),
        abstained=sum(s is None for s in scores),
        accuracy=accuracy,
        kappa=kappa,
    )


def text_samples(data: Path) -> list[LabelledSample]:
    """HarmBench's labelled text validation records."""
    return read_harmbench(
        data / "text_behaviors_val_set.json", data / "harmbench_behaviors_text_all.csv"
    ).samples


def data_and_json(argv: list[str] | None, description: str) -> tuple[Path, bool]:
    """The HarmBench folder (`--data`, checked) and whether to print JSON (`--json`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=None, help="HarmBench data folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    data = args.data or default_data()
    if not (data / "text_behaviors_val_set.json").is_file():
        parser.error(f"no text_behaviors_val_set.json in {data}")
    return data, args.json


def print_json(result: dict[str, Any]) -> int:
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


def measure(data: Path) -> dict[str, Any]:
    samples = text_samples(data)
    server = StoredClassifier(samples)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        panel = asyncio.run(score_all(server, cascade=False))
        cascade = asyncio.run(score_all(server, cascade=True))
    finally:
        server.shutdown()
    negatives = sum(not s.label for s in samples)
    return {
        "records": len(samples),
        "positive": len(samples) - negatives,
        "unmatched_requests": server.unmatched,
        "panel": panel.__dict__,
        "cascade": cascade.__dict__,
        "calls_saved": panel.calls - cascade.calls,
        "calls_saved_share": (panel.calls - cascade.calls) / panel.calls,
        "accuracy_change_points": 100 * (cascade.accuracy - panel.accuracy),
        # How much of a campaign's refusals the heuristic takes off the judges.
        "negatives_decided_share": cascade.decided_by_cascade / negatives,
    }


def main(argv: list[str] | None = None) -> int:
    data, as_json = data_and_json(argv, __doc__.split("\n\n")[0])
    result = measure(data)
    if as_json:
        return print_json(result)
    print(f"{'':<10}{'calls':>7}{'decided by cascade':>20}{'accuracy':>10}{'kappa':>8}")
    for name in ("panel", "cascade"):
        r = result[name]
        print(
            f"{name:<10}{r['calls']:>7}{r['decided_by_cascade']:>20}"
            f"{r['accuracy']:>10.3f}{r['kappa']:>8.3f}"
        )
    print(
        f"calls saved {result['calls_saved']} ({result['calls_saved_share']:.1%}), accuracy "
        f"{result['accuracy_change_points']:+.2f} points; the heuristic decided "
        f"{result['negatives_decided_share']:.1%} of the human-negative replies"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
