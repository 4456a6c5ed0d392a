"""The documented row types (`redjury.row_types`, the TypedDicts the Python API returns) hold
for every row real runs write: detectors only, a garak report read in, a judge panel with
abstaining and graded judges, skipped bad lines, the hitlog, a comparison. `redjury report`
and `summary` name a row that lost its type against the same types, so a type that no
longer says what redjury writes would blame a good row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fault_server import Reply, by_model
from redjury_testing import REPO, redjury, write_jsonl

import redjury as rj
from redjury import row_types
from redjury.errors import CompareError
from redjury.report.row_check import ROW_TYPES, first_bad_row

SR_COMPLIES = "Refused: 0\nConvincing: 5\nSpecific: 3"
SR_REFUSES = "Refused: 1\nConvincing: 1\nSpecific: 1"


def _harmbench(req: Any) -> Reply:
    text = req.messages[-1]["content"]
    if "unsure" in text:
        return Reply("I cannot tell.")  # unreadable: the judge abstains
    return Reply("yes" if "BAD" in text else "no")


def _strongreject(req: Any) -> Reply:
    return Reply(SR_COMPLIES if "BAD" in req.messages[-1]["content"] else SR_REFUSES)


def _attempts(n: int) -> list[dict[str, Any] | str]:
    rows: list[dict[str, Any] | str] = []
    for i in range(n):
        reply = ["BAD reply", "fine reply", "unsure reply"][i % 3]
        rows.append(
            {
                "id": f"a{i}",
                "probe": f"p{i % 2}",
                "intent": ["fraud", "hate"][i % 2],
                "goal": f"goal {i}",
                "outputs": [f"{reply} {i}", None if i % 4 == 0 else f"other {i}"],
            }
        )
    rows.insert(3, "{not json")
    return rows


def _panel_config(url: str) -> dict[str, Any]:
    def judge(name: str, scoring: str) -> dict[str, Any]:
        return {
            "name": name,
            "connection": {"base_url": url},
            "generation": {"seed": 1},
            "scoring": {"type": scoring},
        }

    return {
        "detectors": [{"type": "pii_leak"}, {"type": "jailbreak_heuristic"}],
        "reporting": {"seed": 3, "hit_at_k": [1, 2], "bootstrap_min_sample_size": 5},
        "evaluation": {"judges": [judge("hb", "harmbench"), judge("sr", "strongreject")]},
    }


def _check(path: Path, types: dict[str, Any]) -> set[str]:
    """Every row of a documented kind converts to its type (strictly: no text for a number,
    every required key there); the kinds seen."""
    seen = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        kind = types.get(row.get("entry_type", "hit"))
        if kind is None:
            continue
        seen.add(row.get("entry_type", "hit"))
        try:
            msgspec.convert(row, kind, strict=True)
        except msgspec.ValidationError as exc:
            pytest.fail(f"{path.name}:{number}: {exc}")
    return seen


@pytest.fixture
def panel_run(server: Any, tmp_path: Path) -> Path:
    server.set_script(by_model({"hb": _harmbench, "sr": _strongreject}))
    src = write_jsonl(tmp_path / "in.jsonl", _attempts(24))
    out = tmp_path / "panel"
    rj.evaluate([src], _panel_config(server.openai_url), out=out, skip_bad_lines=True)
    return out


def test_a_judged_run_writes_rows_of_the_documented_types(panel_run: Path) -> None:
    kinds = _check(panel_run / "redjury.report.jsonl", ROW_TYPES)
    assert kinds == set(ROW_TYPES), "each documented kind was written and checked"
    assert _check(panel_run / "redjury.hitlog.jsonl", {"hit": row_types.HitlogRow}) == {"hit"}
    evals = [
        json.loads(line)
        for line in (panel_run / "redjury.report.jsonl").read_text(encoding="utf-8").splitlines()
        if '"entry_type":"eval"' in line
    ]
    fields = set().union(*evals)
    for key in ("graded_scores", "abstention_rate", "hit_at_k", "intents", "confidence"):
        assert key in fields, f"no eval row carried {key}: the check did not see its type"
    assert first_bad_row(panel_run / "redjury.report.jsonl") is None


def test_detector_runs_and_a_garak_report_write_rows_of_the_documented_types(
    tmp_path: Path,
) -> None:
    for name in ("attempts.jsonl", "garak.report.jsonl"):
        out = tmp_path / name
        rj.evaluate([REPO / "examples" / name], None, out=out)
        assert _check(out / "redjury.report.jsonl", ROW_TYPES) >= {"init", "attempt", "eval"}
        assert first_bad_row(out / "redjury.report.jsonl") is None


def test_comparison_rows_are_of_the_documented_type(panel_run: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    shutil.copytree(panel_run, other)
    rows = rj.compare(panel_run, other).rows
    assert rows
    for row in rows:
        msgspec.convert(row, row_types.ComparisonRow, strict=True)


EDITS: list[tuple[str, str | tuple[str | int, ...], Any, str]] = [
    ("eval", "total_evaluated", {"a": None}, "field total_evaluated: Expected `int`, got `object`"),
    ("eval", "probe", ["a", 1], "field probe: Expected `str`, got `array`"),
    ("attempt", "detector_results", [[1.0]], "field detector_results: Expected `object`"),
    ("attempt", "probe", {"p": 1}, "field probe: Expected `str`, got `object`"),
    (
        "attempt",
        ("details", "judge_panel", 0, "votes", "harmbench:hb"),
        {"text": 5},
        "field details.judge_panel[0].votes.harmbench:hb: Expected `float | null`, got `object`",
    ),
    (
        "attempt",
        ("details", "judge_panel", 0, "judges", 0, "prompt_tokens"),
        [1],
        "field details.judge_panel[0].judges[0].prompt_tokens: Expected `int | null`, got `array`",
    ),
    ("init", ("config", "evaluation"), [1], "field config.evaluation: Expected `object | null`"),
    ("init", ("config", "reporting"), "x", "field config.reporting: Expected `object | null`"),
]


@pytest.mark.parametrize(("kind", "key", "value", "said"), EDITS)
def test_a_report_edited_out_of_its_types_is_named_by_summary_and_report(
    panel_run: Path, tmp_path: Path, kind: str, key: Any, value: Any, said: str
) -> None:
    again = tmp_path / "again"
    shutil.copytree(panel_run, again)
    report = panel_run / "redjury.report.jsonl"
    lines = report.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if f'"entry_type":"{kind}"' in line)
    row = json.loads(lines[number])
    *into, last = (key,) if isinstance(key, str) else key
    at = row
    for step in into:
        at = at[step]
    at[last] = value
    lines[number] = json.dumps(row)
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    named = []
    for command in (("summary", panel_run), ("report", panel_run), ("compare", again, panel_run)):
        extra = ("-o", tmp_path / "c.jsonl") if command[0] == "compare" else ()
        proc = redjury(*command, *extra)
        # A command that does not read the field is right to go on; one that does names it
        # (compare in its own words, or refusing runs judged differently).
        assert proc.returncode in (0, 2), (command, proc.stderr)
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
        if proc.returncode == 2 and command[0] != "compare":
            assert f"{report}:{number + 1}: {said}" in proc.stderr, (command, proc.stderr)
            named.append(command[0])
    assert named, "no reader failed on the edit: it tests nothing"


def test_compare_names_a_header_edited_out_of_its_types(panel_run: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(panel_run, again)
    report = again / "redjury.report.jsonl"
    lines = report.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["config"]["evaluation"] = ["judges"]
    lines[0] = json.dumps(header)
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CompareError) as raised:
        rj.compare(panel_run, again)
    assert str(raised.value).startswith(f"{report}:1: field config.evaluation: Expected `object")
