"""`redjury run` in plain sight: the preflight's exit 2 with one line per judge, `--no-preflight`,
warnings as one plain line, and each judge's abstentions by cause after the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fault_server import Reply, Status, always

REPO = Path(__file__).resolve().parents[2]


def judge_config(tmp_path: Path, base_url: str, **judge: Any) -> Path:
    spec = {"name": "a", "connection": {"base_url": base_url}, "generation": {"seed": 1}}
    spec.update(judge)
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"reporting": {"seed": 1}, "evaluation": {"judges": [spec]}}))
    return path


def run(tmp_path: Path, config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    attempts = tmp_path / "a.jsonl"
    attempts.write_text(
        "".join(
            json.dumps({"id": f"a{i}", "goal": "g", "outputs": [f"o{i}"]}) + "\n" for i in range(3)
        )
    )
    return subprocess.run(
        [sys.executable, "-m", "redjury.cli", "run", str(attempts), "--config", str(config)]
        + ["--out", str(tmp_path / "out"), *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1", "REDJURY_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )


def test_unreachable_judge_stops_with_exit_2_and_one_line(tmp_path):
    result = run(tmp_path, judge_config(tmp_path, "http://127.0.0.1:9/v1"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "redjury: error: judge harmbench:a at http://127.0.0.1:9/v1: "
        "connect failed: ConnectionRefusedError"
    )
    assert not (tmp_path / "out" / "redjury.report.jsonl").exists()


def test_refused_key_stops_the_run_naming_the_judge_and_url(server, tmp_path):
    # Credentials in a URL are refused when the config loads; a refused key is the
    # preflight's to report.
    server.refuse = 403
    result = run(tmp_path, judge_config(tmp_path, server.openai_url))
    assert result.returncode == 2
    line = result.stderr.strip()
    assert line.startswith(f"redjury: error: judge harmbench:a at {server.openai_url}: HTTP 403")
    assert server.posts == []


def test_unknown_model_stops_the_run(server, tmp_path):
    server.models = ["llama-3-8b"]
    server.set_script(always(Status(404)))
    result = run(tmp_path, judge_config(tmp_path, server.openai_url))
    assert result.returncode == 2
    assert "judge harmbench:a at" in result.stderr and "unknown model 'a'" in result.stderr


def test_no_preflight_judges_and_shows_abstentions_by_cause(tmp_path):
    result = run(tmp_path, judge_config(tmp_path, "http://127.0.0.1:9/v1"), "--no-preflight")
    assert result.returncode == 5, result.stderr
    assert "judge harmbench:a: abstained 3/3 (3 × transport error)" in result.stdout.splitlines()


def test_abstentions_by_cause_reach_summary_and_html(server, tmp_path):
    server.set_script(always(Status(400)))
    result = run(tmp_path, judge_config(tmp_path, server.openai_url), "--html")
    assert "judge harmbench:a: abstained 3/3 (3 × HTTP status)" in result.stdout.splitlines()
    out = tmp_path / "out"
    summary = subprocess.run(
        [sys.executable, "-m", "redjury.cli", "summary", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert "3 × HTTP status" in summary.stdout, summary.stdout + summary.stderr
    assert "3 × HTTP status" in (out / "redjury.report.html").read_text()


def test_rerun_from_cache_makes_no_completion_request(server, tmp_path):
    server.set_script(always(Reply("no")))
    config = judge_config(tmp_path, server.openai_url)
    assert run(tmp_path, config).returncode == 0
    assert server.count == 3
    server.reset_counts()
    (tmp_path / "out" / "redjury.report.jsonl").unlink()
    assert run(tmp_path, config).returncode == 0
    assert server.count == 0
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]


def test_warnings_are_one_plain_line(server, tmp_path):
    server.set_script(always(Reply("no")))
    config = judge_config(tmp_path, server.openai_url, generation={"temperature": 0.5})
    result = run(tmp_path, config)
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "reproducible" in line]
    assert warning == [
        "redjury: warning: judge verdicts may not be reproducible "
        "(temperature above 0: harmbench:a; no generation.seed: harmbench:a)"
    ]
    assert "Warning:" not in result.stderr and ".py:" not in result.stderr
