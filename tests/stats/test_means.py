"""The bootstrap interval of a mean of graded scores."""

from __future__ import annotations

import numpy as np

from redjury.stats.means import bootstrap_mean


def test_interval_brackets_the_mean_and_narrows_with_more_replies():
    rng = np.random.default_rng(3)
    small = rng.uniform(0, 1, 30).tolist()
    large = rng.uniform(0, 1, 3000).tolist()
    a, b = bootstrap_mean(small), bootstrap_mean(large)
    assert a["ci"][0] < a["mean"] < a["ci"][1]
    assert (b["ci"][1] - b["ci"][0]) < (a["ci"][1] - a["ci"][0]) / 5
    assert abs(b["mean"] - 0.5) < 0.05 and b["n"] == 3000


def test_same_seed_same_interval_and_degenerate_cases():
    values = [0.0, 0.25, 1.0, 0.75]
    assert bootstrap_mean(values, seed=1) == bootstrap_mean(values, seed=1)
    assert bootstrap_mean([]) == {"mean": None, "ci": None, "n": 0}
    assert bootstrap_mean([0.4]) == {"mean": 0.4, "ci": None, "n": 1}
    assert bootstrap_mean([0.5, 0.5])["ci"] == [0.5, 0.5]


def test_blocks_give_the_requested_number_of_resamples(monkeypatch):
    import redjury.stats.means as means

    monkeypatch.setattr(means, "_BLOCK_VALUES", 10)
    values = list(np.linspace(0, 1, 7))
    blocked = means.bootstrap_mean(values, iterations=50, seed=2)
    assert blocked["ci"][0] < blocked["mean"] < blocked["ci"][1]
