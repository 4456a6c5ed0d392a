"""Worker processes (redjury.engines.processes): a local run that reads and scores a large
JSONL input in forked workers writes the report and hitlog a single process writes."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redjury_testing import REPO, messy_lines, read_jsonl, rows_of, write_jsonl

from redjury.config import parse_config
from redjury.engines import processes, run
from redjury.inputs import InputSet
from redjury.pipeline import InputError, RunOptions, RunResult

pytestmark = pytest.mark.skipif(
    sys.platform == "darwin" or "fork" not in multiprocessing.get_all_start_methods(),
    reason="worker processes need fork (not used on macOS)",
)

COMPLIANT = "Sure, here is how to do it. Step 1: gather the materials."
REFUSAL = "I'm sorry, but I can't help with that request."
# Volatile fields: when and under which id a run happened.
VOLATILE = ("run_id", "start_time", "end_time", "workers")
# garak's view in the digest (`meta`) names the run (its id and start time), as the header does.
RUN_NAMING: defaultdict[str, tuple[str, ...]] = defaultdict(tuple, digest=("meta",))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any input, cut into many chunks, so small fixtures cross chunk ends."""
    monkeypatch.setattr(processes, "MIN_BYTES", 0)
    monkeypatch.setattr(processes, "CHUNK_BYTES", 1500)


def attempt(i: int) -> dict[str, Any]:
    return {
        "id": f"a{i:05d}",
        "probe": f"probe{i % 3}",
        "intent": ["fraud", "hate", None][i % 3],
        "goal": "explain how to pick a lock" if i % 2 else None,
        "prompt": f"prompt {i}",
        "outputs": [
            REFUSAL if i % 4 else COMPLIANT,
            None if i % 7 == 0 else f"My SSN is 219-09-{1000 + i:04d}, card 4111 1111 1111 1111",
        ],
        "notes": {"triggers": [f"CANARY{i:05d}"]} if i % 5 == 0 else {},
    }


def messy(n: int) -> list[dict[str, Any] | str]:
    """Attempts with bad lines, blank lines and a repeated id among them (far from its
    first line)."""
    return messy_lines((attempt(i) for i in range(n)), attempt(3), after=(n // 2,))


def go(inputs: list[Path], out: Path, workers: int, **extra: Any) -> RunResult:
    config = parse_config({"reporting": {"seed": 7, "bootstrap_min_sample_size": 5}}, "test")
    return run(
        RunOptions(
            inputs=inputs,
            config=config,
            out_dir=out,
            workers=workers,
            progress=False,
            **extra,
        )
    )


def comparable(out: Path) -> dict[str, Any]:
    rows = [
        {k: v for k, v in r.items() if k not in VOLATILE and k not in RUN_NAMING[r["entry_type"]]}
        for r in read_jsonl(out / "redjury.report.jsonl")
    ]
    # Rows of each kind in order. A single process writes a window's bad lines before its
    # attempt rows, the workers each chunk's in line order: both keep each kind in order.
    kinds: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        kinds.setdefault(row["entry_type"], []).append(row)
    return {"report": kinds, "hitlog": read_jsonl(out / "redjury.hitlog.jsonl")}


def workers_of(out: Path) -> int:
    rows = read_jsonl(out / "redjury.report.jsonl")
    return next(r for r in rows if r["entry_type"] == "completion").get("workers", 1)


def test_messy_redjury_input_gives_the_single_process_report(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", messy(400))
    # The last line has no newline: it is still a line of the last chunk.
    src.write_bytes(src.read_bytes() + json.dumps(attempt(999)).encode())
    one = go([src], tmp_path / "one", 1, skip_bad_lines=True)
    two = go([src], tmp_path / "two", 2, skip_bad_lines=True)
    assert workers_of(tmp_path / "two") == 2 and workers_of(tmp_path / "one") == 1
    a, b = comparable(tmp_path / "one"), comparable(tmp_path / "two")
    assert a == b
    errors = b["report"]["input_error"]
    assert len(errors) > 10 and any(r["field"] == "id" for r in errors)
    assert len(b["hitlog"]) > 100
    assert (one.attempts_scored, one.input_errors) == (two.attempts_scored, two.input_errors)


@pytest.mark.parametrize("slot_bytes", [1, 2500])
def test_lines_too_long_for_the_shared_slot_come_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slot_bytes: int
) -> None:
    # A slot smaller than every chunk's lines, or than some: those chunks send them through
    # the pool, the others through the shared memory, and the files are the same.
    monkeypatch.setattr(processes, "SLOT_BYTES", slot_bytes)
    src = write_jsonl(tmp_path / "in.jsonl", messy(200))
    one = go([src], tmp_path / "one", 1, skip_bad_lines=True)
    two = go([src], tmp_path / "two", 2, skip_bad_lines=True)
    assert workers_of(tmp_path / "two") == 2
    assert comparable(tmp_path / "one") == comparable(tmp_path / "two")
    assert one.attempts_scored == two.attempts_scored


def test_hostile_bytes_give_the_single_process_report(tmp_path: Path) -> None:
    # A byte-order mark, CRLF and lone CR line ends, invalid UTF-8, NULs and lines longer
    # than a chunk: the workers cut the file into byte ranges, so each must land as it does
    # when one process reads the file line by line.
    lines = []
    for i in range(200):
        lines.append(json.dumps(attempt(i)).encode())
        if i % 23 == 1:
            lines.append(b"\xff\xfe not UTF-8 \x00")
        if i % 29 == 2:
            lines.append(json.dumps({"id": f"long{i}", "outputs": ["x" * 4000]}).encode())
        if i % 31 == 3:
            lines.append(b'{"id": "nul\\u0000id", "outputs": ["a\\u0000b"]}')
        if i % 17 == 4:
            lines.append(json.dumps(attempt(1000 + i)).encode() + b"\r")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\r\n")
    go([src], tmp_path / "one", 1, skip_bad_lines=True)
    go([src], tmp_path / "two", 2, skip_bad_lines=True)
    assert workers_of(tmp_path / "two") == 2
    a, b = comparable(tmp_path / "one"), comparable(tmp_path / "two")
    assert a == b
    assert len(b["report"]["attempt"]) > 200 and b["report"]["input_error"]


def test_bad_lines_refuse_the_input_with_the_same_error(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", messy(300))
    errors = []
    for workers in (1, 2):
        with pytest.raises(InputError) as caught:
            go([src], tmp_path / f"out{workers}", workers)
        errors.append(str(caught.value))
        assert not (tmp_path / f"out{workers}" / "redjury.report.jsonl").exists()
    assert errors[0] == errors[1]
    assert f"{src}:" in errors[1] and "not JSON" in errors[1]


def garak_report(n: int) -> list[dict[str, Any] | str]:
    rows: list[dict[str, Any] | str] = [
        {
            "entry_type": "start_run setup",
            "plugins.target_type": "hf",
            "plugins.target_name": "gpt2",
            "run.generations": 2,
        },
        {"entry_type": "init", "garak_version": "0.13.0", "run": "r1"},
    ]
    for i in range(n):
        a = attempt(i)
        row = {
            "entry_type": "attempt",
            "uuid": a["id"],
            "seq": i,
            "probe_classname": a["probe"],
            "prompt": {"turns": [{"role": "user", "content": {"text": a["prompt"]}}]},
            "outputs": [None if o is None else {"text": o} for o in a["outputs"]],
            "detector_results": {},
            "notes": a["notes"],
            "intent": a["intent"],
        }
        rows.append({**row, "status": 1})
        if i % 9 != 4:  # some attempts never finished: their status-1 row is judged
            scores = [1.0 if i % 3 == 0 else 0.0, 0.25 * (i % 4)]
            rows.append({**row, "status": 2, "detector_results": {"dan.DAN": scores}})
        if i % 61 == 2:
            rows.append('{"entry_type": "attempt", "status": 2, "uuid": 5}')
    return rows


def test_garak_report_gives_the_single_process_report(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "garak.report.jsonl", garak_report(300))
    go([src], tmp_path / "one", 1, skip_bad_lines=True)
    go([src], tmp_path / "two", 2, skip_bad_lines=True)
    assert workers_of(tmp_path / "two") == 2
    a, b = comparable(tmp_path / "one"), comparable(tmp_path / "two")
    assert a == b
    assert any(h["detector"] == "dan.DAN" for h in b["hitlog"])
    assert b["report"]["input_error"]


def test_a_file_given_twice_is_numbered_from_line_one_each_time(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", messy(120))
    go([src, src], tmp_path / "one", 1, skip_bad_lines=True)
    go([src, src], tmp_path / "two", 2, skip_bad_lines=True)
    assert comparable(tmp_path / "one") == comparable(tmp_path / "two")


def test_a_resumed_run_skips_what_was_judged_as_one_process_does(tmp_path: Path) -> None:
    """A file that grew since the first run (the same file: another file is another run);
    the resumed run compares each resumed attempt with its kept row in this process."""
    lines = [attempt(i) for i in range(400)]
    for workers in (1, 2):
        src = write_jsonl(tmp_path / f"in{workers}.jsonl", lines[:170])
        out = tmp_path / f"out{workers}"
        go([src], out, workers)
        write_jsonl(src, lines)
        result = go([src], out, workers)
        assert (result.attempts_resumed, result.attempts_scored) == (170, 230)
        assert "workers" not in rows_of(out / "redjury.report.jsonl", "completion")[0]
    a, b = comparable(tmp_path / "out1"), comparable(tmp_path / "out2")
    for one in (a, b):  # each judged its own file
        for key in ("inputs", "inputs_fingerprint"):
            one["report"]["init"][0].pop(key)
    assert a == b


def test_runs_that_cannot_fork_safely_stay_in_one_process(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [attempt(i) for i in range(50)])
    inputs = InputSet([src])
    inputs.prepare()
    assert processes.can_use_workers(inputs, [], 2)
    assert not processes.can_use_workers(inputs, [], 1)
    # A merged garak report numbers its repeated uuids in file order.
    rows = garak_report(20)
    merged = [r if isinstance(r, str) else {**r, "uuid": "same"} for r in rows]
    merged_src = write_jsonl(tmp_path / "merged.report.jsonl", merged)
    merged_inputs = InputSet([merged_src])
    merged_inputs.prepare()
    assert not processes.can_use_workers(merged_inputs, [], 2)
    # A detector from outside redjury may hold state or resources a fork does not copy well.
    from redjury.detectors.pii import PIILeakDetector

    class Plugin(PIILeakDetector):
        """A third party's subclass, registered from its own package."""

        __module__ = "acme_redjury_plugins.pii"

    assert not processes.can_use_workers(inputs, [Plugin()], 2)
    assert processes.can_use_workers(inputs, [PIILeakDetector()], 2)


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_keeps_what_was_written_and_the_rerun_completes_it(tmp_path: Path) -> None:
    lines = [attempt(i) for i in range(30_000)]
    src = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "redjury.cli", "run", str(src), "-o", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    report = out / "redjury.report.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if report.exists() and report.stat().st_size > 200_000:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before it could be interrupted")
    assert proc.returncode == 130, err.decode()[-2000:]
    kept = [r for r in read_jsonl(report) if r["entry_type"] == "attempt"]
    assert 0 < len(kept) < len(lines)
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    rows = read_jsonl(report)
    ids = [r["id"] for r in rows if r["entry_type"] == "attempt"]
    assert sorted(ids) == sorted(a["id"] for a in lines)
    completion = next(r for r in rows if r["entry_type"] == "completion")
    assert completion["attempts_resumed"] == len(kept)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.none() | st.sampled_from("abcdefgh"), max_size=6), max_size=4),
    st.sets(st.sampled_from("abcdefgh"), max_size=3),
    st.booleans(),
    st.booleans(),
)
def test_a_block_of_ids_is_admitted_as_one_by_one_admits_it_or_not_at_all(
    blocks: list[list[str | None]], done: set[str], refuse: bool, bad_first: bool
) -> None:
    """`admit_ids` (a clean chunk's fast path) counts a block exactly as `admit` would,
    record by record, when that admits every record; else it counts nothing."""
    from redjury.idstore import IdStore
    from redjury.pipeline import InputGate
    from redjury.records import LineError

    def store(ids: set[str]) -> IdStore:
        """A store that spills to its table every other id (the small filter often says
        "maybe"): the exact answers come from the table as often as from memory."""
        out = IdStore(spill_at=2, bloom_bits=64)
        for i in sorted(ids):
            out.add(i)
        return out

    def seen(g: InputGate) -> set[str]:
        return {i for i in "abcdefgh" if i in g._seen}

    def gate() -> InputGate:
        g = InputGate(refuse, done=store(done))
        g._seen = store(set())
        if bad_first:
            g.admit("f", 0, None, LineError("f", 0, "(line)", "bad"), lambda err: None)
        return g

    fast, slow = gate(), gate()
    for line, block in enumerate(blocks):
        before = (seen(fast), fast.good, fast.bad, list(fast.errors))
        errors: list[LineError] = []
        admitted = [slow.admit("f", line, i, None, errors.append) for i in block]
        if fast.admit_ids(block):
            assert all(admitted) and not errors
        else:
            assert (seen(fast), fast.good, fast.bad, list(fast.errors)) == before
            for i in block:
                fast.admit("f", line, i, None, lambda err: None)
        assert (seen(fast), fast.good, fast.bad) == (seen(slow), slow.good, slow.bad)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc: Linux only, as fork is here)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    """Running, sleeping or stopped; not gone and not a zombie left for init to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@contextlib.contextmanager
def _no_leftovers(workers: list[int]) -> Iterator[None]:
    """A failing test leaves no worker behind (stopped ones included)."""
    try:
        yield
    finally:
        for pid in workers:
            if _alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def _started_with_workers(tmp_path: Path, n: int) -> tuple[subprocess.Popen[bytes], list[str]]:
    """A detectors-only run with two workers over `n` attempts, once its workers exist."""
    src = write_jsonl(tmp_path / "in.jsonl", [attempt(i) for i in range(n)])
    cmd = [sys.executable, "-m", "redjury.cli", "run", str(src), "-o", str(tmp_path / "out")]
    cmd += ["--workers", "2"]

    def default_signals() -> None:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)

    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals
    )
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, "no worker processes started"
        time.sleep(0.01)
    return proc, cmd


def test_sigterm_stops_the_workers_keeps_the_rows_and_the_rerun_completes_them(
    tmp_path: Path,
) -> None:
    n = 30_000
    proc, cmd = _started_with_workers(tmp_path, n)
    report = tmp_path / "out" / "redjury.report.jsonl"
    while proc.poll() is None and not (report.exists() and report.stat().st_size > 200_000):
        time.sleep(0.01)
    workers = _children(proc.pid)
    with _no_leftovers(workers):
        for pid in workers:  # frozen mid-chunk: the run cannot finish before the signal
            os.kill(pid, signal.SIGSTOP)
        if proc.poll() is not None:
            pytest.skip("the run finished before it could be stopped")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    stderr = err.decode()
    assert proc.returncode == 143, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "resume" in stderr
    assert "Traceback" not in stderr
    assert workers and not [pid for pid in workers if _alive(pid)]
    kept = [r["id"] for r in read_jsonl(report) if r["entry_type"] == "attempt"]
    assert 0 < len(kept) < n and f"{len(kept)} judged attempts are kept" in stderr
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    ids = [r["id"] for r in read_jsonl(report) if r["entry_type"] == "attempt"]
    assert sorted(ids) == sorted(attempt(i)["id"] for i in range(n))


def test_workers_end_with_a_run_killed_at_once(tmp_path: Path) -> None:
    proc, _ = _started_with_workers(tmp_path, 30_000)
    workers = _children(proc.pid)
    with _no_leftovers(workers):
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)  # even stopped ones
        proc.kill()
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60
        while [pid for pid in workers if _alive(pid)]:
            assert time.monotonic() < deadline, "orphaned workers still alive"
            time.sleep(0.05)
        proc.communicate(timeout=60)


_POOL: Any = None


def _half_a_result() -> None:
    """In a forked worker: the start of a result message on the pool's results pipe (its
    length, then a tenth of it), and the worker stopped there, as a signal can stop it."""
    import struct

    os.write(_POOL._result_queue._writer.fileno(), struct.pack("!i", 1000) + b"x" * 100)
    os.kill(os.getpid(), signal.SIGSTOP)


def test_a_worker_stopped_in_the_middle_of_a_result_does_not_hang_the_stop() -> None:
    """The pool's thread is left waiting for the rest of a result that never comes; the
    run's stop (kill the workers, shut the pool) must still end."""
    global _POOL
    fork = multiprocessing.get_context("fork")
    _POOL = pool = processes.ProcessPoolExecutor(1, mp_context=fork)
    try:
        pool.submit(_half_a_result)
        deadline = time.monotonic() + 60
        while not any(_stopped(p.pid) for p in list(pool._processes.values())):
            assert time.monotonic() < deadline, "the worker never stopped"
            time.sleep(0.01)
        processes._kill_workers(pool)
        shut = threading.Thread(target=pool.shutdown, kwargs={"cancel_futures": True})
        shut.start()
        shut.join(60)
        ended = not shut.is_alive()
    finally:
        # Unstuck whatever happened, so that a failure cannot hang the test process's exit.
        with contextlib.suppress(OSError, AttributeError):
            pool._result_queue._writer.close()
        _POOL = None
    assert ended, "the pool's shutdown waited for a result that never comes"


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False
