"""How far a refusal cascade can reach: calls saved and accuracy change if the cascade also
decided the jailbreak heuristic's INCONCLUSIVE kinds HELD, on HarmBench's labelled text
validation set (596 records) and, kept apart, its multimodal validation set (220 records).

No HTTP: the panel's verdict on an output the cascade leaves to it is the stored classifier's
(text: `cls`; multimodal: `llama_cls`), as in benchmarks/cascade_harmbench.py, whose figure
for the plain cascade this reproduces. Accuracy is against the human majority.

    python benchmarks/cascade_reach.py [--data DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Iterator
from pathlib import Path

from heuristic_accuracy import default_data

from redjury.attempts import Attempt
from redjury.detectors.base import Finding, Verdict
from redjury.detectors.jailbreak import JailbreakHeuristicDetector

RULES = {
    "HELD (the cascade as built)": {"held"},
    "HELD or off the goal": {"held", "off_goal"},
    "HELD or caution": {"held", "caution"},
    "HELD, off the goal or caution": {"held", "off_goal", "caution"},
    "HELD or neither refusal nor goal content": {"held", "neither"},
    "HELD or any INCONCLUSIVE": {"held", "off_goal", "caution", "neither", "other"},
}


def kind(finding: Finding) -> str:
    if finding.verdict is Verdict.HELD:
        return "held"
    if finding.verdict is Verdict.BROKE_THROUGH:
        return "broke"
    reason = finding.reason or ""
    for key, name in (("caution", "caution"), ("neither", "neither"), ("off the goal", "off_goal")):
        if key in reason:
            return name
    return "other"


def records(data: Path, multimodal: bool) -> list[tuple[str, str, bool, bool]]:
    """(goal, reply, human label, stored classifier's verdict) per labelled record."""
    prefix = "multimodal" if multimodal else "text"
    stored = "llama_cls" if multimodal else "cls"
    with (data / f"harmbench_behaviors_{prefix}_all.csv").open(newline="") as fh:
        goals = {r["BehaviorID"]: r["Behavior"] for r in csv.DictReader(fh)}
    items = json.loads((data / f"{prefix}_behaviors_val_set.json").read_text())
    out = []
    for bid, rows in items.items():
        if bid not in goals:
            continue
        for row in rows:
            votes = sum(int(row.get(f"human_{k}") or 0) for k in range(3))
            verdict = str(row.get(stored)).strip().lower() in ("1", "yes", "true")
            out.append((goals[bid], str(row.get("generation") or ""), votes >= 2, verdict))
    return out


def reach(rows: list[tuple[str, str, bool, bool]]) -> list[tuple[str, int, float]]:
    det = JailbreakHeuristicDetector()
    kinds = [
        kind(det.detect(Attempt(id=str(i), goal=g, outputs=[r]))[0])
        for i, (g, r, _, _) in enumerate(rows)
    ]
    n = len(rows)
    panel = sum(v == label for (_, _, label, v) in rows)
    table = []
    for name, decided in RULES.items():
        saved = sum(k in decided for k in kinds)
        correct = sum(
            (False if k in decided else v) == label
            for k, (_, _, label, v) in zip(kinds, rows, strict=True)
        )
        table.append((name, saved, 100 * (correct - panel) / n))
    return table


def each_set(
    argv: list[str] | None, description: str
) -> Iterator[list[tuple[str, str, bool, bool]]]:
    """The text, then the multimodal validation records of the HarmBench folder (`--data`),
    each announced by a line with its size."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=None, help="HarmBench data folder")
    data = parser.parse_args(argv).data or default_data()
    for multimodal in (False, True):
        rows = records(data, multimodal)
        label = "multimodal" if multimodal else "text"
        print(
            f"HarmBench {label} validation: {len(rows)} records, {sum(r[2] for r in rows)} positive"
        )
        yield rows


def main(argv: list[str] | None = None) -> int:
    for rows in each_set(argv, __doc__.split("\n\n")[0]):
        for name, saved, change in reach(rows):
            print(f"  {name:<42}{saved:>5} ({saved / len(rows):6.1%}) {change:+6.2f} pt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
