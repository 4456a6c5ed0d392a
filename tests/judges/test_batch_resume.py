"""A `redjury run` killed while its judge batch is in flight resumes that batch: the rerun
polls and fetches the recorded batch and never uploads or creates another. Killed inside the
create (the provider made the batch, the run never learned its id), the rerun finds the
batch in the provider's listing by the intent recorded before the create, and adopts it.
Killed inside the upload (the provider kept the file, the run never learned its id), the
rerun finds the file by its name and uploads nothing. A recorded file the provider no longer
has is uploaded again from the kept spool, once; without the spool the requests abstain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

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


def _ledger(out: Path) -> list[dict[str, Any]]:
    batches: list[dict[str, Any]] = json.loads((out / "judge_batches.json").read_bytes())["batches"]
    return batches


def _killed_before_the_create(
    tmp_path: Path, server: BatchServer, signum: int
) -> tuple[Path, list[str], dict[str, str], dict[str, Any], str]:
    """A run killed while its create waits at the server, whose file then goes (expired,
    deleted by its owner); the held create then finds no file and makes nothing."""
    attempts, config, env = _setup(tmp_path, server, "OPENAI")
    server.delay_create = True
    out = tmp_path / "out"
    proc, cmd = start_run(attempts, config, out, env)
    wait_for(lambda: len(server.requests("POST", "/v1/batches")) == 1)
    [intent] = _ledger(out)
    assert intent["input_file_id"] == "file-in-1" and "id" not in intent
    stderr = _kill(proc, signum)
    server.delete_file("file-in-1")
    server.delay_create = False
    return out, cmd, env, intent, stderr


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_file_gone_before_the_create_is_uploaded_again_once(tmp_path: Path, signum: int) -> None:
    with BatchServer(polls=1) as server:
        out, cmd, env, intent, stderr = _killed_before_the_create(tmp_path, server, signum)
        sent = (out / "judge_batches" / intent["spool"]).read_bytes()
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert (server.uploads, server.creates) == (2, 1)
        assert server.files["file-in-2"] == sent  # the same requests, under the same name
        token = intent["token"]
        assert f'filename="redjury-{token}.jsonl"'.encode() in server.requests("POST")[-2].body
        assert f"file file-in-1 of intent {token} is gone at" in again.stderr
        [entry] = _ledger(out)
        assert (entry["token"], entry["input_file_id"], entry["id"]) == (
            token,
            "file-in-2",
            "batch_1",
        )
        assert list((out / "judge_batches").glob("*")) == []
        _check_verdicts_and_secrets(out, again.stderr + again.stdout + stderr)


def test_a_file_gone_with_its_spool_abstains_and_says_what_to_do(tmp_path: Path) -> None:
    with BatchServer(polls=1) as server:
        out, cmd, env, intent, _ = _killed_before_the_create(tmp_path, server, signal.SIGKILL)
        (out / "judge_batches" / intent["spool"]).unlink()
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 5, again.stderr  # the judges' verdicts are missing
        assert (server.uploads, server.creates) == (1, 0)
        rows = rows_of(out / "redjury.report.jsonl", "attempt")
        assert len(rows) == N
        for row in rows:
            assert row["detector_results"].get("judge_panel") in (None, [None]), row
            assert "batch_input_gone" in json.dumps(row["details"]), row["details"]
        todo = "run into a new --out folder to judge them in a new batch (and delete intent "
        assert f"{todo}{intent['token']} from {out / 'judge_batches.json'})" in again.stderr
        [kept] = _ledger(out)
        assert "id" not in kept and kept | {"intent_at": 0} == intent | {"intent_at": 0}
        # Done as it says: the requests go in a new batch, answered.
        fresh = tmp_path / "fresh"
        last = subprocess.run(
            [*cmd[:-1], str(fresh)], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert last.returncode == 0, last.stderr
        assert (server.uploads, server.creates) == (2, 1)
        _check_verdicts_and_secrets(fresh, last.stderr + last.stdout + again.stderr)


@pytest.mark.parametrize(
    ("signum", "twin"), [(signal.SIGKILL, False), (signal.SIGTERM, False), (signal.SIGKILL, True)]
)
def test_run_killed_inside_the_upload_adopts_the_file(
    tmp_path: Path, signum: int, twin: bool
) -> None:
    """The upload reached the server, its answer never reached the run: the rerun finds the
    file by the intent's name (purpose and size too) and uploads nothing; two such files
    cannot be told apart, so it adopts neither and uploads once, saying so."""
    with BatchServer(polls=1) as server:
        attempts, config, env = _setup(tmp_path, server, "OPENAI")
        server.stall_upload = True
        out = tmp_path / "out"
        proc, cmd = start_run(attempts, config, out, env)
        wait_for(lambda: server.uploads == 1)
        [intent] = _ledger(out)
        assert "input_file_id" not in intent and intent["requests"] == N
        stderr = _kill(proc, signum)
        server.stall_upload = False
        name = f"redjury-{intent['token']}.jsonl"
        # Others' files on the same key, before and after, fill more than one listing page.
        server.add_file(name, server.files["file-in-1"][:-1])  # not the same size
        server.add_file("redjury-other.jsonl", server.files["file-in-1"])
        if twin:
            server.add_file(name, server.files["file-in-1"])
        server.page_cap = 2
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert (server.uploads, server.creates) == (2 if twin else 1, 1)
        listed = [r for r in server.requests("GET", "/v1/files") if r.path == "/v1/files"]
        assert len(listed) >= 2 and all("purpose=batch" in r.query for r in listed)
        [entry] = _ledger(out)
        if twin:
            said = f"2 files named {name} (file-other-4, file-in-1): none adopted, uploaded again"
            assert f"{said} as file-in-2" in again.stderr
            assert entry["input_file_id"] == "file-in-2"
        else:
            assert f"file file-in-1 ({name}) adopted" in again.stderr
            assert entry["input_file_id"] == "file-in-1"
        assert entry["token"] == intent["token"] and entry["id"] == "batch_1"
        _check_verdicts_and_secrets(out, again.stderr + again.stdout + stderr)
