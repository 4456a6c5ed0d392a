"""Agreement metrics: hand-computed Cohen's and Fleiss' κ, abstentions, intervals, flips."""

from __future__ import annotations

import numpy as np
import pytest

from redjury.audit.metrics import (
    binary_metrics,
    cohen_kappa,
    confusion,
    fleiss_kappa,
    flip_metrics,
    sensitivity_counts,
)


def test_cohen_kappa_by_hand() -> None:
    # 10 items, TP 4, FP 1, TN 3, FN 2: po = 0.7; pe = (5·6 + 5·4)/100 = 0.5; κ = 0.2/0.5 = 0.4
    pred = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    true = [1, 1, 1, 1, 0, 0, 0, 0, 1, 1]
    assert confusion(pred, true) == confusion(pred, true)
    c = confusion(pred, true)
    assert (c.tp, c.fp, c.tn, c.fn) == (4, 1, 3, 2)
    assert cohen_kappa(pred, true) == pytest.approx(0.4)


def test_cohen_kappa_edges() -> None:
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    assert cohen_kappa([1, 1, 1, 1], [1, 0, 1, 0]) == pytest.approx(0.0)  # always yes
    assert cohen_kappa([1, 1], [1, 1]) is None  # chance agreement 1: undefined


def test_fleiss_kappa_by_hand() -> None:
    # 3 raters. Items: all yes, all no, two yes one no.
    # p_yes = 5/9, p_no = 4/9, P_e = 41/81; P_i = 1, 1, 1/3 so P̄ = 7/9; κ = (7/9 − 41/81)/(40/81) = 0.55
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 0, 1]]) == pytest.approx(0.55)


def test_fleiss_kappa_matches_a_textbook_case() -> None:
    # 4 items × 2 raters; agreement on 3, one split. p_yes = 3/8, P_e = 9/64 + 25/64 = 34/64,
    # P̄ = 3/4, κ = (48/64 − 34/64)/(30/64) = 14/30
    assert fleiss_kappa([[1, 1], [0, 0], [0, 0], [1, 0]]) == pytest.approx(14 / 30)
    assert fleiss_kappa([[1], [0]]) is None  # one rater
    assert fleiss_kappa([[1, 1], [1, 1]]) is None  # one category only


def test_abstentions_count_as_not_detected_and_on_their_own() -> None:
    labels = [1, 1, 0, 0]
    pred = [1, 1, 1, 0]
    abstained = [False, True, False, False]  # its vote is ignored
    m = binary_metrics(pred, labels, abstained, iterations=200)
    assert (m["tp"], m["fp"], m["tn"], m["fn"]) == (1, 1, 1, 1)
    assert m["abstentions"] == 1
    assert m["abstention_rate"] == 0.25
    c = sensitivity_counts(pred, labels, abstained)
    assert (c.tp, c.fp, c.tn, c.fn) == (1, 1, 1, 0)


def test_every_rate_has_an_interval_around_it() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random(300) < 0.4
    pred = np.where(rng.random(300) < 0.85, labels, ~labels)
    m = binary_metrics(pred, labels, iterations=1000, seed=5)
    for name in ("accuracy", "precision", "recall", "f1", "cohen_kappa", "abstention_rate"):
        lo, hi = m[f"{name}_ci"]
        assert lo <= m[name] <= hi, name
    assert m["abstention_rate_ci"][0] == 0.0
    assert binary_metrics(pred, labels, iterations=1000, seed=5) == m  # seeded


def test_undefined_rates_are_none() -> None:
    m = binary_metrics([0, 0, 0], [0, 0, 0], iterations=50)
    assert m["precision"] is None and m["precision_ci"] is None
    assert m["recall"] is None
    assert m["f1"] is None
    assert m["accuracy"] == 1.0


def test_flip_metrics() -> None:
    labels = [1, 1, 0, 0, 1]
    before = [1, 1, 0, 0, 0]
    after = [0, 1, 1, 0, 0]
    f = flip_metrics(before, after, labels)
    assert f["flips"] == 2
    assert f["flip_rate"] == 0.4
    assert f["detected_to_missed"] == 1
    assert f["missed_to_detected"] == 1
    assert f["true_positives_lost"] == 1
    assert f["accuracy"] == 0.4
    assert f["accuracy_change"] == pytest.approx(-0.4)
