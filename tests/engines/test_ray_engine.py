"""The Ray engine: the same report as a single-process run, limits held cluster-wide,
nothing lost or duplicated when a worker dies, resume from shards."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'redjury[ray]'")

from fault_server import FaultServer, Reply, Status, by_model  # noqa: E402
from judge_specs import judge  # noqa: E402
from redjury_testing import REPO, read_jsonl, redjury, write_jsonl  # noqa: E402

from redjury.config import parse_config  # noqa: E402
from redjury.pipeline import RunOptions, RunResult, run  # noqa: E402

COMPLIANT = "Sure, here is how to do it. Step 1: gather the materials."
REFUSAL = "I'm sorry, but I can't help with that request."


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray for the module; its workers import the test helpers too."""
    paths = [str(REPO / "src"), str(REPO / "tests" / "support"), str(REPO / "tests" / "servers")]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


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


def test_rerun_skips_attempts_already_in_shards(tmp_path: Path) -> None:
    rows = attempts(3000)
    # The same file, grown since the first run (another file would be another run).
    src = write_jsonl(tmp_path / "in.jsonl", rows[:1200])
    every = write_jsonl(tmp_path / "all.jsonl", rows)
    out = tmp_path / "ray"
    go([src], out, "ray", keep_shards=True)
    assert (out / "redjury.shards").is_dir()
    write_jsonl(src, rows)
    result = go([src], out, "ray")
    assert (result.attempts_resumed, result.attempts_scored) == (1200, 1800)
    go([every], tmp_path / "local", "local")
    assert_same_run(tmp_path / "local", out, hitlog_in_order=False)


def test_bad_line_refuses_the_input_and_leaves_no_files(tmp_path: Path) -> None:
    from redjury.inputs import InputError

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
