"""Pricing the judges' calls: cost per judge and in total, the cache's saving, and the
cascade's estimated saving at the judge's mean tokens per call."""

from __future__ import annotations

import pytest

from redjury.judges.costs import cost_summary, judge_prices


def test_prices_are_keyed_by_judge_id_as_the_panel_names_judges() -> None:
    evaluation = {
        "judges": [
            {"name": "m", "connection": {"price": {"input": 1.0, "output": 2.0}}},
            {"name": "m", "connection": {"price": {"input": 3.0, "output": 4.0}}},
            {"name": "n", "id": "mine", "connection": {"price": {"input": 5, "output": 6}}},
            {"name": "free", "connection": {"price": None}},
        ]
    }
    assert judge_prices(evaluation) == {
        "harmbench:m": (1.0, 2.0),
        "harmbench:m#2": (3.0, 4.0),
        "mine": (5.0, 6.0),
    }


def test_cost_cache_and_cascade_savings_per_judge_and_in_total() -> None:
    # a: 2 calls of 1000 + 10 tokens, 1 cached answer of 500 + 10; b: no call at all.
    usage = {"a": [2, 2000, 20, 1, 500, 10]}
    prices = {"a": (2.0, 10.0), "b": (1.0, 1.0)}
    summary = cost_summary(usage, prices, cascaded=3)
    assert summary is not None
    a, b = summary["judges"]
    assert a["cost"] == pytest.approx((2000 * 2 + 20 * 10) / 1e6)
    assert a["cache_saved"] == pytest.approx((500 * 2 + 10 * 10) / 1e6)
    # Mean per call over the 3 answers (calls and cached), times the 3 calls saved.
    assert a["cascade_saved"] == pytest.approx((4200 + 1100) / 1e6)
    # A judge that answered nothing has no mean: its saving, and so the total's, is unknown.
    assert b == {"judge": "b", "calls": 0, "cost": 0.0, "cache_saved": 0.0, "cascade_saved": None}
    assert summary["total"]["cascade_saved"] is None
    assert summary["total"]["cost"] == pytest.approx(a["cost"])


def test_no_prices_no_cost() -> None:
    assert cost_summary({"a": [1, 10, 1, 0, 0, 0]}, {}, cascaded=5) is None
