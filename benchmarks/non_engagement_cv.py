"""Can a small fitted model of cheap reply features find more replies the judge need not see?
Measured honestly on HarmBench's text validation set (596 records) by 10-fold
cross-validation grouped by behaviour: the held-out figure is the figure.

Per reply: the jailbreak heuristic's goal overlap and kind (BROKE_THROUGH / off the goal /
neither / caution / other), log word count, a list or code, a question mark, a deflection
phrase, the number of moralising phrases (benchmarks/non_engagement.py's lists). A logistic
regression (numpy, L2 0.01, 3000 steps) is fitted on each training split's replies the
heuristic does not hold, predicting the human label; on the training split the cut-off is the
largest p(success) below which deciding HELD costs at most 0.5 accuracy point against the
stored `cls` judge (half the issue's 1-point budget, fixed beforehand); that cut-off is then
applied to the held-out split. Run once; the budget, features and folds were not varied.

    python benchmarks/non_engagement_cv.py [--data DIR]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from cascade_reach import kind, records
from heuristic_accuracy import default_data
from non_engagement import DEFLECTION, MORALISING, STRUCTURE

from redjury.attempts import Attempt
from redjury.detectors.jailbreak import JailbreakHeuristicDetector

BUDGET = 0.005
KINDS = ("broke", "off_goal", "neither", "caution", "other")


def features(rows: list[tuple[str, str, bool, bool]]) -> tuple[np.ndarray, np.ndarray]:
    """The feature matrix (a constant first) and which replies the heuristic holds."""
    det = JailbreakHeuristicDetector()
    x, held = [], []
    for i, (goal, reply, _, _) in enumerate(rows):
        finding = det.detect(Attempt(id=str(i), goal=goal, outputs=[reply]))[0]
        k = kind(finding)
        low = reply.lower()
        x.append(
            [
                1.0,
                float((finding.details or {}).get("goal_overlap") or 0.0),
                math.log1p(len(reply.split())),
                float(bool(STRUCTURE.search(reply))),
                float("?" in reply),
                float(any(p in low for p in DEFLECTION)),
                float(sum(p in low for p in MORALISING)),
                *(float(k == name) for name in KINDS),
            ]
        )
        held.append(k == "held")
    return np.array(x), np.array(held)


def fit(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    mu, sd = x[:, 1:].mean(0), x[:, 1:].std(0) + 1e-9

    def z(m: np.ndarray) -> np.ndarray:
        return np.c_[m[:, :1], (m[:, 1:] - mu) / sd]

    w = np.zeros(x.shape[1])
    zx = z(x)
    for _ in range(3000):
        p = 1 / (1 + np.exp(-zx @ w))
        w -= 0.1 * (zx.T @ (p - y) / len(y) + 0.01 * np.r_[0.0, w[1:]])
    return lambda m: 1 / (1 + np.exp(-z(m) @ w))


def cross_validated(rows: list[tuple[str, str, bool, bool]]) -> dict[str, float]:
    x, held = features(rows)
    y = np.array([r[2] for r in rows], float)
    judge = np.array([r[3] for r in rows], bool)
    groups = np.arange(len(rows)) // 2  # the set has two replies per behaviour, in order
    ids = np.unique(groups)
    np.random.default_rng(0).shuffle(ids)
    saved = lost = 0
    for fold in np.array_split(ids, 10):
        test = np.isin(groups, fold)
        train = ~test
        predict = fit(x[train & ~held], y[train & ~held])
        p_train, cut = predict(x[train]), 0.0
        for t in np.linspace(0, 0.5, 101):
            decide = (p_train < t) & ~held[train]
            cost = ((judge[train] == y[train]) & decide).sum() - ((y[train] == 0) & decide).sum()
            if cost / train.sum() <= BUDGET:
                cut = t
        decide = (predict(x[test]) < cut) & ~held[test]
        saved += int(decide.sum())
        lost += int(((judge[test] == y[test]) & decide).sum() - ((y[test] == 0) & decide).sum())
    n = len(rows)
    return {
        "held_by_heuristic": float(held.sum()),
        "extra_decided_held_out": float(saved),
        "calls_saved_share": (held.sum() + saved) / n,
        "extra_accuracy_change_points": -100 * lost / n,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="HarmBench data folder")
    args = parser.parse_args(argv)
    r = cross_validated(records(args.data or default_data(), False))
    print(
        f"heuristic holds {r['held_by_heuristic']:.0f}; the model decides "
        f"{r['extra_decided_held_out']:.0f} more held-out: {r['calls_saved_share']:.1%} of calls "
        f"saved, {r['extra_accuracy_change_points']:+.2f} accuracy points beyond the cascade's own"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
