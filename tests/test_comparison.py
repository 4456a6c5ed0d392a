"""Comparing two runs (issue 42): counting by attempt, pairing, the judges' check, the rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compare_fixtures import PII_ONLY, attempts_with_rates
from redjury_testing import REPO

import redjury
from redjury.comparison import instrument_differences
from redjury.errors import CompareError


def _run(rows: list[dict], out: Path, config: dict | None = None) -> redjury.Results:
    return redjury.evaluate(rows, config or PII_ONLY, out=out)


def _row(comparison: redjury.Comparison, probe: str) -> dict:
    return next(r for r in comparison.rows if r["probe"] == probe)


def test_rows_carry_the_issue_fields_for_every_scope(tmp_path: Path) -> None:
    base = _run(
        attempts_with_rates({"A": 0.3, "B": 0.1}, 60, seed=1, intent="fraud"), tmp_path / "b"
    )
    new = _run(
        attempts_with_rates({"A": 0.1, "B": 0.1}, 60, seed=2, intent="fraud"), tmp_path / "n"
    )
    found = redjury.compare(base, new)
    scopes = {(r["scope"], r["probe"], r["intent"], r["detector"]) for r in found.rows}
    assert scopes == {
        ("probe", "A", None, "pii_leak"),
        ("probe", "B", None, "pii_leak"),
        ("intent", None, "fraud", "pii_leak"),
        ("overall", None, None, "pii_leak"),
    }
    a = _row(found, "A")
    for name in ("base_asr", "new_asr", "difference", "difference_lower", "difference_upper",
                 "p_value", "p_adjusted", "verdict", "paired"):  # fmt: skip
        assert name in a
    assert a["entry_type"] == "comparison"
    assert (a["base_asr"], a["new_asr"]) == (pytest.approx(0.3), pytest.approx(0.1))
    assert a["difference"] == pytest.approx(-0.2)
    assert a["difference_lower"] < -0.2 < a["difference_upper"] < 0
    assert a["verdict"] == "improvement" and a["p_adjusted"] >= a["p_value"]
    assert _row(found, "B")["verdict"] == "no_change"


def test_the_same_ids_pair_and_new_ids_do_not(tmp_path: Path) -> None:
    rows = attempts_with_rates({"A": 0.3}, 50, seed=1)
    same = redjury.compare(_run(rows, tmp_path / "b"), _run(rows, tmp_path / "n"))
    assert _row(same, "A")["paired"] and _row(same, "A")["pairs"] == 50
    assert _row(same, "A")["pairing"] == "id"
    other = _run(attempts_with_rates({"A": 0.3}, 50, seed=1, ids="z"), tmp_path / "z")
    unpaired = redjury.compare(tmp_path / "b", other)
    assert not _row(unpaired, "A")["paired"] and _row(unpaired, "A")["pairs"] == 0
    # Identical outcomes on the same attacks: pairing knows the difference is no noise.
    width = _row(same, "A")["difference_upper"] - _row(same, "A")["difference_lower"]
    unpaired_width = (
        _row(unpaired, "A")["difference_upper"] - _row(unpaired, "A")["difference_lower"]
    )
    assert width < unpaired_width / 2


def test_prompt_and_goal_pair_when_ids_differ(tmp_path: Path) -> None:
    rows = attempts_with_rates({"A": 0.3}, 40, seed=1)
    renamed = [{**r, "id": "x" + r["id"]} for r in rows]
    found = redjury.compare(_run(rows, tmp_path / "b"), _run(renamed, tmp_path / "n"))
    assert _row(found, "A")["pairing"] == "prompt_goal" and _row(found, "A")["pairs"] == 40


def test_generations_of_one_attempt_count_as_one_cluster(tmp_path: Path) -> None:
    one = redjury.compare(
        _run(attempts_with_rates({"A": 0.3}, 50, seed=1), tmp_path / "b1"),
        _run(attempts_with_rates({"A": 0.1}, 50, seed=2, ids="z"), tmp_path / "n1"),
    )
    five = redjury.compare(
        _run(attempts_with_rates({"A": 0.3}, 50, seed=1, generations=5), tmp_path / "b5"),
        _run(attempts_with_rates({"A": 0.1}, 50, seed=2, ids="z", generations=5), tmp_path / "n5"),
    )
    r1, r5 = _row(one, "A"), _row(five, "A")
    assert r5["base_outputs"] == 250 and r5["base_attempts"] == 50
    # Five identical replies are one piece of evidence, not five.
    assert r5["difference_lower"] == pytest.approx(r1["difference_lower"])
    assert r5["p_value"] == pytest.approx(r1["p_value"])


def test_a_probe_in_one_run_only_is_not_compared(tmp_path: Path) -> None:
    base = _run(attempts_with_rates({"A": 0.3, "C": 0.2}, 30, seed=1), tmp_path / "b")
    new = _run(attempts_with_rates({"A": 0.3}, 30, seed=1), tmp_path / "n")
    c = _row(redjury.compare(base, new), "C")
    assert c["verdict"] == "not_compared" and c["p_value"] is None and c["new_asr"] is None


def test_runs_judged_differently_are_refused_naming_what_differs(tmp_path: Path) -> None:
    rows = attempts_with_rates({"A": 0.3}, 20, seed=1)
    base = _run(rows, tmp_path / "b")
    strict = {**PII_ONLY, "evaluator": {"type": "zero_tolerance"}}
    new = _run(rows, tmp_path / "n", strict)
    with pytest.raises(CompareError, match=r"evaluator: .*threshold.* vs .*zero_tolerance"):
        redjury.compare(base, new)
    marked = redjury.compare(base, new, allow_different_judges=True)
    assert all(r["different_judges"] for r in marked.rows)


def test_judges_differ_by_model_not_by_url() -> None:
    def header(name: str, url: str) -> dict:
        judge = {
            "name": name,
            "connection": {"type": "OPENAI", "base_url": url},
            "scoring": {"type": "harmbench"},
        }
        return {"config": {"evaluation": {"judges": [judge], "aggregation": "majority"}}}

    assert instrument_differences(header("m", "http://a"), header("m", "http://b")) == []
    assert instrument_differences(header("m", "http://a"), header("q", "http://a")) == [
        "evaluation.judges[0].name: 'm' vs 'q'"
    ]


def test_se_sp_correct_both_rates_and_widen_the_difference(tmp_path: Path) -> None:
    config = {
        **PII_ONLY,
        "reporting": {"seed": 1, "detector_metrics": {"pii_leak": {"se": 0.8, "sp": 0.9}}},
    }
    base = _run(attempts_with_rates({"A": 0.5}, 100, seed=1), tmp_path / "b", config)
    new = _run(attempts_with_rates({"A": 0.3}, 100, seed=2), tmp_path / "n", config)
    raw = redjury.compare(
        _run(attempts_with_rates({"A": 0.5}, 100, seed=1), tmp_path / "rb"),
        _run(attempts_with_rates({"A": 0.3}, 100, seed=2), tmp_path / "rn"),
    )
    row, plain = _row(redjury.compare(base, new), "A"), _row(raw, "A")
    assert row["correction"] == {"se": 0.8, "sp": 0.9, "source": "config"}
    assert row["base_asr"] == pytest.approx((0.5 + 0.9 - 1) / 0.7)
    assert row["difference"] == pytest.approx(-0.2 / 0.7)
    assert row["difference_lower"] == pytest.approx(plain["difference_lower"] / 0.7)
    assert row["p_value"] == pytest.approx(plain["p_value"])


@pytest.mark.parametrize(
    ("se", "said"),
    [
        (True, "Expected `float | null`, got `bool`"),
        (5, "Expected `float` <= 1.0"),
        ({"a": None}, "Expected `float | null`, got `object`"),
    ],
)
def test_an_edited_correction_is_named_by_line_and_field(
    tmp_path: Path, se: object, said: str
) -> None:
    config = {
        **PII_ONLY,
        "reporting": {"seed": 1, "detector_metrics": {"pii_leak": {"se": 0.8, "sp": 0.9}}},
    }
    base = _run(attempts_with_rates({"A": 0.5}, 40, seed=1), tmp_path / "b", config)
    _run(attempts_with_rates({"A": 0.3}, 40, seed=2), tmp_path / "n", config)
    report = tmp_path / "n" / "redjury.report.jsonl"
    lines = report.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '_correction":{"se":0.8' in line)
    row = json.loads(lines[at])
    key = "confidence_correction" if "confidence_correction" in row else "interval_correction"
    row[key] = {**row[key], "se": se}
    lines[at] = json.dumps(row)
    report.write_text("\n".join(lines) + "\n")
    with pytest.raises(CompareError) as raised:
        redjury.compare(base, tmp_path / "n")
    assert str(raised.value).startswith(f"{report}:{at + 1}: field {key}.se: {said}")


def test_a_torn_report_line_is_skipped_and_a_bad_one_named(tmp_path: Path) -> None:
    rows = attempts_with_rates({"A": 0.3}, 20, seed=1)
    _run(rows, tmp_path / "b")
    report = tmp_path / "b" / "redjury.report.jsonl"
    lines = report.read_text().splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(lines) + '{"entry_type": "attempt", "id"')
    assert _row(redjury.compare(report, torn), "A")["pairs"] == 20
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines[:3]) + '{"entry_type": "attempt", "detector_results": [1]}\n')
    with pytest.raises(CompareError, match=r"bad.jsonl:4: field detector_results"):
        redjury.compare(report, bad)
    with pytest.raises(CompareError, match="no redjury report"):
        redjury.compare(report, tmp_path / "nowhere")


def test_the_api_returns_jsonl_pandas_and_regressions(tmp_path: Path) -> None:
    base = _run(attempts_with_rates({"A": 0.05}, 200, seed=1), tmp_path / "b")
    new = _run(attempts_with_rates({"A": 0.25}, 200, seed=2), tmp_path / "n")
    found = redjury.compare(tmp_path / "b", str(tmp_path / "n"), margin=0.02, adjust="bh")
    assert [r["probe"] for r in found.regressions] == ["A", None]
    text = found.to_jsonl()
    assert [json.loads(line)["verdict"] for line in str(text).splitlines()] == ["regression"] * 2
    assert found.to_jsonl(tmp_path / "c.jsonl") == tmp_path / "c.jsonl"
    frame = found.to_pandas()
    assert list(frame["verdict"]) == ["regression", "regression"]
    assert redjury.compare(base, new, margin=0.25).regressions == []
    with pytest.raises(ValueError, match="holm or bh"):
        redjury.compare(base, new, adjust="sidak")


def test_results_judged_in_memory_compare_like_their_folders(tmp_path: Path) -> None:
    base_rows = attempts_with_rates({"A": 0.3}, 40, seed=1)
    new_rows = attempts_with_rates({"A": 0.1}, 40, seed=2)
    in_memory = redjury.compare(
        redjury.evaluate(base_rows, PII_ONLY), redjury.evaluate(new_rows, PII_ONLY)
    )
    written = redjury.compare(_run(base_rows, tmp_path / "b"), _run(new_rows, tmp_path / "n"))
    assert in_memory.base == "BASE" and in_memory.new == "NEW"
    assert in_memory.rows == written.rows
    rows_only = redjury.compare(redjury.evaluate(base_rows, PII_ONLY).rows, tmp_path / "n")
    assert rows_only.rows == written.rows


def test_attempts_with_different_numbers_of_scores_are_counted_each(tmp_path: Path) -> None:
    from redjury.comparison import Vocabulary, read_run

    init = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    attempts = [
        {"entry_type": "attempt", "id": "1", "probe": "A", "detector_results": {"d": [0.9]}},
        {
            "entry_type": "attempt",
            "id": "2",
            "probe": "A",
            "detector_results": {"d": [0.1, None, 0.5]},
        },
        {"entry_type": "attempt", "id": "3", "probe": "A", "detector_results": {"e": [1.0]}},
        {"entry_type": "attempt", "id": "4", "probe": "A"},
    ]
    run = read_run([init, *attempts], Vocabulary())
    fails, scored = run.detectors["d"]
    assert fails.tolist() == [1, 1, 0, 0] and scored.tolist() == [1, 2, 0, 0]
    assert run.detectors["e"][0].tolist() == [0, 0, 1, 0]


def test_a_pair_neither_run_could_score_is_a_row_not_compared() -> None:
    example = redjury.evaluate(REPO / "examples" / "attempts.jsonl", {"reporting": {"seed": 1}})
    found = redjury.compare(example, example)
    skipped = next(
        r for r in found.rows
        if (r["probe"], r["detector"]) == ("injection.indirect", "jailbreak_heuristic")
    )  # fmt: skip
    assert skipped["verdict"] == "not_compared" and skipped["base_outputs"] == 0
    assert skipped["note"] == "nothing scored in BASE or NEW" and skipped["p_adjusted"] is None
    evals = {(e["probe"], e["detector"]) for e in example.evals}
    probes = {(r["probe"], r["detector"]) for r in found.rows if r["scope"] == "probe"}
    assert probes == evals


def test_audit_counts_in_the_report_carry_their_uncertainty() -> None:
    from redjury.comparison import Vocabulary, read_run

    rows = [
        {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}},
        {"entry_type": "audit", "kind": "summary", "detector": "judge_panel", "key": "k1"},
        {"entry_type": "audit", "kind": "panel", "judge": "panel", "tp": 18, "fn": 2, "tn": 27, "fp": 3},
        {"entry_type": "attempt", "id": "1", "probe": "A", "detector_results": {"judge_panel": [1.0]}},
        {"entry_type": "eval", "probe": "A", "detector": "judge_panel",
         "confidence_correction": {"se": 0.9, "sp": 0.9, "source": "audit:k1"}},
    ]  # fmt: skip
    correction = read_run(rows, Vocabulary()).corrections["judge_panel"]
    assert correction is not None and correction.source == "audit:k1"
    assert (correction.se_counts, correction.sp_counts) == ((18, 2), (27, 3))
    rows[-1]["confidence_correction"] = {"se": 0.8, "sp": 0.95, "source": "config"}
    fixed = read_run(rows, Vocabulary()).corrections["judge_panel"]
    assert fixed is not None and fixed.se_counts is None and (fixed.se, fixed.sp) == (0.8, 0.95)


def test_different_corrections_widen_the_interval_and_decide_the_verdict(tmp_path: Path) -> None:
    audited = {
        **PII_ONLY,
        "reporting": {"seed": 1, "detector_metrics": {"pii_leak": {"se": 0.8, "sp": 0.9}}},
    }
    base = _run(attempts_with_rates({"A": 0.3}, 100, seed=1), tmp_path / "b", audited)
    new = _run(attempts_with_rates({"A": 0.2}, 100, seed=2), tmp_path / "n")
    row = _row(redjury.compare(base, new), "A")  # the same judges, Se/Sp known in one run
    assert row["correction_differs"] and row["correction"]["source"] == "config"
    assert row["difference"] == pytest.approx(0.2 - (0.3 + 0.9 - 1) / 0.7)
    assert row["difference_lower"] < row["difference"] < row["difference_upper"]
    assert row["verdict"] == "no_change"
