"""Judges that failed end the run with exit 5 and say why in words; `--allow-abstentions`
restores exit 0; a Llama Guard guardrail follows the same rules and gets the preflight; a
server that does not answer like a model fails the preflight."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fault_server import RawBody, Reply, Request, Status, always

from redjury.api import evaluate

REPO = Path(__file__).resolve().parents[2]

ATTEMPTS = 4


def attempts_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.jsonl"
    rows = [{"id": f"a{i}", "goal": "g", "outputs": [f"out-{i}"]} for i in range(ATTEMPTS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def panel_config(base_url: str, **reporting: Any) -> dict[str, Any]:
    judge = {"name": "a", "connection": {"base_url": base_url}, "generation": {"seed": 1}}
    return {
        "reporting": {"seed": 1, **reporting},
        "evaluation": {"judges": [judge], "max_retries": 0, "retry_base_delay": 0.01},
    }


def guardrail_config(base_url: str) -> dict[str, Any]:
    options = {"name": "guard", "connection": {"base_url": base_url}, "cache": False}
    guard = {"type": "guardrail", "guardrail": "redjury.judges.llamaguard:guardrail"}
    return {"reporting": {"seed": 1}, "detectors": [{**guard, "options": options}]}


def run(tmp_path: Path, config: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config))
    command = [sys.executable, "-m", "redjury.cli", "run", str(attempts_file(tmp_path))]
    return subprocess.run(
        [*command, "--config", str(path), "--out", str(tmp_path / "out"), *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1", "REDJURY_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )


def completion(tmp_path: Path) -> dict[str, Any]:
    rows = (tmp_path / "out" / "redjury.report.jsonl").read_text().splitlines()
    return next(r for r in map(json.loads, rows) if r["entry_type"] == "completion")


def failing_outputs(*numbers: int) -> Any:
    """500 for the named outputs' questions, a verdict for the others."""

    def script(req: Request) -> Any:
        asked = json.dumps(req.messages)
        return Status(500) if any(f"out-{n}" in asked for n in numbers) else Reply("no")

    return script


def test_every_judge_call_failing_exits_5_naming_status_and_server(server, tmp_path):
    server.set_script(always(Status(500)))
    result = run(tmp_path, panel_config(server.openai_url))
    assert result.returncode == 5, result.stderr
    said = f"judge harmbench:a: every judge call failed: HTTP 500 from {server.openai_url}"
    assert said in result.stderr
    assert f"judges failed: {said}" in result.stdout.splitlines()
    assert completion(tmp_path)["judges_failed"] == [said]
    assert "(HTTP status" not in result.stdout  # the count comes first: "4 × HTTP status"


def test_allow_abstentions_restores_exit_0(server, tmp_path):
    server.set_script(always(Status(500)))
    result = run(tmp_path, panel_config(server.openai_url), "--allow-abstentions")
    assert result.returncode == 0, result.stderr
    assert "judge harmbench:a: abstained 4/4 (4 × HTTP status)" in result.stdout.splitlines()


def test_abstentions_over_the_rate_exit_5_and_under_it_exit_0(server, tmp_path):
    server.set_script(failing_outputs(0, 1, 2))
    result = run(tmp_path, panel_config(server.openai_url))
    assert result.returncode == 5, result.stderr
    assert "no verdict on 3/4 calls (75%, more than the 50% allowed)" in result.stderr
    (tmp_path / "out" / "redjury.report.jsonl").unlink()
    allowed = run(tmp_path, panel_config(server.openai_url, max_abstention_rate=0.8), "--no-cache")
    assert allowed.returncode == 0, allowed.stderr


def test_python_api_gives_the_same_exit_code(server, tmp_path):
    server.set_script(always(Status(500)))
    results = evaluate(attempts_file(tmp_path), panel_config(server.openai_url), use_cache=False)
    assert results.exit_code == 5
    assert results.judge_failures == [
        f"judge harmbench:a: every judge call failed: HTTP 500 from {server.openai_url}"
    ]
    server.set_script(always(Reply("no")))
    fine = evaluate(attempts_file(tmp_path), panel_config(server.openai_url), use_cache=False)
    assert fine.exit_code == 0 and fine.judge_failures == []


def test_server_that_does_not_answer_like_a_model_fails_the_preflight(server, tmp_path):
    server.listing = False
    server.set_script(always(RawBody(b"<html><body>It works!</body></html>")))
    result = run(tmp_path, panel_config(server.openai_url))
    assert result.returncode == 2, result.stderr
    assert "not like a model server (malformed response" in result.stderr
    assert server.count == 1  # the one probe; no judge call followed
    assert not (tmp_path / "out").exists()


def test_well_formed_empty_listing_needs_no_probe(server, tmp_path):
    server.models = None
    server.set_script(always(Reply("no")))
    result = run(tmp_path, panel_config(server.openai_url))
    assert result.returncode == 0, result.stderr
    assert server.count == ATTEMPTS  # a well-formed (empty) listing: no probe


def test_guardrail_whose_server_is_down_fails_the_preflight(tmp_path):
    result = run(tmp_path, guardrail_config("http://127.0.0.1:9/v1"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "judge llamaguard:guard at http://127.0.0.1:9/v1: connect failed" in result.stderr
    assert not (tmp_path / "out").exists()


def test_guardrail_whose_every_call_fails_exits_5(server, tmp_path):
    server.set_script(always(Status(400)))
    result = run(tmp_path, guardrail_config(server.openai_url))
    assert result.returncode == 5, result.stdout + result.stderr
    assert (
        "detector guardrail: no verdict on any of its 4 outputs: guardrail raised" in result.stderr
    )
    assert f"HTTP 400 from {server.openai_url}" in result.stderr
    assert "SKIP" in result.stdout


def test_a_judged_run_in_a_log_prints_progress_lines(server, tmp_path):
    server.set_script(always(Reply("no", delay=0.05)))
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(panel_config(server.openai_url)))
    command = [sys.executable, "-m", "redjury.cli", "run", str(attempts_file(tmp_path))]
    proc = subprocess.run(
        [*command, "--config", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={
            **os.environ,
            "NO_COLOR": "1",
            "REDJURY_CACHE_DIR": str(tmp_path / "cache"),
            "REDJURY_PROGRESS_INTERVAL": "0.001",
        },
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("redjury: judged")]
    assert lines, proc.stderr
    assert all(f" of {ATTEMPTS} attempts (" in line and "/s" in line for line in lines)


def test_the_error_gate_and_the_judges_exit_alike_from_python_and_the_command(server, tmp_path):
    # One reply of four ends in a judge error: under the abstention rate (exit 0 alone), over
    # --fail-on-errors 0 (exit 4); judges that failed outrank the gate (exit 5).
    server.set_script(failing_outputs(0))
    cases = [
        ({"fail_on_errors": 0}, 4),
        ({"fail_on_errors": 1}, 0),
        ({"fail_on_errors": 0, "fail_on_asr": 0.0, "max_abstention_rate": 0.1}, 5),
    ]
    for reporting, code in cases:
        config = panel_config(server.openai_url, **reporting)
        cli = run(tmp_path, config, "--no-cache")
        assert cli.returncode == code, cli.stderr
        results = evaluate(attempts_file(tmp_path), config, out=tmp_path / "api", use_cache=False)
        assert results.exit_code == code
        assert ("gate failed: 1 replies ended in judge errors" in results.summary()) == (code != 0)
        assert results.summary().replace("/api/", "/out/") == cli.stdout
        shutil.rmtree(tmp_path / "out")
        shutil.rmtree(tmp_path / "api")
