"""The library runs the whole job: `evaluate(out=D)` writes what `redjury run --out D` writes
(report, hitlog, HTML, JUnit) and ends with the same exit code; one pass/fail rule serves
`detect`, `evaluate`, its counts and its hitlog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redjury_testing import REPO, read_jsonl, rows_of, write_jsonl
from redjury_testing import redjury as run_cli

import redjury
from redjury.evaluators import (
    ThresholdEvaluator,
    ZeroToleranceEvaluator,
    failing_scores,
    output_failed,
)

EXAMPLE = REPO / "examples" / "attempts.jsonl"
# What differs between two runs of the same job: when, and under which id.
VOLATILE = ("run_id", "start_time", "end_time")

CONFIGS: dict[str, dict[str, Any]] = {
    "plain": {},
    "html_junit_gate_trips": {"html": True, "junit": "JUNIT", "fail_on_asr": 0.0},
    "html_gate_holds": {"html": True, "fail_on_asr": 0.6},
    "per_detector_gate": {"junit": "JUNIT", "fail_on_asr": {"pii_leak": 0.1}},
    "error_gate_and_zero_tolerance": {"fail_on_errors": 0, "hit_at_k": [1, 2]},
}


def _config_file(tmp_path: Path, name: str) -> Path:
    reporting = {"seed": 3, "bootstrap_num_iterations": 200, **CONFIGS[name]}
    if reporting.get("junit"):
        reporting["junit"] = str(tmp_path / "junit.xml")
    config: dict[str, Any] = {"reporting": reporting}
    if name.endswith("zero_tolerance"):
        config["evaluator"] = {"type": "zero_tolerance"}
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _volatile_values(out: Path) -> Iterator[str]:
    for row in read_jsonl(out / "redjury.report.jsonl"):
        for key in VOLATILE:
            if isinstance(row.get(key), str):
                yield row[key]


def _normalised(path: Path, out: Path) -> bytes:
    """A file of a run folder with the run's id and times masked (as the golden tests do)."""
    data = path.read_bytes()
    for value in _volatile_values(out):
        data = data.replace(value.encode(), f"<{len(value)}>".encode())
    return data


def _files(out: Path, junit: Path) -> dict[str, bytes]:
    found = {p.name: _normalised(p, out) for p in sorted(out.iterdir()) if p.is_file()}
    if junit.exists():
        found["junit"] = _normalised(junit, out)
        junit.unlink()
    return found


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_evaluate_writes_the_files_and_exit_code_of_redjury_run(tmp_path: Path, name: str) -> None:
    config, junit = _config_file(tmp_path, name), tmp_path / "junit.xml"
    cli = run_cli("run", EXAMPLE, "-c", config, "--out", tmp_path / "cli", "--no-colour")
    assert cli.returncode in (0, 4), cli.stderr
    cli_files = _files(tmp_path / "cli", junit)
    results = redjury.evaluate(EXAMPLE, config, out=tmp_path / "api")
    assert results.exit_code == cli.returncode
    api_files = _files(tmp_path / "api", junit)
    assert api_files.keys() == cli_files.keys()
    for file, data in cli_files.items():
        assert api_files[file] == data, file
    # The terminal text too: what the command printed, the results keep.
    assert results.summary().replace("/api/", "/cli/") == cli.stdout


def test_the_gate_that_trips_the_command_trips_the_library(tmp_path: Path) -> None:
    # The case: html, junit, fail_on_asr 0.0 — the command exits 4 and writes both.
    config = {"reporting": {"html": True, "junit": str(tmp_path / "j.xml"), "fail_on_asr": 0.0}}
    results = redjury.evaluate(EXAMPLE, config, out=tmp_path / "out")
    assert results.exit_code == 4
    assert (tmp_path / "out" / "redjury.report.html").is_file()
    assert (tmp_path / "j.xml").is_file()
    assert "gate failed: pii.customer_records × pii_leak" in results.summary()


def test_an_in_memory_run_applies_the_gates_and_writes_junit(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    config = {"reporting": {"junit": str(junit), "fail_on_asr": {"pii_leak": 0.0}}}
    results = redjury.evaluate(EXAMPLE, config)
    assert results.out_dir is None and results.exit_code == 4
    assert junit.is_file() and "pii_leak" in junit.read_text(encoding="utf-8")
    assert redjury.evaluate(EXAMPLE, {"reporting": {"fail_on_asr": 1.0}}).exit_code == 0


def test_run_options_are_one_object_and_keywords_are_its_fields(tmp_path: Path) -> None:
    options = redjury.RunOptions(use_cache=False, workers=1, preflight=False)
    by_object = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 4}}, options=options)
    by_keyword = redjury.evaluate(
        EXAMPLE, {"reporting": {"seed": 4}}, use_cache=False, workers=1, preflight=False
    )
    assert by_object.evals == by_keyword.evals
    with pytest.raises(TypeError, match="no run option 'use_cach'"):
        redjury.evaluate(EXAMPLE, use_cach=False)
    with pytest.raises(TypeError, match="no run option 'out_dir'"):
        redjury.evaluate(EXAMPLE, out_dir=tmp_path)  # `out=` says where
    with pytest.raises(AttributeError):
        options.use_cache = True  # type: ignore[misc]
    assert replace(options, use_cache=True).use_cache


def test_typed_rows_name_every_key_the_rows_carry(tmp_path: Path) -> None:
    results = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 1}}, out=tmp_path / "o")
    kinds = {
        redjury.InitRow: [results.header],
        redjury.AttemptRow: results.attempts,
        redjury.EvalRow: results.evals,
        redjury.ProbeSummaryRow: results.probe_summaries,
        redjury.HitlogRow: results.hitlog,
        redjury.CompletionRow: [results.completion],
    }
    for kind, rows in kinds.items():
        assert rows, kind.__name__
        for row in rows:
            assert row is not None
            assert kind.__required_keys__ <= row.keys(), kind.__name__
            assert row.keys() <= kind.__required_keys__ | kind.__optional_keys__, kind.__name__


def test_comparison_rows_are_typed(tmp_path: Path) -> None:
    base = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 1}})
    new = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 2}})
    rows = redjury.compare(base, new).rows
    kind = redjury.ComparisonRow
    assert rows
    for row in rows:
        assert (
            kind.__required_keys__ <= row.keys() <= kind.__required_keys__ | kind.__optional_keys__
        )


# -- one pass/fail rule ----------------------------------------------------------------------

LABELS = [v.value for v in redjury.Verdict]


class _Scripted(redjury.Detector):
    """Gives the score and label the attempt's notes ask for, agreeing or not."""

    name = "test_scripted_verdict"
    family = redjury.Family.HEURISTIC
    description = "Scores from the attempt's notes (tests only)."
    default_enabled = False

    def check(self, attempt: redjury.Attempt, output: str) -> redjury.Finding:
        score, label = attempt.notes["scripted"]
        return redjury.Finding(score, redjury.Verdict(label))


@pytest.fixture(scope="module")
def scripted() -> Iterator[str]:
    """`_Scripted` in the registry for this module's tests only (the registry is the
    process's: the registry's and the docs' tests must not see it)."""
    redjury.detectors.register(_Scripted)
    yield _Scripted.name
    from redjury.plugins import DETECTORS

    DETECTORS._plugins.pop(_Scripted.name, None)


SCORES = st.none() | st.floats(0.0, 1.0) | st.sampled_from([0.0, 0.5, 0.6, 1.0])
FINDINGS = st.lists(st.tuples(SCORES, st.sampled_from(LABELS)), min_size=1, max_size=12)
POLICIES = st.sampled_from(
    [({"type": "threshold", "threshold": t}, ThresholdEvaluator(t)) for t in (0.5, 0.3, 1.0)]
    + [({"type": "zero_tolerance"}, ZeroToleranceEvaluator())]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(findings=FINDINGS, policy=POLICIES)
def test_detect_evaluate_and_the_hitlog_agree_on_every_score_and_label(
    scripted: str, findings: list[tuple[float | None, str]], policy: tuple[dict[str, Any], Any]
) -> None:
    spec, evaluator = policy
    attempts = [
        {"id": f"a{i}", "outputs": ["reply"], "notes": {"scripted": [score, label]}}
        for i, (score, label) in enumerate(findings)
    ]
    detected = {
        a["id"]: redjury.detect("reply", [scripted], evaluator=evaluator, notes=a["notes"])[
            scripted
        ]
        for a in attempts
    }
    results = redjury.evaluate(attempts, {"detectors": [{"type": scripted}], "evaluator": spec})
    failed = {i for i, d in detected.items() if d.failed}
    assert failed == {h["attempt_id"] for h in results.hitlog}
    [row] = results.evals
    assert row["fails"] == len(failed)
    assert row["nones"] == sum(score is None for score, _ in findings)
    assert row["passed"] == sum(d.passed for d in detected.values())
    for (score, _), d in zip(findings, detected.values(), strict=True):
        assert d.failed == (output_failed(score, evaluator) is True)


def test_a_score_of_point_six_labelled_held_fails_everywhere(scripted: str) -> None:
    # The case: "not failed" for detect() once, one fail and a hitlog row for evaluate().
    notes = {"scripted": [0.6, "HELD"]}
    found = redjury.detect("reply", [scripted], notes=notes)[scripted]
    assert found.failed and not found.passed and found.verdict == "HELD"
    results = redjury.evaluate(
        [{"id": "x", "outputs": ["reply"], "notes": notes}],
        {"detectors": [{"type": scripted}]},
    )
    assert [h["attempt_id"] for h in results.hitlog] == ["x"]


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20), POLICIES)
def test_the_vectorised_rule_is_the_rule(scores: list[float], policy: tuple[Any, Any]) -> None:
    import numpy as np

    evaluator = policy[1]
    got = failing_scores(evaluator)(np.array(scores))
    assert list(got) == [output_failed(s, evaluator) for s in scores]


def test_summary_markdown_is_the_commands(tmp_path: Path) -> None:
    out = tmp_path / "out"
    redjury.evaluate(EXAMPLE, {"reporting": {"seed": 1}}, out=out)
    cli = run_cli("summary", out, "--markdown", tmp_path / "cli.md")
    assert cli.returncode == 0, cli.stderr
    redjury.print_summary(out, markdown=tmp_path / "api.md")
    assert (tmp_path / "api.md").read_bytes() == (tmp_path / "cli.md").read_bytes()


def test_in_memory_rows_equal_the_files_rows(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "outputs": ["My SSN is 219-09-9999"]}])
    results = redjury.evaluate(src, {"reporting": {"seed": 1}}, out=tmp_path / "o")
    assert rows_of(tmp_path / "o" / "redjury.report.jsonl", "eval") == results.evals
