"""Interrupted, resumed and refused runs: Ctrl-C, a closed stdout, changed flags, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_server import FaultServer, Reply
from redjury_testing import (
    REPO,
    read_jsonl,
    redjury,
    rows_of,
    start_run,
    wait_for,
    write_jsonl,
)

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def _slow_first_script(release: dict[str, bool]):
    """Attempt `s0`'s judge call hangs until released; every other call answers at once."""

    def script(req):
        slow = "reply s0" in req.messages[-1]["content"] and not release["now"]
        return Reply("no", delay=60.0 if slow else 0.0)

    return script


def _panel_config(path: Path, server: FaultServer) -> Path:
    config = {
        "reporting": {"seed": 3},
        "evaluation": {
            "judges": [
                {
                    "name": "j",
                    "connection": {"base_url": server.openai_url},
                    "generation": {"seed": 1},
                }
            ],
            "max_retries": 0,
        },
    }
    path.write_text(json.dumps(config))
    return path


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_keeps_every_finished_attempt_and_says_how_to_resume(tmp_path: Path) -> None:
    n = 14
    attempts = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": f"s{i}", "probe": "p", "goal": "g", "outputs": [f"reply s{i} end"]}
            for i in range(n)
        ],
    )
    release = {"now": False}
    with FaultServer() as server:
        server.set_script(_slow_first_script(release))
        config = _panel_config(tmp_path / "c.yaml", server)
        out = tmp_path / "out"
        env = {**os.environ, "NO_COLOR": "1", "REDJURY_CACHE_DIR": str(tmp_path / "cache")}
        cmd = [sys.executable, "-m", "redjury.cli", "run", str(attempts), "-c", str(config)]
        proc = subprocess.Popen(
            [*cmd, "--out", str(out)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Every attempt has been asked; all but the first have their answer.
        wait_for(lambda: server.count >= n)
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert "interrupted" in stderr and "resume" in stderr
        kept = [r["id"] for r in rows_of(out / "redjury.report.jsonl", "attempt")]
        # Not only an in-order prefix (which would be empty: s0 never finished); on a quiet
        # machine every other attempt is kept, on a loaded one those still in flight are not.
        assert kept and len(set(kept)) == len(kept)
        assert set(kept) <= {f"s{i}" for i in range(1, n)}

        release["now"] = True
        again = subprocess.run(
            [*cmd, "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert again.returncode == 0, again.stderr
        ids = [r["id"] for r in rows_of(out / "redjury.report.jsonl", "attempt")]
        assert sorted(ids) == sorted(f"s{i}" for i in range(n))


def _judged_run(tmp_path: Path, server: FaultServer, n: int, limit: int | None = None):
    attempts = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": f"s{i}", "probe": "p", "goal": "g", "outputs": [f"reply s{i} end"]}
            for i in range(n)
        ],
    )
    config = _panel_config(tmp_path / "c.yaml", server)
    if limit is not None:
        data = json.loads(config.read_text())
        data["evaluation"] |= {"max_concurrency": limit, "per_endpoint_concurrency": limit}
        config.write_text(json.dumps(data))
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1", "REDJURY_CACHE_DIR": str(tmp_path / "cache")}
    proc, cmd = start_run(attempts, config, out, env)
    return proc, cmd, env, out


def _attempt_ids(report: Path) -> list[str]:
    return [r["id"] for r in rows_of(report, "attempt")] if report.exists() else []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_keeps_every_judged_attempt_like_ctrl_c(
    tmp_path: Path, signum: int, code: int
) -> None:
    n = 14
    release = {"now": False}
    with FaultServer() as server:
        server.set_script(_slow_first_script(release))
        proc, cmd, env, out = _judged_run(tmp_path, server, n)
        report = out / "redjury.report.jsonl"
        # Every attempt but s0 is judged, and on disk while s0 still hangs (a kill -9 now
        # would lose none of them).
        wait_for(lambda: len(_attempt_ids(report)) == n - 1)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code, stderr
        name = signal.Signals(signum).name
        assert f"stopped by {name}: {n - 1} judged attempts are kept in {report}" in stderr
        assert "resume" in stderr and "Traceback" not in stderr
        assert sorted(_attempt_ids(report)) == sorted(f"s{i}" for i in range(1, n))

        release["now"] = True
        again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert sorted(_attempt_ids(report)) == sorted(f"s{i}" for i in range(n))


def test_judged_rows_reach_the_disk_while_the_run_waits_so_kill_9_keeps_them(
    tmp_path: Path,
) -> None:
    n = 10
    with FaultServer() as server:
        server.set_script(_slow_first_script({"now": False}))
        proc, _, _, out = _judged_run(tmp_path, server, n)
        try:
            wait_for(lambda: len(_attempt_ids(out / "redjury.report.jsonl")) == n - 1)
        finally:
            proc.kill()
            proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert sorted(_attempt_ids(out / "redjury.report.jsonl")) == [f"s{i}" for i in range(1, n)]


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_with_a_low_concurrency_limit_prints_no_traceback(tmp_path: Path) -> None:
    n = 40
    with FaultServer() as server:
        server.set_script(lambda req: Reply("no", delay=60.0))
        # Four requests hang in flight, every other attempt waits for a slot.
        proc, _, _, out = _judged_run(tmp_path, server, n, limit=4)
        wait_for(lambda: server.count >= 4)
        time.sleep(1.0)  # the others have queued behind them (no timing is asserted)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted: 0 judged attempts are kept" in stderr
    assert "Traceback" not in stderr and "never retrieved" not in stderr, stderr


@pytest.mark.parametrize(
    "flags",
    [["--eval-threshold", "0.2"], ["--zero-tolerance"], ["--bootstrap-min-sample-size", "2"]],
)
def test_resume_with_changed_flags_is_refused(tmp_path: Path, flags: list[str]) -> None:
    out = tmp_path / "out"
    first = redjury("run", EXAMPLE, "--out", out)
    assert first.returncode == 0, first.stderr
    before = (out / "redjury.report.jsonl").read_bytes()
    again = redjury("run", EXAMPLE, "--out", out, *flags)
    assert again.returncode == 2
    assert "different configuration" in again.stderr
    assert (out / "redjury.report.jsonl").read_bytes() == before


def test_resume_with_only_presentation_flags_changed_is_allowed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert redjury("run", EXAMPLE, "--out", out).returncode == 0
    again = redjury("run", EXAMPLE, "--out", out, "--narrow", "--show-z")
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stdout


def test_closed_stdout_leaves_a_complete_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        f"'{sys.executable}' -m redjury.cli run '{EXAMPLE}' --out '{out}' | head -1; "
        'exit "${PIPESTATUS[0]}"',
        shell=True,
        executable="/bin/bash",
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    kinds = [r["entry_type"] for r in read_jsonl(out / "redjury.report.jsonl")]
    assert kinds.count("eval") == 20
    assert kinds[-2:] == ["digest", "completion"]


def test_a_refused_input_leaves_no_report_behind(tmp_path: Path) -> None:
    rows = [{"id": f"x{i}", "outputs": ["My SSN is 219-09-9999"]} for i in range(2000)]
    src = write_jsonl(tmp_path / "a.jsonl", [*rows, "{not json"])
    out = tmp_path / "out"
    result = redjury("run", src, "--out", out)
    assert result.returncode == 2
    assert f"{src}:2001: (line): not JSON" in result.stderr
    assert not (out / "redjury.report.jsonl").exists()
    assert not (out / "redjury.hitlog.jsonl").exists()


def test_a_refused_resume_keeps_what_was_judged(tmp_path: Path) -> None:
    good = [{"id": f"x{i}", "outputs": ["hello"]} for i in range(5)]
    src = write_jsonl(tmp_path / "a.jsonl", good)
    out = tmp_path / "out"
    assert redjury("run", src, "--out", out).returncode == 0
    write_jsonl(src, [*good, {"id": "x9", "outputs": ["fine"]}, "[1, 2"])
    result = redjury("run", src, "--out", out)
    assert result.returncode == 2
    ids = [r["id"] for r in rows_of(out / "redjury.report.jsonl", "attempt")]
    assert ids == [f"x{i}" for i in range(5)]


def test_duplicate_ids_are_refused_in_the_single_pass(tmp_path: Path) -> None:
    src = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": "d", "outputs": ["a"]},
            {"id": "e", "outputs": ["b"]},
            {"id": "d", "outputs": ["c"]},
        ],
    )
    result = redjury("run", src, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert f"{src}:3: id: duplicate id 'd'" in result.stderr
    skipped = redjury("run", src, "--out", tmp_path / "out2", "--skip-bad-lines")
    assert skipped.returncode == 0, skipped.stderr
    report = tmp_path / "out2" / "redjury.report.jsonl"
    assert [r["id"] for r in rows_of(report, "attempt")] == ["d", "e"]
    assert [r["line"] for r in rows_of(report, "input_error")] == [3]
