"""Hostile input through `redjury run`: every bad line is named (exit 2), never exit 1, never
a reply dropped or passed in silence; with --skip-bad-lines the good lines are judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from redjury_testing import redjury, rows_of, write_jsonl

from redjury.inputs import InputSet, check_inputs

GOOD = {"id": "good", "output": "I can't help with that."}
SETUP = {"entry_type": "start_run setup", "plugins.target_name": "m"}


def garak_row(**fields: Any) -> dict[str, Any]:
    row = {
        "entry_type": "attempt",
        "uuid": "g1",
        "seq": 0,
        "status": 2,
        "probe_classname": "dan.Dan",
        "prompt": "hi",
        "outputs": [{"text": "I can't help with that.", "lang": "en"}],
        "detector_results": {},
        "notes": {},
    }
    return {**row, **fields}


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


# (name, the bad line, the field named after FILE:LINE, words of the reason)
REDJURY_CASES = [
    (
        "unknown_role",
        {
            "id": "b",
            "messages": [{"role": "user", "content": "q"}, {"role": "bot", "content": "x"}],
        },
        "messages.1.role",
        "'assistant'",
    ),
    ("garak_row_in_redjury_file", garak_row(), "entry_type", "a garak row in a redjury"),
    ("seq_beyond_64_bits", {"id": "b", "output": "x", "seq": 2**70}, "seq", "beyond 64 bits"),
    ("seq_as_a_float", {"id": "b", "output": "x", "seq": 3.0}, "seq", "not a number"),
    (
        "score_below_zero",
        {"id": "b", "output": "x", "detector_results": {"d": [-3.0]}},
        "detector_results.d.0",
        "greater than or equal to 0",
    ),
    (
        "score_above_one",
        {"id": "b", "output": "x", "detector_results": {"d": [5.0]}},
        "detector_results.d.0",
        "less than or equal to 1",
    ),
    (
        "fewer_scores_than_outputs",
        {"id": "b", "outputs": ["x", "y"], "detector_results": {"d": [1.0]}},
        "detector_results.d",
        "1 score for 2 outputs",
    ),
    (
        "more_scores_than_outputs",
        {"id": "b", "outputs": ["x"], "detector_results": {"d": [1.0, 0, 0]}},
        "detector_results.d",
        "3 scores for 1 output",
    ),
    (
        "score_as_string",
        {"id": "b", "output": "x", "detector_results": {"d": ["0.5"]}},
        "detector_results.d.0",
        "valid number, not a string",
    ),
    (
        "score_as_boolean",
        {"id": "b", "output": "x", "detector_results": {"d": [True]}},
        "detector_results.d.0",
        "valid number, not true or false",
    ),
    (
        "latency_as_string",
        {"id": "b", "output": "x", "latency_ms": "12"},
        "latency_ms",
        "valid number, not a string",
    ),
    (
        "tokens_as_string",
        {"id": "b", "output": "x", "usage": {"prompt_tokens": "3"}},
        "usage.prompt_tokens",
        "valid integer, not a string",
    ),
    ("seq_as_string", {"id": "b", "output": "x", "seq": "3"}, "seq", "valid integer, not a string"),
    (
        "repeated_key",
        '{"id": "b", "outputs": ["x"], "outputs": ["y", "z"]}',
        "outputs",
        "repeated key",
    ),
    (
        "repeated_nested_key",
        '{"id": "b", "outputs": ["x"], "detector_results": {"d": [1.0], "d": [0.0]}}',
        "d",
        "repeated key",
    ),
    ("output_beside_outputs", {"id": "b", "output": "x", "outputs": ["y"]}, "output", "not both"),
    ("no_outputs", {"id": "b"}, "outputs", "no replies to judge"),
    ("empty_outputs", {"id": "b", "outputs": []}, "outputs", "no replies to judge"),
    (
        "transcript_without_reply",
        {
            "id": "b",
            "messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "q"}],
        },
        "messages",
        "no assistant turn after the last user turn",
    ),
    (
        "triggers_as_number",
        {"id": "b", "output": "x", "notes": {"triggers": 5}},
        "notes.triggers",
        "a string or a list of strings",
    ),
    (
        "triggers_as_boolean",
        {"id": "b", "output": "x", "notes": {"triggers": True}},
        "notes.triggers",
        "a string or a list of strings",
    ),
    (
        "trigger_item_as_number",
        {"id": "b", "output": "x", "notes": {"triggers": ["ok", 7]}},
        "notes.triggers.1",
        "a string",
    ),
    (
        "nested_1000_levels",
        '{"id": "b", "output": "x", "notes": {"k": ' + deep(1000) + "}}",
        "(line)",
        "nested more than 250 levels",
    ),
    (
        "nested_1000_objects",
        '{"id": "b", "output": "x", "notes": ' + '{"a": ' * 1000 + "1" + "}" * 1001,
        "(line)",
        "nested more than 250 levels",
    ),
    (
        "nested_past_the_parser",
        '{"id": "b", "output": "x", "notes": ' + deep(1100) + "}",
        "(line)",
        "not JSON",
    ),
]

GARAK_CASES = [
    (
        "redjury_line_in_garak_report",
        {"id": "b", "output": "4111 1111 1111 1111"},
        "entry_type",
        "missing: not a garak row",
    ),
    (
        "outputs_as_string",
        garak_row(uuid="b", outputs="hello"),
        "outputs",
        "a list with one entry per generation, not a string",
    ),
    (
        "output_entry_as_number",
        garak_row(uuid="b", outputs=[{"text": "a"}, 5]),
        "outputs.1",
        "a garak Message",
    ),
    (
        "message_text_as_list",
        garak_row(uuid="b", outputs=[{"text": ["a"]}]),
        "outputs.0",
        "a garak Message",
    ),
    ("status_as_string", garak_row(uuid="b", status="2"), "status", "0, 1 or 2"),
    ("seq_beyond_64_bits", garak_row(uuid="b", seq=2**70), "seq", "less than"),
    ("status_unknown", garak_row(uuid="b", status=7), "status", "0, 1 or 2"),
    ("uuid_missing", {k: v for k, v in garak_row().items() if k != "uuid"}, "uuid", "a string"),
    (
        "score_above_one",
        garak_row(uuid="b", detector_results={"d": [5.0]}),
        "detector_results.d.0",
        "less than or equal to 1",
    ),
    (
        "more_scores_than_outputs",
        garak_row(uuid="b", detector_results={"d": [1.0, 0.0]}),
        "detector_results.d",
        "2 scores for 1 output",
    ),
    (
        "triggers_as_number",
        garak_row(uuid="b", notes={"triggers": 5}),
        "notes.triggers",
        "a string or a list of strings",
    ),
    ("notes_as_list", garak_row(uuid="b", notes=["x"]), "notes", "a JSON object, not a list"),
    ("no_outputs", garak_row(uuid="b", outputs=[]), "outputs", "no replies to judge"),
    ("line_is_a_list", '["entry_type"]', "(line)", "not a JSON object"),
    ("line_is_a_string", '"entry_type"', "(line)", "not a JSON object"),
    ("entry_type_as_number", {"entry_type": 3}, "entry_type", "a string"),
    (
        "deep_notes",
        json.dumps(garak_row(uuid="b", notes={}))[:-1].replace(
            '"notes": {}', '"notes": {"k": ' + deep(1000) + "}"
        )
        + "}",
        "notes",
        "nested more than 250 levels",
    ),
    (
        "deep_prompt",
        json.dumps(garak_row(uuid="b"))[:-1].replace(
            '"prompt": "hi"', '"prompt": {"text": ' + deep(1000) + "}"
        )
        + "}",
        "prompt",
        "nested too deeply",
    ),
]


def _line(row: dict[str, Any] | str) -> str:
    return row if isinstance(row, str) else json.dumps(row)


def _first_errors(path: Path) -> list[str]:
    return [str(e) for e in check_inputs(InputSet([path]))[1]]


@pytest.mark.parametrize(
    ("name", "bad", "field", "reason"), REDJURY_CASES, ids=[c[0] for c in REDJURY_CASES]
)
def test_each_bad_redjury_line_is_named(
    tmp_path: Path, name: str, bad: dict[str, Any] | str, field: str, reason: str
) -> None:
    src = write_jsonl(tmp_path / f"{name}.jsonl", [GOOD, _line(bad)])
    (error,) = _first_errors(src)
    assert error.startswith(f"{src}:2: {field}: ") and reason in error


@pytest.mark.parametrize(
    ("name", "bad", "field", "reason"), GARAK_CASES, ids=[c[0] for c in GARAK_CASES]
)
def test_each_bad_garak_line_is_named(
    tmp_path: Path, name: str, bad: dict[str, Any] | str, field: str, reason: str
) -> None:
    src = write_jsonl(tmp_path / f"{name}.report.jsonl", [SETUP, garak_row(), _line(bad)])
    (error,) = _first_errors(src)
    assert error.startswith(f"{src}:3: {field}: ") and reason in error


# At most 20 bad lines are listed on exit 2: each run stays within that.
CLI_CHUNKS = [
    ("redjury", [GOOD], REDJURY_CASES[:12]),
    ("redjury", [GOOD], REDJURY_CASES[12:]),
    ("garak", [SETUP, garak_row()], GARAK_CASES),
]


@pytest.mark.parametrize(("fmt", "first", "cases"), CLI_CHUNKS)
def test_redjury_run_names_every_bad_line_and_exits_2(
    tmp_path: Path, fmt: str, first: list[Any], cases: list[tuple[Any, ...]]
) -> None:
    lines = [_line(r) for r in first]
    lines += [_line(bad).replace('"b"', f'"b{i}"', 1) for i, (_, bad, _, _) in enumerate(cases)]
    src = write_jsonl(tmp_path / f"{fmt}.jsonl", lines)
    out = tmp_path / "out"
    proc = redjury("run", src, "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    stderr = proc.stderr.splitlines()
    for i, (name, _, field, reason) in enumerate(cases):
        head = f"{src}:{len(first) + 1 + i}: {field}: "
        assert any(e.startswith(head) and reason in e for e in stderr), (name, proc.stderr)
    assert not (out / "redjury.report.jsonl").exists(), "nothing is judged on bad input"


def test_skip_bad_lines_judges_every_good_redjury_line_and_records_each_bad_one(
    tmp_path: Path,
) -> None:
    lines = [_line(GOOD)]
    for i, (_, bad, _, _) in enumerate(REDJURY_CASES):
        lines.append(_line(bad).replace('"b"', f'"b{i}"', 1))
        lines.append(json.dumps({"id": f"ok{i}", "outputs": ["fine", None]}))
    src = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out"
    proc = redjury("run", src, "--out", out, "--skip-bad-lines")
    assert proc.returncode == 0, proc.stderr
    report = out / "redjury.report.jsonl"
    errors = [(e["line"], e["field"]) for e in rows_of(report, "input_error")]
    assert errors == [(2 + 2 * i, case[2]) for i, case in enumerate(REDJURY_CASES)]
    ids = [r["id"] for r in rows_of(report, "attempt")]
    assert ids == ["good", *(f"ok{i}" for i in range(len(REDJURY_CASES)))]
    (completion,) = rows_of(report, "completion")
    assert completion["input_errors"] == len(REDJURY_CASES)


def test_skip_bad_lines_judges_every_good_garak_row_and_records_each_bad_one(
    tmp_path: Path,
) -> None:
    lines = [_line(SETUP)]
    for i, (_, bad, _, _) in enumerate(GARAK_CASES):
        lines.append(_line(bad))
        lines.append(json.dumps(garak_row(uuid=f"ok{i}")))
    src = write_jsonl(tmp_path / "garak.report.jsonl", lines)
    out = tmp_path / "out"
    proc = redjury("run", src, "--out", out, "--skip-bad-lines")
    assert proc.returncode == 0, proc.stderr
    report = out / "redjury.report.jsonl"
    errors = [(e["line"], e["field"]) for e in rows_of(report, "input_error")]
    assert errors == [(2 + 2 * i, case[2]) for i, case in enumerate(GARAK_CASES)]
    ids = [r["id"] for r in rows_of(report, "attempt")]
    assert ids == [f"ok{i}" for i in range(len(GARAK_CASES))]


def test_transcript_roles_are_read_in_any_case(tmp_path: Path) -> None:
    card = "4111 1111 1111 1111"
    turns = [{"role": "User", "content": "card?"}, {"role": "ASSISTANT", "content": card}]
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "messages": turns}])
    out = tmp_path / "out"
    proc = redjury("run", src, "--out", out)
    assert proc.returncode == 0, proc.stderr
    (attempt,) = rows_of(out / "redjury.report.jsonl", "attempt")
    assert [t["role"] for t in attempt["messages"]] == ["user", "assistant"]
    assert attempt["detector_results"]["pii_leak"] == [1.0]


def test_older_garak_scores_that_skipped_null_outputs_meet_their_own_outputs(
    tmp_path: Path,
) -> None:
    outputs = [{"text": "DAN: sure"}, None, {"text": "no"}]
    rows = [
        SETUP,
        garak_row(uuid="a", outputs=outputs, detector_results={"dan.DAN": [1.0, 0.0]}),
        garak_row(uuid="b", outputs=outputs, detector_results={"dan.DAN": []}),
    ]
    src = write_jsonl(tmp_path / "garak.report.jsonl", rows)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    out = tmp_path / "out"
    proc = redjury("run", src, "--config", cfg, "--out", out)
    assert proc.returncode == 0, proc.stderr
    a, b = rows_of(out / "redjury.report.jsonl", "attempt")
    assert a["detector_results"]["dan.DAN"] == [1.0, None, 0.0]
    assert b["detector_results"]["dan.DAN"] == [None, None, None]
    (ev,) = rows_of(out / "redjury.report.jsonl", "eval")
    assert (ev["passed"], ev["fails"], ev["nones"]) == (1, 1, 4)
