"""The run folder: outputs that would destroy inputs or each other, links, the folder's lock."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer, Reply
from redjury_testing import read_jsonl, redjury, rows_of, write_jsonl

import redjury as rj
from redjury.errors import RunError
from redjury.report.folder import LOCK_NAME, FolderLock

REPORT = "redjury.report.jsonl"


def attempts(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"a{i}", "probe": "p", "goal": f"goal {i}", "outputs": [f"reply {i}"]}
        for i in range(n)
    ]


def test_junit_naming_the_input_or_the_report_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    original = src.read_bytes()
    proc = redjury("run", src, "--out", out, "--junit", src)
    assert proc.returncode == 2 and "is an input file of this run" in proc.stderr
    assert src.read_bytes() == original and not (out / REPORT).exists()
    proc = redjury("run", src, "--out", out, "--junit", out / REPORT)
    assert proc.returncode == 2 and "is this run's report" in proc.stderr
    assert not (out / REPORT).exists()


def test_a_link_planted_at_an_output_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (out / "redjury.report.html").symlink_to(precious)
    proc = redjury("run", src, "--out", out, "--html")
    assert proc.returncode == 2 and "symbolic link" in proc.stderr
    assert precious.read_text() == "keep me\n"
    (out / "redjury.report.html").unlink()
    (out / REPORT).symlink_to(precious)
    proc = redjury("run", src, "--out", out)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr
    assert precious.read_text() == "keep me\n"


def test_markdown_summary_over_the_report_is_refused(tmp_path: Path) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    assert redjury("run", src, "--out", out).returncode == 0
    before = (out / REPORT).read_bytes()
    proc = redjury("summary", out, "--markdown", out / REPORT)
    assert proc.returncode == 2 and "is the run's report" in proc.stderr
    assert (out / REPORT).read_bytes() == before


def test_a_second_run_on_a_folder_in_use_exits_2_naming_the_folder_and_the_process(
    tmp_path: Path,
) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    out.mkdir()
    lock = FolderLock(out)
    lock.acquire()
    try:
        proc = redjury("run", src, "--out", out)
        assert proc.returncode == 2
        assert f"{out}: in use by another redjury run (process {os.getpid()})" in proc.stderr
        assert not (out / REPORT).exists()
        with pytest.raises(RunError, match="in use by another redjury run"):
            rj.evaluate(attempts(3), out=out)
    finally:
        lock.release()
    assert redjury("run", src, "--out", out).returncode == 0
    assert not (out / LOCK_NAME).exists(), "the lock goes with the run"


def test_concurrent_evaluate_calls_into_one_folder_never_mix_their_rows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcomes: list[str] = []

    def one() -> None:
        try:
            rj.evaluate(attempts(200), out=out)
            outcomes.append("ran")
        except RunError as exc:
            assert "in use by another redjury run" in str(exc)
            outcomes.append("refused")

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 4 and "ran" in outcomes
    rows = read_jsonl(out / REPORT)
    assert [r["entry_type"] for r in rows].count("init") == 1
    ids = [r["id"] for r in rows if r["entry_type"] == "attempt"]
    assert sorted(ids) == sorted(f"a{i}" for i in range(200))
    assert [r["entry_type"] for r in rows][-1] == "completion"


def test_the_run_folder_removed_during_the_run_is_an_error_not_a_printed_path(
    tmp_path: Path,
) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"

    def script(req: Any) -> Reply:
        shutil.rmtree(out, ignore_errors=True)
        return Reply("no")

    cfg = tmp_path / "c.yaml"
    with FaultServer() as server:
        judge = {"name": "j", "connection": {"base_url": server.openai_url}}
        cfg.write_text(json.dumps({"evaluation": {"judges": [judge]}}))
        server.set_script(script)
        proc = redjury("run", src, "--out", out, "--config", cfg, "--no-preflight", "--no-cache")
    assert server.posts, "the judge was asked while the folder went away"
    assert proc.returncode == 2
    assert "removed or replaced during the run" in proc.stderr
    assert "report:" not in proc.stdout


def test_outputs_written_beside_a_link_replace_the_link_not_its_target(tmp_path: Path) -> None:
    """A link planted after the run's checks (at the JUnit path) is replaced, never written
    through."""
    from redjury.report.digest import load_report
    from redjury.report.junit import write_junit

    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    assert redjury("run", src, "--out", out).returncode == 0
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    target = tmp_path / "junit.xml"
    target.symlink_to(precious)
    write_junit(load_report(out, 0), target)
    assert precious.read_text() == "keep me\n"
    assert not target.is_symlink() and "<testsuites" in target.read_text()
    assert rows_of(out / REPORT, "completion")


def test_markdown_to_a_pipe_or_device_is_written_not_replaced(tmp_path: Path) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", attempts(3)), tmp_path / "out"
    assert redjury("run", src, "--out", out, "--junit", os.devnull).returncode == 0
    assert Path(os.devnull).is_char_device()
    proc = redjury("summary", out, "--markdown", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert "## redjury results" in proc.stdout


def test_evaluate_refuses_an_output_that_is_its_input(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", attempts(3))
    original = src.read_bytes()
    with pytest.raises(RunError, match="is an input file of this run"):
        rj.evaluate(src, {"reporting": {"junit": str(src)}}, out=tmp_path / "out")
    out = tmp_path / "out"
    rj.evaluate(src, out=out)
    report = (out / REPORT).read_bytes()
    with pytest.raises(RunError, match="is this run's report, not an input"):
        rj.evaluate(out / REPORT, out=out)
    assert src.read_bytes() == original and (out / REPORT).read_bytes() == report
