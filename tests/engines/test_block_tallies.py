"""Tallies of blocks merged in input order equal the tally of the whole run (no Ray needed)."""

from __future__ import annotations

from typing import Any

from redjury.config import parse_config
from redjury.evaluators import RunTally, ThresholdEvaluator
from redjury.report.digest import DigestBuilder
from redjury.report.statistics import eval_statistics


def rows(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        scores = [(i * 7 + j * 3) % 10 / 10 if (i + j) % 6 else None for j in range(3)]
        out.append(
            {
                "entry_type": "attempt",
                "id": f"a{i}",
                "probe": f"p{i % 4}",
                "intent": ["x", "y", None][i % 3],
                "hazard": "h" if i % 2 else None,
                "outputs": [f"out {i}.{j}" for j in range(3)],
                "detector_results": {"d1": scores, "d2": list(reversed(scores))},
                "details": {
                    "judge_panel": [
                        {"votes": {"a": 9.0, "b": None}, "abstention_rate": 0.5, "flippable": True}
                    ]
                }
                if i % 5 == 0
                else {},
            }
        )
    return out


def tally_of(part: list[dict[str, Any]], header: dict[str, Any]) -> tuple[RunTally, DigestBuilder]:
    tally, digest = RunTally(ThresholdEvaluator(0.5)), DigestBuilder(header)
    for row in part:
        tally.add(row)
        digest.add_attempt(row)
    return tally, digest


def test_blocks_merged_in_order_give_the_whole_runs_eval_rows_and_digest() -> None:
    config = parse_config({"reporting": {"seed": 3, "hit_at_k": [1, 2]}})
    header = {"config": config.model_dump(mode="json")}
    every = rows(500)
    whole_tally, whole_digest = tally_of(every, header)
    merged_tally, merged_digest = tally_of([], header)
    for start in range(0, 500, 64):
        tally, digest = tally_of(every[start : start + 64], header)
        merged_tally.merge(tally)
        merged_digest.merge(digest)
    stats = eval_statistics(config.reporting, 3)
    assert list(merged_tally.eval_rows(stats)) == list(whole_tally.eval_rows(stats))
    assert merged_tally.tallies == whole_tally.tallies  # first_hits in input order too
    assert merged_digest.row() == whole_digest.row()
