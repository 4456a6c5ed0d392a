"""A `redjury run` killed while its judge batch is in flight resumes that batch: the rerun
polls and fetches the recorded batch and never uploads or creates another."""

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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_killed_run_resumes_its_batch_without_resubmitting(tmp_path: Path, signum: int) -> None:
    n = 6
    attempts = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {
                "id": f"s{i}",
                "probe": "p",
                "goal": "g",
                "outputs": [f"reply s{i} ZZYES" if i % 2 else f"reply s{i}"],
            }
            for i in range(n)
        ],
    )
    with BatchServer(polls=1) as server:
        server.hold = True
        connection = {
            "type": "ANTHROPIC",
            "base_url": server.url,
            "api_key_env": "JUDGE_KEY",
            "batch": True,
            "batch_gather": 1.0,
            "batch_poll": 0.05,
        }
        config = tmp_path / "c.json"
        config.write_text(
            json.dumps(
                {
                    "evaluation": {
                        "judges": [
                            {
                                "name": "claude-j",
                                "connection": connection,
                                "generation": {"seed": 1},
                            }
                        ]
                    }
                }
            )
        )
        out = tmp_path / "out"
        env = {
            **os.environ,
            "NO_COLOR": "1",
            "REDJURY_CACHE_DIR": str(tmp_path / "cache"),
            "JUDGE_KEY": KEY,
        }
        proc, cmd = start_run(attempts, config, out, env)
        try:
            # The batch is created and recorded, and its status polled at least once.
            wait_for(lambda: len(server.requests("GET", "/v1/messages/batches/")) >= 1)
            assert (out / "judge_batches.json").exists()
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode != 0
        assert server.creates == 1
        server.hold = False
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert server.creates == 1
        assert server.requests("POST") == server.requests("POST", "/v1/messages/batches")[:1]
        rows = {r["id"]: r for r in rows_of(out / "redjury.report.jsonl", "attempt")}
        assert sorted(rows) == [f"s{i}" for i in range(n)]
        for i in range(n):
            [score] = rows[f"s{i}"]["detector_results"]["judge_panel"]
            assert score == (1.0 if i % 2 else 0.0), rows[f"s{i}"]["details"]["judge_panel"]
        for path in out.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path
        assert KEY not in again.stderr + again.stdout + stderr
