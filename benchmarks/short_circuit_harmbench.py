"""Judge calls the panel's short circuit (`evaluation.short_circuit`) saves on HarmBench's
human-labelled classifier validation set (596 joined records, from $REDJURY_TEST_DATA/harmbench),
alone and after the refusal cascade (`cascade.held_by: [jailbreak_heuristic]`).

The panel is three `harmbench` judges voting by majority, each on a scripted local
OpenAI-compatible server that answers as one stored classifier of the set did: HarmBench's
Llama-2-13b classifier (`cls`), its Mistral-7b classifier (`cls_mistral`) and GPT-4-0613
(`gpt-4-0613`), asked in that order (fixed before any figure was seen: the set's three most
accurate stored judges, HarmBench's own first). Every record goes through the run's own scorer
(`AttemptScorer.score_one`, HTTP included, no cache). Calls are counted at the server; accuracy
and Cohen's κ are against the human majority. The short circuit must change no verdict: the
script fails if one differs. The saving depends on the judges' order only through which pair is
asked first; the figures for the other orders are counted from the stored columns, no HTTP.

    python benchmarks/short_circuit_harmbench.py [--data DIR] [--json]
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path
from typing import Any

from cascade_harmbench import (
    StoredClassifier,
    agreement,
    data_and_json,
    panel_scores,
    print_json,
    server_url,
    text_samples,
)

from redjury.audit.datasets import LabelledSample
from redjury.judges.aggregation import next_wave, settled_verdict
from redjury.judges.config import EvaluationSpec
from redjury.judges.panel import JudgePanelDetector

JUDGES = ("cls", "cls_mistral", "gpt-4-0613")


def _panel(url: str, short_circuit: bool, cascade: bool) -> JudgePanelDetector:
    spec = EvaluationSpec.model_validate(
        {
            "judges": [
                {"name": name, "connection": {"base_url": url}, "generation": {"seed": 0}}
                for name in JUDGES
            ],
            "aggregation": "majority",
            "short_circuit": short_circuit,
            "cascade": {"held_by": ["jailbreak_heuristic"] if cascade else []},
        }
    )
    return JudgePanelDetector.from_spec(spec, use_cache=False)


async def score_all(server: StoredClassifier, short_circuit: bool, cascade: bool) -> dict[str, Any]:
    panel = _panel(server_url(server), short_circuit, cascade)
    scores, _, calls = await panel_scores(server, panel)
    accuracy, kappa = agreement(scores, server.samples)
    stats = panel.stats()
    return {
        "calls": calls,
        "cascaded": stats["cascaded"],
        "short_circuited": stats["short_circuited"],
        "calls_saved_counted": stats["calls_saved"],
        "abstained": sum(s is None for s in scores),
        "accuracy": accuracy,
        "kappa": kappa,
        "scores": scores,
    }


def counted_calls(samples: list[LabelledSample], order: tuple[str, ...]) -> int:
    """The calls a short-circuited majority panel makes in this judge order (no HTTP)."""
    calls = 0
    for s in samples:
        votes: list[float | None] = []
        while len(votes) < len(order):
            left = len(order) - len(votes)
            if votes and settled_verdict(votes, left) is not None:
                break
            for name in order[len(votes) : len(votes) + next_wave(votes, left)]:
                votes.append(10.0 if s.stored.get(name) else 0.0)
        calls += len(votes)
    return calls


def measure(data: Path) -> dict[str, Any]:
    samples = text_samples(data)
    server = StoredClassifier(samples)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    runs: dict[str, dict[str, Any]] = {}
    try:
        for cascade in (False, True):
            for short in (False, True):
                name = f"{'cascade + ' if cascade else ''}{'short circuit' if short else 'full'}"
                runs[name] = asyncio.run(score_all(server, short, cascade))
    finally:
        server.shutdown()
    for plain, short in (("full", "short circuit"), ("cascade + full", "cascade + short circuit")):
        if runs[plain]["scores"] != runs[short]["scores"]:
            raise SystemExit(f"the short circuit changed a verdict ({short} vs {plain})")
    full = runs["full"]["calls"]
    for r in runs.values():
        r.pop("scores")
        r["calls_saved_share"] = 1 - r["calls"] / full
    orders = {
        " > ".join(order): 1 - counted_calls(samples, order) / (len(JUDGES) * len(samples))
        for order in itertools.permutations(JUDGES)
    }
    return {
        "records": len(samples),
        "judges": list(JUDGES),
        "unmatched_requests": server.unmatched,
        "runs": runs,
        "short_circuit_saved_share_by_order": orders,
    }


def main(argv: list[str] | None = None) -> int:
    data, as_json = data_and_json(argv, __doc__.split("\n\n")[0])
    result = measure(data)
    if as_json:
        return print_json(result)
    print(
        f"{'':<26}{'calls':>7}{'saved':>8}{'cascaded':>10}{'short':>7}{'accuracy':>10}{'kappa':>8}"
    )
    for name, r in result["runs"].items():
        print(
            f"{name:<26}{r['calls']:>7}{r['calls_saved_share']:>8.1%}{r['cascaded']:>10}"
            f"{r['short_circuited']:>7}{r['accuracy']:>10.4f}{r['kappa']:>8.4f}"
        )
    print("short circuit alone, calls saved by judge order (counted, no HTTP):")
    for order, share in result["short_circuit_saved_share_by_order"].items():
        print(f"  {order}: {share:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
