"""A `redjury run` killed while its judge batch is in flight resumes that batch: the rerun
polls and fetches the recorded batch and never uploads or creates another. Killed inside the
create (the provider made the batch, the run never learned its id), the rerun finds the
batch in the provider's listing by the intent recorded before the create, and adopts it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from batch_server import BatchServer
from redjury_testing import REPO, rows_of, start_run, wait_for, write_jsonl

KEY = "sk-resume-secret-7"
N = 6
PREFIX = {"ANTHROPIC": "/v1/messages/batches", "OPENAI": "/v1/batches"}


def _setup(tmp_path: Path, server: BatchServer, kind: str) -> tuple[Path, Path, dict[str, str]]:
    attempts = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {
                "id": f"s{i}",
                "probe": "p",
                "goal": "g",
                "outputs": [f"reply s{i} ZZYES" if i % 2 else f"reply s{i}"],
            }
            for i in range(N)
        ],
    )
    connection = {
        "type": kind,
        "base_url": server.url + ("/v1" if kind == "OPENAI" else ""),
        "api_key_env": "JUDGE_KEY",
        "batch": True,
        "batch_gather": 1.0,
        "batch_poll": 0.05,
    }
    name = "claude-j" if kind == "ANTHROPIC" else "gpt-judge"
    judge = {"name": name, "connection": connection, "generation": {"seed": 1}}
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"evaluation": {"judges": [judge]}}))
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "REDJURY_CACHE_DIR": str(tmp_path / "cache"),
        "JUDGE_KEY": KEY,
    }
    return attempts, config, env


def _kill(proc: subprocess.Popen[str], signum: int) -> str:
    try:
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    return stderr


def _check_verdicts_and_secrets(out: Path, captured: str) -> None:
    rows = {r["id"]: r for r in rows_of(out / "redjury.report.jsonl", "attempt")}
    assert sorted(rows) == [f"s{i}" for i in range(N)]
    for i in range(N):
        [score] = rows[f"s{i}"]["detector_results"]["judge_panel"]
        assert score == (1.0 if i % 2 else 0.0), rows[f"s{i}"]["details"]["judge_panel"]
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in captured


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_killed_run_resumes_its_batch_without_resubmitting(tmp_path: Path, signum: int) -> None:
    with BatchServer(polls=1) as server:
        server.hold = True
        attempts, config, env = _setup(tmp_path, server, "ANTHROPIC")
        out = tmp_path / "out"
        proc, cmd = start_run(attempts, config, out, env)
        # The batch is created and recorded, and its status polled at least once.
        wait_for(lambda: len(server.requests("GET", "/v1/messages/batches/")) >= 1)
        assert (out / "judge_batches.json").exists()
        stderr = _kill(proc, signum)
        assert server.creates == 1
        server.hold = False
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert server.creates == 1
        assert server.requests("POST") == server.requests("POST", "/v1/messages/batches")[:1]
        _check_verdicts_and_secrets(out, again.stderr + again.stdout + stderr)


@pytest.mark.parametrize(
    ("kind", "signum"),
    [("ANTHROPIC", signal.SIGKILL), ("OPENAI", signal.SIGKILL), ("OPENAI", signal.SIGTERM)],
)
def test_run_killed_inside_the_create_adopts_the_batch(
    tmp_path: Path, kind: str, signum: int
) -> None:
    with BatchServer(polls=1) as server:
        attempts, config, env = _setup(tmp_path, server, kind)
        # Others' batches on the same key, older and newer, fill more than one listing page.
        for _ in range(3):
            server.add_batch(kind.lower(), N - 1)
        server.page_cap = 2
        server.stall_create = True
        out = tmp_path / "out"
        proc, cmd = start_run(attempts, config, out, env)
        wait_for(lambda: server.creates == 1)
        [made] = [b.id for b in server.batches.values() if "other" not in b.id]
        # The create was accepted and its answer never came: the record holds the intent.
        [intent] = json.loads((out / "judge_batches.json").read_bytes())["batches"]
        assert "id" not in intent and intent["requests"] == N and len(intent["token"]) == 32
        stderr = _kill(proc, signum)
        server.add_batch(kind.lower(), N - 1)
        server.stall_create = False
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert server.creates == 1
        assert server.uploads == (1 if kind == "OPENAI" else 0)
        assert f"batch {made} adopted ({N} requests)" in again.stderr
        listed = [r for r in server.requests("GET", PREFIX[kind]) if r.path == PREFIX[kind]]
        assert len(listed) >= 2  # paged: page_cap 2
        [entry] = json.loads((out / "judge_batches.json").read_bytes())["batches"]
        assert entry["id"] == made and entry["token"] == intent["token"]
        assert list((out / "judge_batches").glob("*")) == []
        _check_verdicts_and_secrets(out, again.stderr + again.stdout + stderr)


def test_ambiguous_listing_stops_the_run_without_resubmitting(tmp_path: Path) -> None:
    """Anthropic keeps nothing of ours on a batch: two unrecorded batches of the intent's size
    made near its time cannot be told apart, and the run stops naming both."""
    with BatchServer(polls=1) as server:
        attempts, config, env = _setup(tmp_path, server, "ANTHROPIC")
        server.stall_create = True
        out = tmp_path / "out"
        proc, cmd = start_run(attempts, config, out, env)
        wait_for(lambda: server.creates == 1)
        _kill(proc, signal.SIGKILL)
        server.stall_create = False
        other = server.add_batch("anthropic", N)
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 2, again.stderr
        assert server.creates == 1 and len(server.batches) == 2
        [line] = [x for x in again.stderr.splitlines() if "judge_batches.json" in x]
        assert str(out / "judge_batches.json") in line
        assert "msgbatch_0001" in line and other in line and "nothing was resubmitted" in line
        [intent] = json.loads((out / "judge_batches.json").read_bytes())["batches"]
        assert "id" not in intent
        assert KEY not in again.stderr + again.stdout
