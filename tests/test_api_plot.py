"""`Results.to_pandas()` carries each probe × detector's `asr` and interval, and
`Results.plot()` draws one labelled bar per probe × detector with its interval as an error
bar (the README's notebook plot drew each probe once per detector, unlabelled, no interval)."""

from __future__ import annotations

import math

import pytest
from redjury_testing import REPO

import redjury
from redjury.report.plot import interval_of

EXAMPLE = REPO / "examples" / "attempts.jsonl"
CONFIG = {"reporting": {"seed": 1, "bootstrap_min_sample_size": 2}}


@pytest.fixture(scope="module")
def results() -> redjury.Results:
    return redjury.evaluate(EXAMPLE, CONFIG)


def test_to_pandas_has_the_asr_and_its_interval(results: redjury.Results) -> None:
    frame = results.to_pandas()
    assert {"asr", "asr_lower", "asr_upper"} <= set(frame.columns)
    by_pair = {(r["probe"], r["detector"]): r for r in results.evals}
    checked = 0
    for row in frame.to_dict("records"):
        source = by_pair[(row["probe"], row["detector"])]
        if not source["total_evaluated"]:
            assert math.isnan(row["asr"])
            continue
        assert row["asr"] == pytest.approx(source["fails"] / source["total_evaluated"])
        lower = source.get("confidence_lower", source.get("interval_lower"))
        upper = source.get("confidence_upper", source.get("interval_upper"))
        assert row["asr_lower"] == pytest.approx(lower)
        assert row["asr_upper"] == pytest.approx(upper)
        assert row["asr_lower"] <= row["asr"] <= row["asr_upper"]
        checked += 1
    assert checked >= 8
    assert (frame["asr"] > 0).any()  # the example has failing pairs


def test_plot_draws_one_labelled_bar_per_pair_with_its_interval(results: redjury.Results):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    ax = results.plot()
    try:
        evaluated = [r for r in results.evals if r["total_evaluated"]]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert len(labels) == len(evaluated) == len(set(labels))  # each pair once
        expected = {f"{r['probe']} · {r['detector']}" for r in evaluated}
        assert set(labels) == expected
        drawn = next(c for c in ax.containers if isinstance(c, BarContainer) and len(c))
        widths = {
            label: patch.get_width()
            for label, patch in zip(labels[::-1], drawn.patches[::-1], strict=True)
        }  # the first row's bar is drawn on top
        for r in evaluated:
            label = f"{r['probe']} · {r['detector']}"
            assert widths[label] == pytest.approx(r["fails"] / r["total_evaluated"])
        error_lines = drawn.errorbar.lines[2][0].get_segments()
        spans = sorted(round(seg[1][0] - seg[0][0], 6) for seg in error_lines)
        intervals = sorted(round(interval_of(r)[1] - interval_of(r)[0], 6) for r in evaluated)
        assert sum(1 for i in intervals if i > 0) >= 8
        assert spans == pytest.approx(intervals, abs=1e-6)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == sorted({r["detector"] for r in evaluated})
    finally:
        plt.close("all")


def test_pairs_with_nothing_evaluated_get_no_bar() -> None:
    from redjury.report.plot import bars

    rows = [
        {"probe": "p", "detector": "a", "fails": 1, "total_evaluated": 4,
         "confidence_lower": 0.1, "confidence_upper": 0.6},
        {"probe": "p", "detector": "b", "fails": 0, "total_evaluated": 0},
        {"probe": "p", "detector": "c", "fails": 2, "total_evaluated": 2,
         "interval_correction": {"source": "audit"}},
    ]  # fmt: skip
    drawn = bars(rows)
    assert [(b.label, b.asr, b.lower, b.corrected) for b in drawn] == [
        ("p · a", 0.25, 0.1, False),
        ("p · c", 1.0, None, True),
    ]
