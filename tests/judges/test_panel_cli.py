"""`redjury run` with a judge panel, end to end: report rows, secrets, cache, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fault_server import Reply, Status, always

REPO = Path(__file__).resolve().parents[2]
SECRET_KEY = "sk-judge-secret-4821"
SECRET_HEADER = "hdr-secret-7734"


def verdict_script(delay: float = 0.0):
    """yes when the judged reply contains BAD, else no: a deterministic panel."""

    def script(req):
        return Reply("yes" if "BAD" in req.messages[-1]["content"] else "no", delay=delay)

    return script


def write_attempts(path: Path, n: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            outputs = [
                f"{'BAD' if i % 3 == 0 else 'fine'} reply {i}",
                None if i % 7 == 0 else f"other {i}",
            ]
            fh.write(
                json.dumps(
                    {"id": f"a{i}", "probe": f"p{i % 2}", "goal": f"goal {i}", "outputs": outputs}
                )
                + "\n"
            )
    return path


def write_config(path: Path, server, **evaluation: Any) -> Path:
    config = {
        "reporting": {"seed": 1},
        "evaluation": {
            "judges": [
                {
                    "name": "a",
                    "connection": {
                        "base_url": server.openai_url,
                        "api_key_env": "JUDGE_TEST_KEY",
                        "headers": {"x-team": SECRET_HEADER},
                    },
                    "generation": {"seed": 1},
                },
                {
                    "name": "b",
                    "connection": {"type": "OLLAMA", "base_url": server.url},
                    "generation": {"seed": 1},
                },
            ],
            **evaluation,
        },
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NO_COLOR": "1",
        "JUDGE_TEST_KEY": SECRET_KEY,
        "REDJURY_CACHE_DIR": str(tmp_path / "cache"),
    }


def run(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redjury.cli", "run", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env(tmp_path),
        timeout=300,
    )


def rows(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "redjury.report.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, filter(None, lines)) if r.get("entry_type") == kind]


def comparable_attempt(row: dict[str, Any]) -> dict[str, Any]:
    """An attempt row less what may differ between runs: latencies and cache flags."""
    row = json.loads(json.dumps(row))
    for d in row.get("details", {}).get("judge_panel", []):
        if d:
            d.pop("cached", None)
            for vote in d["judges"]:
                vote.pop("latency_ms")
                vote.pop("cached")
    return row


def test_run_judges_every_output_and_writes_no_secret(server, tmp_path):
    server.set_script(verdict_script())
    out = tmp_path / "out"
    result = run(
        tmp_path,
        write_attempts(tmp_path / "a.jsonl", 12),
        "--config",
        write_config(tmp_path / "c.yaml", server),
        "--out",
        out,
    )
    assert result.returncode in (0, 1), result.stderr
    attempts = {r["id"]: r for r in rows(out, "attempt")}
    assert len(attempts) == 12
    a0 = attempts["a0"]
    assert a0["detector_results"]["judge_panel"] == [1.0, None]
    assert a0["verdicts"]["judge_panel"] == ["BROKE_THROUGH", "INCONCLUSIVE"]
    assert a0["details"]["judge_panel"][0]["votes"] == {"harmbench:a": 10.0, "harmbench:b": 10.0}
    assert attempts["a1"]["detector_results"]["judge_panel"] == [0.0, 0.0]
    [completion] = rows(out, "completion")
    assert completion["judge_panel_stats"]["requests"] == server.count == 2 * (12 + 10)
    for path in out.iterdir():
        text = path.read_text()
        assert SECRET_KEY not in text and SECRET_HEADER not in text, path.name
    assert SECRET_KEY not in result.stdout + result.stderr
    # The key did reach the server, as a bearer token, and only there.
    assert server.posts[0].headers["authorization"] == f"Bearer {SECRET_KEY}"


def test_rerun_is_served_by_the_cache_and_no_cache_bypasses_it(server, tmp_path):
    server.set_script(verdict_script())
    attempts = write_attempts(tmp_path / "a.jsonl", 10)
    config = write_config(tmp_path / "c.yaml", server)
    run(tmp_path, attempts, "--config", config, "--out", tmp_path / "one")
    judged = server.count
    assert judged > 0
    server.reset_counts()
    run(tmp_path, attempts, "--config", config, "--out", tmp_path / "two")
    assert server.count == 0
    [completion] = rows(tmp_path / "two", "completion")
    assert completion["judge_panel_stats"]["cached"] == judged
    run(tmp_path, attempts, "--config", config, "--out", tmp_path / "three", "--no-cache")
    assert server.count == judged
    one = sorted(map(comparable_attempt, rows(tmp_path / "one", "attempt")), key=lambda r: r["id"])
    two = sorted(map(comparable_attempt, rows(tmp_path / "two", "attempt")), key=lambda r: r["id"])
    assert one == two


def test_every_judge_abstaining_is_an_error_never_a_pass(server, tmp_path):
    server.set_script(always(Status(400)))
    out = tmp_path / "out"
    run(
        tmp_path,
        write_attempts(tmp_path / "a.jsonl", 6),
        "--config",
        write_config(tmp_path / "c.yaml", server),
        "--out",
        out,
    )
    evals = [r for r in rows(out, "eval") if r["detector"] == "judge_panel"]
    assert evals
    for row in evals:
        assert row["passed"] == 0 and row["fails"] == 0
        assert row["errors"] > 0 and row["errors"] <= row["nones"]
    attempts = rows(out, "attempt")
    for a in attempts:
        for score, details in zip(
            a["detector_results"]["judge_panel"], a["details"]["judge_panel"], strict=True
        ):
            assert score is None
            if details:
                assert details["error"] == "every judge abstained"


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(server, tmp_path):
    # Slow answers keep the run going long enough to kill it after its first window.
    server.set_script(verdict_script(delay=0.03))
    n = 700
    attempts = write_attempts(tmp_path / "a.jsonl", n)
    config = write_config(tmp_path / "c.yaml", server, per_endpoint_concurrency=16)
    whole = tmp_path / "whole"
    assert run(tmp_path, attempts, "--config", config, "--out", whole, "--no-cache").returncode in (
        0,
        1,
    )

    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redjury.cli",
            "run",
            str(attempts),
            "--config",
            str(config),
            "--out",
            str(killed),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=env(tmp_path),
    )
    report = killed / "redjury.report.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if report.exists() and report.read_text().count('"entry_type":"attempt"') >= 1:
            break
        if proc.poll() is not None:
            pytest.fail("the run ended before it could be killed")
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = report.read_text().count('"entry_type":"attempt"')
    assert 0 < partial < n, partial

    assert run(tmp_path, attempts, "--config", config, "--out", killed).returncode in (0, 1)
    resumed = rows(killed, "attempt")
    ids = [r["id"] for r in resumed]
    assert len(ids) == len(set(ids)) == n
    expected = sorted(map(comparable_attempt, rows(whole, "attempt")), key=lambda r: r["id"])
    assert sorted(map(comparable_attempt, resumed), key=lambda r: r["id"]) == expected
    assert rows(killed, "eval") == rows(whole, "eval")
    [completion] = rows(killed, "completion")
    assert completion["attempts_resumed"] == partial
