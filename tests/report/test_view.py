"""`redjury view RUN [NEW]`: the real command serving the report (or the comparison) on
127.0.0.1, only that page, read-only, and stopping cleanly on SIGTERM."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redjury_testing import REPO
from report_fixtures import run_example


@contextmanager
def viewing(*args: str | Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`redjury view ARGS --no-browser` in a subprocess, and the port it says it serves on."""
    env = {**os.environ, "NO_COLOR": "1", "DISPLAY": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "redjury.cli", "view", *map(str, args), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
        assert found, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield proc, int(found.group(1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def request(port: int, path: str, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace"), dict(resp.getheaders())
    finally:
        conn.close()


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=60)
    return proc.returncode, out


def test_view_serves_the_report_only_and_stops_on_sigterm(tmp_path: Path) -> None:
    run = run_example(tmp_path / "run")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the browser")
    with viewing(run) as (proc, port):
        status, page, headers = request(port, "/")
        assert status == 200
        assert headers["Content-Type"].startswith("text/html")
        assert "<h1>redjury report</h1>" in page
        assert "jailbreak.roleplay" in page
        for path in (
            "/../secret.txt",
            "/%2e%2e/%2e%2e/secret.txt",
            "/..%2f..%2fsecret.txt",
            "/redjury.report.jsonl",
            f"/{tmp_path}/secret.txt",
        ):
            status, body, _ = request(port, path)
            assert status == 404, path
            assert "not for the browser" not in body and "entry_type" not in body
        assert request(port, "/", "POST")[0] == 405
        assert request(port, "/", "DELETE")[0] == 405
        code, out = stop(proc)
    assert code == 0
    assert "stopped" in out
    assert sorted(p.name for p in run.iterdir()) == [
        "redjury.hitlog.jsonl",
        "redjury.report.jsonl",
    ]  # read-only: not even the HTML file is written


def test_view_with_two_runs_serves_the_comparison(tmp_path: Path) -> None:
    base = run_example(tmp_path / "base")
    new = run_example(tmp_path / "new")
    with viewing(base, new) as (proc, port):
        status, page, _ = request(port, "/")
        assert status == 200
        assert "<h1>redjury compare</h1>" in page
        assert str(base) in page and str(new) in page
        assert "pii_leak" in page
        code, _ = stop(proc)
    assert code == 0


def test_view_of_a_missing_run_is_one_line_and_no_server(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "redjury.cli", "view", str(tmp_path / "nope"), "--no-browser"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("redjury: error: ")
    assert "nope" in proc.stderr
    assert "serving" not in proc.stdout
