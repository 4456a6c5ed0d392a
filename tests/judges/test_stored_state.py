"""No hidden state: a run names the judge cache, stored audits and calibration it read (terminal
and report header) and how many answers the cache served; a small audit is never applied
unasked; `redjury cache show|clear` and `redjury audits list|remove`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fault_server import Reply, always

from redjury.audit.runner import AuditResult, audit_key, store_audit
from redjury.detectors.registry import detector_classes

REPO = Path(__file__).resolve().parents[2]


def redjury(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "REDJURY_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "redjury.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def judged_run(tmp_path: Path, base_url: str, out: str, *extra: str) -> Any:
    attempts = tmp_path / "a.jsonl"
    rows = [{"id": f"a{i}", "goal": "g", "outputs": [f"o{i}"]} for i in range(3)]
    attempts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge = {"name": "a", "connection": {"base_url": base_url}, "generation": {"seed": 1}}
    config = {
        "reporting": {"seed": 1},
        "detectors": [{"type": "pii_leak"}],
        "evaluation": {
            "judges": [judge],
            "audit": {"dataset": {"cache_dir": str(tmp_path / "calibration")}},
        },
    }
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    return redjury(
        tmp_path, "run", attempts, "-c", tmp_path / "c.yaml", "-o", tmp_path / out, *extra
    )


def rows(tmp_path: Path, out: str, kind: str) -> list[dict[str, Any]]:
    lines = (tmp_path / out / "redjury.report.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["entry_type"] == kind]


def report(tmp_path: Path, out: str, kind: str) -> dict[str, Any]:
    return rows(tmp_path, out, kind)[0]


def store_small_audit(cache_dir: Path, samples: int) -> str:
    key = audit_key(detector_classes()["pii_leak"]())
    half = samples // 2
    correction = {"tp": half, "fn": 0, "tn": samples - half, "fp": 0}
    result = AuditResult(
        key, "pii_leak", [], "pii_leak", {}, {}, {}, None, 0, {}, {"passed": True}, correction
    )
    result.created_at = "2026-12-01T10:00:00+00:00"
    store_audit(result, cache_dir)
    return key


def test_run_names_its_judge_cache_and_counts_answers_it_served(server, tmp_path):
    server.set_script(always(Reply("no")))
    first = judged_run(tmp_path, server.openai_url, "one")
    assert first.returncode == 0, first.stderr
    cache_file = tmp_path / "cache" / "judges.sqlite"
    assert f"judge cache: {cache_file} (empty; --no-cache bypasses it)" in first.stdout
    assert "judge cache: 0 of 3 judge answers came from it" in first.stdout
    header = report(tmp_path, "one", "init")
    assert header["stored_state"] == [
        {"kind": "judge_cache", "file": str(cache_file), "date": None, "entries": 0}
    ]
    second = judged_run(tmp_path, server.openai_url, "two")
    assert "judge cache: 3 of 3 judge answers came from it" in second.stdout
    [entry] = report(tmp_path, "two", "init")["stored_state"]
    assert entry["entries"] == 3 and entry["date"]
    assert report(tmp_path, "two", "completion")["judge_cache"] == {"answers": 3, "from_cache": 3}


def test_small_stored_audit_is_named_and_left_aside(server, tmp_path):
    server.set_script(always(Reply("no")))
    key = store_small_audit(tmp_path / "calibration", 4)
    result = judged_run(tmp_path, server.openai_url, "out")
    file = tmp_path / "calibration" / "audits" / f"{key}.json"
    said = (
        f"stored audit of pii_leak left aside: 4 labelled samples are too few ({file}, 2026-12-01)"
    )
    assert said in result.stdout.splitlines()
    entry = next(e for e in report(tmp_path, "out", "init")["stored_state"] if e["kind"] == "audit")
    assert entry == {
        "kind": "audit",
        "detector": "pii_leak",
        "file": str(file),
        "date": "2026-12-01T10:00:00+00:00",
        "samples": 4,
        "applied": False,
    }
    pii = next(r for r in rows(tmp_path, "out", "eval") if r["detector"] == "pii_leak")
    assert pii["interval_correction"]["source"] == "none"


def test_audit_large_enough_is_named_as_applied(server, tmp_path):
    server.set_script(always(Reply("no")))
    key = store_small_audit(tmp_path / "calibration", 40)
    result = judged_run(tmp_path, server.openai_url, "out")
    assert "stored audit applied to pii_leak's intervals:" in result.stdout
    assert "(2026-12-01, 40 labelled samples)" in result.stdout
    pii = next(r for r in rows(tmp_path, "out", "eval") if r["detector"] == "pii_leak")
    assert pii["interval_correction"]["source"] == f"audit:{key}"


def test_calibration_file_is_named_with_date_and_size(tmp_path):
    calibration = tmp_path / "cal.json"
    meta = {"date": "2026-11-30T08:00:00", "filenames": ["r1", "r2", "r3"]}
    calibration.write_text(
        json.dumps({"p/d": {"mu": 0.5, "sigma": 0.1}, "garak_calibration_meta": meta})
    )
    attempts = REPO / "examples" / "attempts.jsonl"
    out = tmp_path / "out"
    result = redjury(tmp_path, "run", attempts, "-o", out, "--calibration", calibration)
    assert result.returncode == 0, result.stderr
    said = f"calibration: {calibration} (2026-11-30, 1 probe/detector pairs from 3 reports)"
    assert said in result.stdout.splitlines()


def test_cache_show_and_clear(server, tmp_path):
    cache_file = tmp_path / "cache" / "judges.sqlite"
    assert (
        redjury(tmp_path, "cache", "show").stdout.strip() == f"judge cache: {cache_file} (none yet)"
    )
    server.set_script(always(Reply("no")))
    assert judged_run(tmp_path, server.openai_url, "one").returncode == 0
    shown = redjury(tmp_path, "cache", "show").stdout.splitlines()
    assert shown[0].startswith(f"judge cache: {cache_file} (3 answers, last written ")
    assert shown[1:] == ["  harmbench:a: 3"]
    cleared = redjury(tmp_path, "cache", "clear")
    assert cleared.stdout.strip() == f"judge cache: removed 3 answers from {cache_file}"
    assert redjury(tmp_path, "cache", "show").stdout.startswith(f"judge cache: {cache_file} (0 ")
    broken = tmp_path / "not.sqlite"
    broken.write_text("hello, not a database" * 100)
    refused = redjury(tmp_path, "cache", "show", "--path", broken)
    assert refused.returncode == 2 and f"{broken}: not a judge cache" in refused.stderr


def test_audits_list_and_remove(tmp_path):
    root = tmp_path / "calibration"
    small = store_small_audit(root, 4)
    listed = redjury(tmp_path, "audits", "list", "--cache-dir", root)
    assert listed.stdout.splitlines() == [
        f"{small}  pii_leak  2026-12-01  4 samples  gate PASS  not applied (fewer than 30 samples)"
    ]
    refused = redjury(tmp_path, "audits", "remove", "nope", "--cache-dir", root)
    assert refused.returncode == 2 and "no stored audit 'nope'" in refused.stderr
    removed = redjury(tmp_path, "audits", "remove", small, "--cache-dir", root)
    assert removed.returncode == 0 and f"removed audit {small}" in removed.stdout
    assert not (root / "audits" / f"{small}.json").exists()
    assert "no stored audits in" in redjury(tmp_path, "audits", "list", "--cache-dir", root).stdout
