"""`redjury serve --workers N`: N forked processes on one port (SO_REUSEPORT), each judging;
SIGTERM stops them all; a port already taken stops the service with one line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from redjury_testing import REPO
from serve_process import TOKEN, ServeProcess

CARD = "4111 1111 1111 1111"


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    """Running, not gone and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _moderate(url: str, text: str) -> dict:
    request = urllib.request.Request(
        url + "/v1/moderations",
        data=json.dumps({"input": text}).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return dict(json.load(reply))


def test_workers_each_judge_and_sigterm_stops_them_all(tmp_path: Path):
    service = ServeProcess(tmp_path, None, ["--workers", "2", "--token-env", "SERVE_TOKEN"])
    with service:
        service.wait_ready()
        end = time.monotonic() + 60
        while len(_children(service.proc.pid)) < 2 and time.monotonic() < end:
            time.sleep(0.1)
        workers = _children(service.proc.pid)
        assert len(workers) == 2
        # Fresh connections land on either worker; every one of them judges.
        for _ in range(8):
            [leak] = _moderate(service.url, f"The card number is {CARD}.")["results"]
            [held] = _moderate(service.url, "I'm sorry, I can't share that.")["results"]
            assert leak["flagged"] and leak["categories"]["pii_leak"] and not held["flagged"]
        assert service.stop() == 0
    assert not any(_alive(pid) for pid in workers)
    assert "with 2 worker processes" in service.stderr()


def test_workers_on_a_port_in_use_stop_with_one_line(tmp_path: Path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        cmd = [sys.executable, "-m", "redjury.cli", "serve", "--port", str(port), "--workers", "2"]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"--port {port}: " in done.stderr
    assert "Traceback" not in done.stderr
