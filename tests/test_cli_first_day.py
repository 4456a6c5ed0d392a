"""The habits a new user brings: `--detectors`, `--dry-run`, `detectors list` marking the
defaults, `summary | head -1`, no empty folder after a refused run, config paths read next
to the config file, and configured header values masked whatever their length."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from redjury_testing import REPO, read_jsonl, redjury, rows_of

from redjury.api import evaluate, write_html
from test_garak_reports import (
    FLAVOURS,
    garak_hitlog,
    in_garak_order,
    init_row,
    probe_attempts,
    report_file,
    setup_row,
)

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def garak_report(tmp_path: Path) -> tuple[Path, list[dict]]:
    flavour = FLAVOURS[-1]
    rows = [setup_row(flavour), init_row(flavour), *probe_attempts(flavour)]
    return report_file(tmp_path, rows), rows


def eval_detectors(out: Path) -> set[str]:
    return {r["detector"] for r in rows_of(out / "redjury.report.jsonl", "eval")}


def test_detectors_none_rejudges_a_garak_report_with_its_own_detectors_only(tmp_path):
    src, rows = garak_report(tmp_path)
    proc = redjury("run", src, "--detectors", "none", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    hitlog = read_jsonl(tmp_path / "out" / "redjury.hitlog.jsonl")
    assert in_garak_order(hitlog) == in_garak_order(garak_hitlog(rows))
    garaks = {d for r in rows if r.get("entry_type") == "attempt" for d in r["detector_results"]}
    assert eval_detectors(tmp_path / "out") == garaks


def test_detectors_list_adds_only_the_named_detectors(tmp_path):
    src, rows = garak_report(tmp_path)
    proc = redjury("run", src, "--detectors", "pii_leak", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    garaks = {d for r in rows if r.get("entry_type") == "attempt" for d in r["detector_results"]}
    assert eval_detectors(tmp_path / "out") == garaks | {"pii_leak"}


def test_detectors_list_keeps_the_config_settings_of_a_named_detector(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"detectors": [{"type": "latency", "budget_ms": 1}]}))
    proc = redjury("run", EXAMPLE, "-c", config, "--detectors", "latency,pii_leak", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "detectors: latency, pii_leak" in proc.stdout.splitlines()


def test_detectors_none_mixed_with_names_is_a_usage_error(tmp_path):
    proc = redjury("run", EXAMPLE, "--detectors", "none,pii_leak", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "--detectors: give 'none' or a comma-separated list" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_detectors_list_marks_the_default_detectors():
    proc = redjury("detectors", "list")
    lines = {line.split()[0]: line.split() for line in proc.stdout.splitlines() if line.strip()}
    assert lines["pii_leak"][1] == "yes"
    assert lines["guardrail"][1] != "yes" and lines["latency"][1] != "yes"


def test_dry_run_says_what_would_be_judged_and_writes_nothing(tmp_path):
    judges = [{"name": n, "connection": {"base_url": "http://127.0.0.1:9/v1"}} for n in "ab"]
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"evaluation": {"judges": judges}}))
    env = {"REDJURY_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    proc = redjury("run", EXAMPLE, "-c", config, "--dry-run", "--out", out, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "dry run: nothing judged, nothing written"
    assert "inputs: 14 attempts, 20 outputs to judge" in lines
    assert "judge: a at http://127.0.0.1:9/v1" in lines
    assert any(line.startswith("judge calls: at most 40 (20 outputs × 2 judges") for line in lines)
    assert not out.exists() and not (tmp_path / "cache").exists()


def test_dry_run_refuses_bad_input_like_the_run(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "outputs": ["x"]}\nnot json\n')
    proc = redjury("run", bad, "--dry-run")
    assert proc.returncode == 2
    assert f"{bad}:2:" in proc.stderr


def test_refused_run_leaves_no_empty_run_folder(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "outputs": ["x"]}\nnot json\n')
    proc = redjury("run", bad, "--out", tmp_path / "new")
    assert proc.returncode == 2 and not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    assert redjury("run", bad, "--out", tmp_path / "mine").returncode == 2
    assert (tmp_path / "mine").is_dir()  # a folder the user made is theirs


def test_summary_into_head_exits_0_and_writes_the_markdown(tmp_path):
    out = tmp_path / "out"
    assert redjury("run", EXAMPLE, "--out", out).returncode == 0
    markdown = tmp_path / "s.md"
    command = (
        f"{shlex.quote(sys.executable)} -m redjury.cli summary {out} --markdown {markdown} | head -1; "
        'exit "${PIPESTATUS[0]}"'
    )
    proc = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and len(proc.stdout.splitlines()) == 1
    assert markdown.read_text().startswith("## redjury results\n\n14 attempts")


def test_relative_paths_in_a_config_are_read_next_to_it(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "cal.json").write_text(json.dumps({"p/d": {"mu": 0.5, "sigma": 0.1}}))
    config = folder / "c.yaml"
    config.write_text("reporting:\n  calibration: cal.json\n  junit: junit.xml\n")
    proc = redjury("run", EXAMPLE, "-c", config, "--out", tmp_path / "out")  # cwd: the repo
    assert proc.returncode == 0, proc.stderr
    assert (folder / "junit.xml").is_file()
    header = rows_of(tmp_path / "out" / "redjury.report.jsonl", "init")[0]
    assert header["config"]["reporting"]["calibration"] == str(folder / "cal.json")


def test_header_values_are_masked_whatever_their_length(tmp_path):
    headers = {"x-team": "red", "x-tier": "gold", "x-long": "a-long-header-value"}
    judge = {"name": "a", "connection": {"base_url": "http://127.0.0.1:9/v1", "headers": headers}}
    config = {"evaluation": {"judges": [judge], "max_retries": 0}}
    out = tmp_path / "out"
    evaluate([EXAMPLE], config, out=out, preflight=False, use_cache=False)
    header = rows_of(out / "redjury.report.jsonl", "init")[0]
    shown = header["config"]["evaluation"]["judges"][0]["connection"]["headers"]
    assert shown == {"x-team": "****", "x-tier": "****", "x-long": "****"}
    html = write_html(out).read_text()
    assert "x-team" in html and "gold" not in html and "a-long-header-value" not in html
