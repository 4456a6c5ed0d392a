"""`redjury run` over several tools' files at once: the tools' verdicts beside redjury's."""

from __future__ import annotations

import json
from pathlib import Path

from formats_testing import DATA
from redjury_testing import read_jsonl, redjury, rows_of

FILES = [
    "promptfoo_v3_redteam.json",
    "promptfoo_v1.json",
    "inspect_log.json",
    "pyrit_memory.json",
    "pyrit_scenario.json",
    "azure_scan.json",
]


def test_mixed_files_are_judged_in_one_run_with_the_tools_own_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = redjury("run", *(DATA / f for f in FILES), "--out", out)
    assert proc.returncode == 0, proc.stderr
    report = out / "redjury.report.jsonl"
    attempts = rows_of(report, "attempt")
    assert len(attempts) == 6 + 3 + 5 + 4 + 3 + 3
    evals = {(r["probe"], r["detector"]): r for r in rows_of(report, "eval")}
    assert (
        evals[("promptfoo:harmful:hate/crescendo", "promptfoo:redteam:harmful:hate")]["fails"] == 1
    )
    assert evals[("inspect:redteam_fixture", "inspect:refusal")]["nones"] == 2  # N, errored
    assert evals[("azure:base64/easy", "azure:violence")]["fails"] == 1
    # redjury's own detectors ran on the same attempts, beside the tools' verdicts.
    assert any(d.split(":")[0] not in {"promptfoo", "inspect", "pyrit", "azure"} for _, d in evals)
    hits = read_jsonl(out / "redjury.hitlog.jsonl")
    tool_hits = {(h["attempt_id"], h["detector"]) for h in hits if ":" in h["detector"]}
    assert ("r-hate-crescendo", "promptfoo:redteam:harmful:hate") in tool_hits
    assert ("conv-B", "pyrit:SelfAskTrueFalseScorer") in tool_hits
    assert ("sc-1", "pyrit:SelfAskRefusalScorer") in tool_hits
    assert ("r-hate-basic", "promptfoo:redteam:harmful:hate") not in tool_hits


def test_a_bad_record_in_a_tool_file_exits_2_naming_file_place_and_field(tmp_path: Path) -> None:
    log = json.loads((DATA / "inspect_log.json").read_text())
    log["samples"][2]["id"] = None
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(log))
    out = tmp_path / "out"
    proc = redjury("run", src, DATA / "azure_scan.json", "--out", out)
    assert proc.returncode == 2
    assert f"{src}:sample None epoch 1: id: missing or not a string or number" in proc.stderr
    assert not (out / "redjury.report.jsonl").exists()


def test_skip_bad_lines_records_the_bad_sample_and_judges_the_rest(tmp_path: Path) -> None:
    log = json.loads((DATA / "inspect_log.json").read_text())
    log["samples"][2] = ["not", "a", "sample"]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(log))
    out = tmp_path / "out"
    proc = redjury("run", src, "--out", out, "--skip-bad-lines")
    assert proc.returncode == 0, proc.stderr
    report = out / "redjury.report.jsonl"
    errors = rows_of(report, "input_error")
    assert [(e["file"], e["line"], e["field"]) for e in errors] == [(str(src), 3, "(sample)")]
    assert len(rows_of(report, "attempt")) == 4
