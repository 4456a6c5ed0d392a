"""The digest row: its numbers equal the eval rows', it streams large reports, it reads judge votes."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from redjury_testing import read_jsonl, rows_of, write_jsonl
from report_fixtures import run_example, synthetic_report

from redjury.report.digest import digest_row
from redjury.stats import wilson_interval


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_example(tmp_path_factory.mktemp("digest") / "run")


def test_digest_row_comes_after_the_eval_rows_and_before_completion(example: Path) -> None:
    kinds = [r["entry_type"] for r in read_jsonl(example / "redjury.report.jsonl")]
    assert kinds.count("digest") == 1
    assert kinds.index("digest") > max(i for i, k in enumerate(kinds) if k == "eval")
    assert kinds[-1] == "completion" and kinds[-2] == "digest"


def test_digest_numbers_equal_the_eval_rows(example: Path) -> None:
    report = example / "redjury.report.jsonl"
    evals = {(r["probe"], r["detector"]): r for r in rows_of(report, "eval")}
    digest = rows_of(report, "digest")[0]
    assert len(digest["probe_detector"]) == len(evals)
    for entry in digest["probe_detector"]:
        row = evals[(entry["probe"], entry["detector"])]
        for key in ("passed", "fails", "nones", "total_evaluated"):
            assert entry[key] == row[key]
        n = row["total_evaluated"]
        assert entry["asr"] == (row["fails"] / n if n else None)
        for key in ("confidence_lower", "confidence_upper", "confidence_method"):
            assert entry.get(key) == row.get(key)
    assert any("confidence_lower" in e for e in digest["probe_detector"]), "run has intervals"
    rates = [e["asr"] for e in digest["probe_detector"] if e["asr"] is not None]
    assert rates == sorted(rates, reverse=True), "worst first"


def test_intent_breakdown_sums_the_eval_rows_intents(example: Path) -> None:
    report = example / "redjury.report.jsonl"
    expected: dict[tuple[str, str], list[int]] = {}
    for row in rows_of(report, "eval"):
        for intent, c in (row.get("intents") or {}).items():
            bucket = expected.setdefault((intent, row["detector"]), [0, 0, 0])
            bucket[0] += c["passed"]
            bucket[1] += c["total_evaluated"]
            bucket[2] += c["nones"]
    digest = rows_of(report, "digest")[0]
    got = {
        (e["intent"], e["detector"]): [e["passed"], e["total_evaluated"], e["nones"]]
        for e in digest["by_intent"]
    }
    assert got == expected


def test_generator_breakdown_counts_every_scored_output(example: Path) -> None:
    report = example / "redjury.report.jsonl"
    digest = rows_of(report, "digest")[0]
    per_detector: dict[str, int] = {}
    for row in rows_of(report, "eval"):
        per_detector[row["detector"]] = (
            per_detector.get(row["detector"], 0) + row["total_processed"]
        )
    got = {e["detector"]: e["total_evaluated"] + e["nones"] for e in digest["by_generator"]}
    assert got == per_detector  # every example attempt names the same generator


def test_breakdown_intervals_are_wilson_from_the_minimum_sample_size_up(tmp_path: Path) -> None:
    path = synthetic_report(tmp_path, 400)
    digest = digest_row(path)
    for entry in digest["by_intent"]:
        n = entry["total_evaluated"]
        if n >= 30:
            lo, hi = wilson_interval(entry["fails"], n, 0.95)
            assert entry["confidence_method"] == "wilson"
            assert (entry["confidence_lower"], entry["confidence_upper"]) == pytest.approx((lo, hi))
        elif n:
            # Below the minimum sample: redjury's Clopper–Pearson interval, not garak's fields.
            assert "confidence_lower" not in entry
            assert entry["interval_method"] == "clopper_pearson"
            assert entry["interval_lower"] <= entry["fails"] / n <= entry["interval_upper"]


def test_matrix_cell_counts_an_output_once_failed_by_any_detector(tmp_path: Path) -> None:
    header = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    attempt = {
        "entry_type": "attempt",
        "id": "x",
        "probe": "p",
        "intent": "fraud",
        "outputs": ["a", "b", "c"],
        "detector_results": {"d1": [1.0, 0.0, None], "d2": [1.0, 1.0, None]},
    }
    path = write_jsonl(tmp_path / "r.jsonl", [header, attempt])
    cells = digest_row(path)["technique_intent"]
    assert cells["probes"] == ["p"] and cells["intents"] == ["fraud"]
    cell = cells["cells"][0][0]
    assert (cell["fails"], cell["passed"], cell["nones"]) == (2, 0, 1)


@pytest.mark.parametrize(
    ("evaluator", "results", "expected"),
    [
        # Score lists of different lengths: an output one detector never scored still counts.
        (
            {"type": "threshold", "threshold": 0.5},
            {"d1": [1.0, 0.0], "d2": [None, 0.0, 0.0]},
            (1, 2, 0),
        ),
        # One detector, a policy other than the threshold: its own counts are the cell.
        ({"type": "zero_tolerance"}, {"d1": [0.0, 0.1, None]}, (1, 1, 1)),
        ({"type": "threshold", "threshold": 0.2}, {"d1": [0.2, 0.1, None, 0.9]}, (2, 1, 1)),
    ],
)
def test_matrix_cell_under_each_policy_and_score_shape(
    tmp_path: Path, evaluator: dict, results: dict, expected: tuple[int, int, int]
) -> None:
    header = {"entry_type": "init", "evaluator": evaluator}
    attempt = {
        "entry_type": "attempt",
        "id": "x",
        "probe": "p",
        "intent": "fraud",
        "outputs": ["a", "b", "c", "d"],
        "detector_results": results,
    }
    path = write_jsonl(tmp_path / "r.jsonl", [header, attempt])
    cell = digest_row(path)["technique_intent"]["cells"][0][0]
    assert (cell["fails"], cell["passed"], cell["nones"]) == expected


def test_judge_votes_abstentions_and_agreement(tmp_path: Path) -> None:
    header = {
        "entry_type": "init",
        "evaluator": {"type": "threshold", "threshold": 0.5},
        "config": {"evaluation": {"threshold": 7.0}},
    }

    def attempt(i: int, votes: dict[str, float | None]) -> dict[str, object]:
        return {
            "entry_type": "attempt",
            "id": str(i),
            "probe": "p",
            "outputs": ["o"],
            "detector_results": {"judge_panel": [1.0]},
            "details": {"judge_panel": [{"votes": votes, "abstention_rate": 0.0}]},
        }

    rows = [
        header,
        attempt(1, {"a": 9, "b": 8, "c": None}),
        attempt(2, {"a": 9, "b": 1, "c": 2}),
        attempt(3, {"a": 0, "b": 0, "c": 10}),
    ]
    panel = digest_row(write_jsonl(tmp_path / "r.jsonl", rows))["judge_panel"]
    judges = {j["judge"]: j for j in panel["judges"]}
    assert (judges["a"]["unsafe"], judges["a"]["safe"], judges["a"]["abstained"]) == (2, 1, 0)
    assert judges["c"]["abstention_rate"] == pytest.approx(1 / 3)
    pairs = {tuple(p["judges"]): p for p in panel["agreement"]}
    assert (pairs[("a", "b")]["both_voted"], pairs[("a", "b")]["agreed"]) == (3, 2)
    assert (pairs[("a", "c")]["both_voted"], pairs[("a", "c")]["agreed"]) == (2, 0)


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = synthetic_report(tmp_path, 10)
    with path.open("a") as fh:
        fh.write('{"entry_type": "attempt", "id": "torn"')
    assert digest_row(path)["attempts"] == 10


def test_a_file_without_an_init_row_is_a_clear_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"entry_type": "attempt", "id": "1"}])
    with pytest.raises(ValueError, match="not a redjury report"):
        digest_row(path)


@pytest.mark.slow
def test_digest_of_100k_attempts_is_flat_in_memory(tmp_path: Path) -> None:
    # Its speed is the benchmarks' business (timed asserts fail on a loaded machine).
    path = synthetic_report(tmp_path, 100_000)
    tracemalloc.start()
    digest = digest_row(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert digest["attempts"] == 100_000
    # Aggregates only: the peak does not grow with the number of attempts.
    assert peak < 5_000_000, f"peak {peak} bytes"
    json.dumps(digest)
