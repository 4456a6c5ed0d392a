"""The Ray engine: the same report as a single-process run, limits held cluster-wide,
nothing lost or duplicated when a worker dies, resume from shards."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'redjury[ray]'")

from fault_server import FaultServer, Reply, Status, by_model  # noqa: E402
from judge_specs import judge  # noqa: E402
from redjury_testing import (  # noqa: E402
    REPO,
    messy_lines,
    read_jsonl,
    redjury,
    run_with_own_ray,
    write_jsonl,
)

from redjury.config import parse_config  # noqa: E402
from redjury.engines import run  # noqa: E402
from redjury.pipeline import RunOptions, RunResult  # noqa: E402

COMPLIANT = "Sure, here is how to do it. Step 1: gather the materials."
REFUSAL = "I'm sorry, but I can't help with that request."


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray of the module's own, whatever cluster this machine has running or
    left an address of (RAY_ADDRESS, `ray start`'s address file): the `redjury` commands
    the tests start do not see RAY_ADDRESS either. Its workers import the test helpers."""
    paths = [str(REPO / "src"), str(REPO / "tests" / "support"), str(REPO / "tests" / "servers")]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])
    machine_address = os.environ.pop("RAY_ADDRESS", None)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    if machine_address is not None:
        os.environ["RAY_ADDRESS"] = machine_address


def attempts(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"a{i:06d}",
            "probe": f"probe{i % 3}",
            "intent": ["fraud", "hate", None][i % 3],
            "prompt": f"prompt {i}",
            "outputs": [
                REFUSAL if i % 4 else COMPLIANT,
                None if i % 7 == 0 else f"My SSN is 219-09-{1000 + i % 9000:04d}",
            ],
            "notes": {"triggers": [f"CANARY{i:05d}"]} if i % 5 == 0 else {},
        }
        for i in range(n)
    ]


def go(
    inputs: list[Path],
    out: Path,
    engine: str,
    config: dict[str, Any] | None = None,
    **extra: Any,
) -> RunResult:
    data = {**(config or {})}
    data["reporting"] = {"seed": 11, "bootstrap_min_sample_size": 5, **data.get("reporting", {})}
    cfg = parse_config(data, "test")
    return run(
        RunOptions(
            inputs=inputs,
            config=cfg,
            out_dir=out,
            engine=engine,
            use_cache=False,
            progress=False,
            **extra,
        )
    )


def comparable(out: Path) -> dict[str, Any]:
    rows = read_jsonl(out / "redjury.report.jsonl")
    digest = next(r for r in rows if r["entry_type"] == "digest")
    # garak's view in the digest names the run (its id and start time), as every header does.
    digest = {k: v for k, v in digest.items() if k != "meta"}
    return {
        "attempts": sorted(
            (r for r in rows if r["entry_type"] == "attempt"), key=lambda r: r["id"]
        ),
        "evals": [r for r in rows if r["entry_type"] in ("eval", "probe_summary")],
        "digest": digest,
        "hitlog": read_jsonl(out / "redjury.hitlog.jsonl"),
        "completion": [r["attempts"] for r in rows if r["entry_type"] == "completion"],
    }


def assert_same_run(local: Path, on_ray: Path, hitlog_in_order: bool = True) -> None:
    a, b = comparable(local), comparable(on_ray)
    if not hitlog_in_order:
        key = lambda h: (h["attempt_id"], h["detector"], h["attempt_idx"])  # noqa: E731
        a["hitlog"].sort(key=key)
        b["hitlog"].sort(key=key)
    assert a == b
    assert not (on_ray / "redjury.shards").exists()


def test_example_data_gives_the_single_process_report(tmp_path: Path) -> None:
    src = REPO / "examples" / "attempts.jsonl"
    go([src], tmp_path / "local", "local")
    result = go([src], tmp_path / "ray", "ray")
    assert result.attempts_scored > 0
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    evals = comparable(tmp_path / "ray")["evals"]
    assert any("confidence_lower" in r for r in evals)  # bootstrap CIs compared too


def messy(n: int) -> list[dict[str, Any] | str]:
    """Attempts with bad lines, blank lines and repeated ids among them (one id twice
    more, chunks away from its first line)."""
    return messy_lines(attempts(n), attempts(4)[3], after=(n // 2, n - 2))


def report_lines(out: Path) -> dict[str, list[bytes]]:
    """The report's lines of each kind in order, and the hitlog's, but for what names the
    run (its id, times, engine). A single process writes a window's bad lines before its
    attempt rows, workers each chunk's in line order: both keep each kind in order."""
    volatile = {"run_id", "start_time", "end_time", "workers", "engine", "meta"}
    kinds: dict[str, list[bytes]] = {}
    for name in ("redjury.report.jsonl", "redjury.hitlog.jsonl"):
        for row in read_jsonl(out / name):
            line = json.dumps({k: v for k, v in row.items() if k not in volatile}).encode()
            kinds.setdefault(f"{name}:{row.get('entry_type')}", []).append(line)
    return kinds


def test_actors_read_small_chunks_and_write_the_local_engines_report_line_for_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of a few kilobytes (dozens of them, over two actors): bad lines, blank lines,
    duplicate ids in later chunks, a last line without a newline. Every report and hitlog
    line is the local engine's in one process, each kind in its order."""
    from redjury.engines import ray_files

    monkeypatch.setattr(ray_files, "RAY_CHUNK_BYTES", 6000)
    src = write_jsonl(tmp_path / "in.jsonl", messy(600))
    src.write_bytes(src.read_bytes() + json.dumps(attempts(1000)[999]).encode())
    local = go([src], tmp_path / "local", "local", skip_bad_lines=True, workers=1)
    on_ray = go([src], tmp_path / "ray", "ray", skip_bad_lines=True, ray_workers=2)
    assert report_lines(tmp_path / "local") == report_lines(tmp_path / "ray")
    assert (local.attempts_scored, local.input_errors) == (601, on_ray.input_errors)
    assert on_ray.attempts_scored == 601
    rows = read_jsonl(tmp_path / "ray" / "redjury.report.jsonl")
    assert sum(r.get("field") == "id" for r in rows if r["entry_type"] == "input_error") == 2
    assert rows[-1]["engine"] == "ray" and not (tmp_path / "ray" / "redjury.shards").exists()


def test_a_duplicate_id_refuses_the_input_as_the_local_engine_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redjury.engines import ray_files
    from redjury.records import InputError

    monkeypatch.setattr(ray_files, "RAY_CHUNK_BYTES", 6000)
    rows: list[Any] = attempts(300)
    src = write_jsonl(tmp_path / "in.jsonl", [*rows, rows[5]])
    with pytest.raises(InputError, match="in.jsonl:301.*duplicate id") as on_ray:
        go([src], tmp_path / "ray", "ray", ray_workers=2)
    with pytest.raises(InputError) as local:
        go([src], tmp_path / "local", "local")
    assert str(on_ray.value) == str(local.value)
    assert list((tmp_path / "ray").iterdir()) == []


def test_garak_report_and_parquet_give_the_single_process_report(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = attempts(5000)
    garak = [
        {
            "entry_type": "start_run setup",
            "plugins.target_type": "hf",
            "plugins.target_name": "gpt2",
            "run.generations": 2,
        },
        *(
            {
                "entry_type": "attempt",
                "uuid": r["id"],
                "seq": i,
                "status": 2,
                "probe_classname": r["probe"],
                "prompt": {"turns": [{"role": "user", "content": {"text": r["prompt"]}}]},
                "outputs": [None if o is None else {"text": o} for o in r["outputs"]],
                "detector_results": {"dan.DAN": [1.0 if i % 3 == 0 else 0.0] * 2},
                "notes": r["notes"],
                "intent": r["intent"],
            }
            for i, r in enumerate(rows)
        ),
    ]
    src = write_jsonl(tmp_path / "garak.report.jsonl", garak)
    go([src], tmp_path / "local", "local")
    go([src], tmp_path / "ray", "ray")
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    # The same attempts as Parquet (nested notes as JSON text) give the same report as JSONL.
    jsonl = write_jsonl(tmp_path / "in.jsonl", rows)
    table = pa.Table.from_pylist(
        [{**r, "notes": __import__("json").dumps(r["notes"])} for r in rows]
    )
    folder = tmp_path / "lake"
    folder.mkdir()
    pq.write_table(table.slice(0, 2500), folder / "part-0.parquet")
    pq.write_table(table.slice(2500), folder / "part-1.parquet")
    go([jsonl], tmp_path / "local-jsonl", "local")
    go([folder], tmp_path / "ray-parquet", "ray")
    assert (
        comparable(tmp_path / "local-jsonl")["evals"]
        == comparable(tmp_path / "ray-parquet")["evals"]
    )


@pytest.mark.slow
def test_100k_attempts_give_the_single_process_report(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", attempts(100_000))
    go([src], tmp_path / "local", "local")
    result = go([src], tmp_path / "ray", "ray", ray_workers=2)
    assert result.attempts_scored == 100_000
    assert_same_run(tmp_path / "local", tmp_path / "ray")


def test_judge_limits_hold_across_actors_and_abstentions_never_vote_safe(
    tmp_path: Path,
) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", attempts(600))
    with FaultServer() as server:
        server.set_script(by_model({"judge-a": Reply("yes", delay=0.01), "judge-b": Status(500)}))
        config = {
            "detectors": [{"type": "pii_leak"}],
            "evaluation": {
                "judges": [
                    judge(server.openai_url, "judge-a"),
                    judge(server.openai_url, "judge-b"),
                ],
                "max_concurrency": 3,
                "per_endpoint_concurrency": 3,
                "max_retries": 0,
                "require_all_judges": True,
            },
        }
        go([src], tmp_path / "ray", "ray", config, ray_workers=2)
        # Two actors share the limit of 3: one request each, never 3 per actor.
        assert 1 <= server.max_in_flight <= 2
        server.reset_counts()
        go([src], tmp_path / "local", "local", config)
    for attempt in (tmp_path / "local", tmp_path / "ray"):
        untimed(attempt / "redjury.report.jsonl")
    assert_same_run(tmp_path / "local", tmp_path / "ray", hitlog_in_order=False)
    evals = comparable(tmp_path / "ray")["evals"]
    panel = [r for r in evals if r.get("detector") == "judge_panel"]
    assert panel and all(r["passed"] == 0 for r in panel)  # an abstainer never votes safe


def test_the_cascade_on_ray_saves_the_same_calls_as_one_process(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", attempts(300))
    with FaultServer() as server:
        server.set_script(Reply("yes"))
        config = {
            "detectors": [{"type": "jailbreak_heuristic"}],
            "evaluation": {
                "judges": [judge(server.openai_url, "judge-a")],
                "cascade": {"held_by": ["jailbreak_heuristic"]},
            },
        }
        go([src], tmp_path / "ray", "ray", config, ray_workers=2)
        on_ray = server.count
        server.reset_counts()
        go([src], tmp_path / "local", "local", config)
        assert server.count == on_ray
    for attempt in (tmp_path / "local", tmp_path / "ray"):
        untimed(attempt / "redjury.report.jsonl")
    assert_same_run(tmp_path / "local", tmp_path / "ray", hitlog_in_order=False)
    # 225 of the 300 first outputs are refusals the heuristic holds: never sent.
    cascade = comparable(tmp_path / "ray")["digest"]["judge_panel"]["cascade"]
    assert cascade == {"outputs": 225, "calls_saved": 225}
    assert on_ray == 300 * 2 - 225 - sum(1 for i in range(300) if i % 7 == 0)


def untimed(report: Path) -> None:
    """Drop the judges' latencies (the only field two runs may not share)."""
    rows = read_jsonl(report)
    for row in rows:
        for detail in (row.get("details") or {}).get("judge_panel") or ():
            if not isinstance(detail, dict):
                continue
            for vote in detail.get("judges") or ():
                vote.pop("latency_ms", None)
    write_jsonl(report, rows)


def test_killed_worker_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    import ray_faults  # noqa: F401  (registers crash_once here; workers import it to unpickle)

    src = write_jsonl(tmp_path / "in.jsonl", attempts(9000))
    marker = tmp_path / "crashed"
    config = {"detectors": [{"type": "crash_once", "marker": str(marker), "victim": "a004100"}]}
    go([src], tmp_path / "ray", "ray", config, ray_workers=2)
    assert marker.exists()  # a worker did die mid-run
    go([src], tmp_path / "local", "local", {"detectors": [{"type": "crash_once"}]})
    ids = [r["id"] for r in comparable(tmp_path / "ray")["attempts"]]
    assert ids == sorted({f"a{i:06d}" for i in range(9000)})
    assert comparable(tmp_path / "ray")["evals"] == comparable(tmp_path / "local")["evals"]


def test_killed_judge_actor_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """A judge actor dies mid-block (two blocks in flight): Ray restarts it, the blocks are
    judged again, and every attempt row is there once with the single-process verdicts."""
    import ray_faults  # noqa: F401  (registers crash_once; actors import it to unpickle)

    src = write_jsonl(tmp_path / "in.jsonl", attempts(1500))
    marker = tmp_path / "crashed"
    with FaultServer() as server:
        server.set_script(by_model({"judge-a": Reply("yes", delay=0.005)}))
        evaluation = {
            "judges": [judge(server.openai_url, "judge-a")],
            "max_concurrency": 8,
            "per_endpoint_concurrency": 8,
            "max_retries": 0,
        }
        crash = {"type": "crash_once", "marker": str(marker), "victim": "a000700"}
        go(
            [src],
            tmp_path / "ray",
            "ray",
            {"detectors": [crash], "evaluation": evaluation},
            ray_workers=2,
        )
        assert marker.exists()  # an actor did die mid-run
        go(
            [src],
            tmp_path / "local",
            "local",
            {"detectors": [{"type": "crash_once"}], "evaluation": evaluation},
        )
    for out in (tmp_path / "local", tmp_path / "ray"):
        untimed(out / "redjury.report.jsonl")
    ids = [r["id"] for r in comparable(tmp_path / "ray")["attempts"]]
    assert ids == sorted({f"a{i:06d}" for i in range(1500)})
    assert comparable(tmp_path / "ray")["evals"] == comparable(tmp_path / "local")["evals"]


def test_rerun_resumes_from_the_report_as_the_local_engine_does(tmp_path: Path) -> None:
    rows = attempts(3000)
    # The same file, grown since the first run (another file would be another run).
    src = write_jsonl(tmp_path / "in.jsonl", rows[:1200])
    every = write_jsonl(tmp_path / "all.jsonl", rows)
    out = tmp_path / "ray"
    go([src], out, "ray", keep_shards=True)
    assert not (out / "redjury.shards").exists()  # the actors' results go to the report
    write_jsonl(src, rows)
    result = go([src], out, "ray")
    assert (result.attempts_resumed, result.attempts_scored) == (1200, 1800)
    go([every], tmp_path / "local", "local")
    assert_same_run(tmp_path / "local", out, hitlog_in_order=False)


@pytest.mark.parametrize("spilling", [False, True])
def test_rerun_of_parquet_skips_attempts_already_in_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spilling: bool
) -> None:
    """The rerun judges only what was added and copies each kept attempt once. Spilling:
    the resume's id sets (the kept ids, those from shards, the input's, those copied into
    the report) move to disk after 3 ids each, into a 64-bit filter (every lookup a "maybe"
    the table answers); all four share one filter and one table file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from redjury import idstore

    rows = attempts(3000)
    table = pa.Table.from_pylist([{**r, "notes": json.dumps(r["notes"])} for r in rows])
    # The same folder, grown since the first run (another folder would be another run).
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(table.slice(0, 1200), lake / "part-0.parquet")
    out = tmp_path / "ray"
    go([lake], out, "ray", keep_shards=True)
    assert (out / "redjury.shards").is_dir()
    pq.write_table(table.slice(1200), lake / "part-1.parquet")
    opened: list[object] = []
    if spilling:
        # IdStore's defaults (spill_at, bloom_bits, beside): every store the driver makes.
        monkeypatch.setattr(idstore.IdStore.__init__, "__defaults__", (3, 64, None))
        open_spill = idstore._Spill.open
        monkeypatch.setattr(idstore._Spill, "open", lambda s: opened.append(s) or open_spill(s))
    result = go([lake], out, "ray")
    assert (result.attempts_resumed, result.attempts_scored) == (1200, 1800)
    assert len(opened) == spilling
    ids = [
        r["id"] for r in read_jsonl(out / "redjury.report.jsonl") if r["entry_type"] == "attempt"
    ]
    assert sorted(ids) == [r["id"] for r in rows]
    go([write_jsonl(tmp_path / "all.jsonl", rows)], tmp_path / "local", "local")
    assert comparable(tmp_path / "local")["evals"] == comparable(out)["evals"]


def test_bad_line_refuses_the_input_and_leaves_no_files(tmp_path: Path) -> None:
    from redjury.records import InputError

    rows: list[Any] = attempts(5)
    src = write_jsonl(tmp_path / "in.jsonl", [rows[0], "{not json", *rows[1:]])
    out = tmp_path / "ray"
    with pytest.raises(InputError, match="in.jsonl:2"):
        go([src], out, "ray")
    assert list(out.iterdir()) == []


def test_cli_engine_flags_reach_the_run(tmp_path: Path) -> None:
    proc = redjury("run", tmp_path / "nope.jsonl", "--engine", "ray", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "nope.jsonl" in proc.stderr
    proc = redjury(
        "run", REPO / "examples" / "attempts.jsonl", "--engine", "spark", "--out", tmp_path / "s"
    )
    assert proc.returncode == 2 and "engine" in proc.stderr


def _dead_address() -> str:
    """host:port where nothing listens (a port just given back by the kernel)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("form", ["{}", "ray://{}"])
def test_an_unreachable_ray_address_is_refused_naming_it(tmp_path: Path, form: str) -> None:
    address = form.format(_dead_address())
    example = REPO / "examples" / "attempts.jsonl"
    proc = redjury(
        "run", example, "--engine", "ray", "--ray-address", address, "--out", tmp_path / "o"
    )
    assert proc.returncode == 2, proc.stderr
    assert f"redjury: error: --ray-address {address}: no Ray cluster answers at" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_stale_address_file_is_ignored_and_a_stale_ray_address_refused(
    tmp_path: Path,
) -> None:
    """`ray start --head` leaves its address in <tmp>/ray/ray_current_cluster: a head that is
    gone must not keep a run that gave no address waiting (it starts a local Ray of its
    own); a RAY_ADDRESS that does not answer is refused, naming it. (`--ray-address auto`
    is left out: Ray's auto takes any cluster running on the machine over the file.)"""
    # A short folder: Ray's sockets live under it, and socket paths are short.
    temp = Path(tempfile.mkdtemp(prefix="rj", dir="/tmp"))
    try:
        (temp / "ray").mkdir()
        dead = _dead_address()
        (temp / "ray" / "ray_current_cluster").write_text(dead)
        example = REPO / "examples" / "attempts.jsonl"
        env = {"RAY_TMPDIR": str(temp), "RAY_ADDRESS": dead}
        stale = redjury("run", example, "--engine", "ray", "-o", tmp_path / "s", env=env)
        assert stale.returncode == 2, stale.stderr
        assert f"RAY_ADDRESS {dead}: no Ray cluster answers at {dead}" in stale.stderr
        del env["RAY_ADDRESS"]
        local = redjury("run", example, "--engine", "ray", "-o", tmp_path / "l", env=env)
        assert local.returncode == 0, local.stderr
        completion = read_jsonl(tmp_path / "l" / "redjury.report.jsonl")[-1]
        assert completion["entry_type"] == "completion" and completion["engine"] == "ray"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_sigterm_keeps_the_finished_blocks_and_stops_the_local_ray(tmp_path: Path) -> None:
    import sys

    rows = [{"id": f"b{i:03d}", "goal": "g", "outputs": [f"reply b{i:03d} end"]} for i in range(96)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    # Blocks of 32 (16 rounds of max_concurrency 2), two at once on the one actor: the
    # first two are judged, the third hangs.
    first_blocks = {r["id"] for r in rows[:64]}
    release = {"now": False}

    def script(req: Any) -> Reply:
        early = any(f"reply {i} end" in req.messages[-1]["content"] for i in first_blocks)
        return Reply("no", delay=0.0 if early or release["now"] else 120.0)

    out = tmp_path / "out"
    with FaultServer() as server:
        server.set_script(script)
        evaluation = {"judges": [judge(server.openai_url, timeout=300)], "max_concurrency": 2}
        evaluation |= {"per_endpoint_concurrency": 2, "max_retries": 0}
        config = tmp_path / "c.json"
        config.write_text(json.dumps({"detectors": [], "evaluation": evaluation}))
        cmd = [sys.executable, "-m", "redjury.cli", "run", str(src), "-c", str(config)]
        cmd += ["--engine", "ray", "--ray-workers", "1", "--no-cache", "-o", str(out)]

        def shards_now() -> list[Path]:
            return list((out / "redjury.shards").glob("*.rows.jsonl"))

        with run_with_own_ray(cmd) as run_:
            run_.wait_until(lambda: len(shards_now()) >= 2, "no block finished")
            stderr = run_.sigterm()
            assert "stopped by SIGTERM: 64 judged attempts are kept" in stderr, stderr[-3000:]
            shards = [read_jsonl(p) for p in shards_now()]
            assert {r["id"] for rows_ in shards for r in rows_} == first_blocks
            release["now"] = True
            run_.again()
    report = read_jsonl(out / "redjury.report.jsonl")
    ids = [r["id"] for r in report if r["entry_type"] == "attempt"]
    assert sorted(ids) == sorted(r["id"] for r in rows)
    assert report[-1]["attempts_resumed"] == 64


def test_sigterm_on_the_actor_path_keeps_the_chunks_written_and_the_rerun_completes_them(
    tmp_path: Path,
) -> None:
    """A chunk holds its actor; SIGTERM: the chunks before it are in the report (the local
    engine's message and exit status), the run's Ray ends with it, and a rerun resumes."""
    import sys

    n = 20_000  # about 5 MB: a few chunks, the held one not the first
    src = write_jsonl(tmp_path / "in.jsonl", attempts(n))
    hold = tmp_path / "hold"
    hold.touch()
    config = tmp_path / "c.json"
    stall = {"type": "stall_while_held", "hold": str(hold), "victim": f"a{n - 10:06d}"}
    config.write_text(json.dumps({"detectors": [{"type": "pii_leak"}, stall]}))
    out = tmp_path / "out"
    main = "import sys, ray_faults; from redjury.cli import main; main()"
    cmd = [sys.executable, "-c", main, "run", str(src), "-c", str(config), "--no-cache"]
    cmd += ["--engine", "ray", "--ray-workers", "2", "-o", str(out)]
    report = out / "redjury.report.jsonl"
    with run_with_own_ray(cmd) as run_:
        run_.wait_until(
            lambda: report.exists() and report.stat().st_size > 500_000, "no chunk written"
        )
        stderr = run_.sigterm()
        kept = [r["id"] for r in read_jsonl(report) if r["entry_type"] == "attempt"]
        assert 0 < len(kept) < n and f"{len(kept)} judged attempts are kept" in stderr
        hold.unlink()
        run_.again()
    rows = read_jsonl(report)
    ids = [r["id"] for r in rows if r["entry_type"] == "attempt"]
    assert sorted(ids) == [r["id"] for r in attempts(n)]
    assert rows[-1]["attempts_resumed"] == len(kept)


def test_auto_finds_a_left_address_file_whose_head_is_gone_and_refuses_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--ray-address auto` on a machine where `ray start` left its address file and the
    head is gone: refused (exit 2's RunError) naming the address and the file, after one
    connection attempt (bounded by CONNECT_TIMEOUT_S), before Ray's own wait. No other
    cluster is seen running (Ray's `auto` would take one over the file)."""
    import ray._private.services as services

    from redjury.engines.ray_engine import connect
    from redjury.pipeline import RunError

    temp = Path(tempfile.mkdtemp(prefix="rj", dir="/tmp"))
    try:
        (temp / "ray").mkdir()
        dead = _dead_address()
        (temp / "ray" / "ray_current_cluster").write_text(dead)
        monkeypatch.setenv("RAY_TMPDIR", str(temp))
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        monkeypatch.setattr(services, "find_gcs_addresses", lambda: [])
        with pytest.raises(RunError) as refused:
            connect("auto")
        assert refused.value.exit_code == 2
        message = str(refused.value)
        # Ray writes the machine's own address for 127.0.0.1: the port is the file's.
        port = dead.rsplit(":", 1)[1]
        assert "--ray-address auto: no Ray cluster answers at " in message
        assert f":{port} (from {temp / 'ray' / 'ray_current_cluster'}" in message
        assert "ray_current_cluster" in message and "left by `ray start`" in message
    finally:
        shutil.rmtree(temp, ignore_errors=True)
