"""The public Python API: the same results as the command line, in memory or in a folder."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer, Reply
from redjury_testing import REPO, read_jsonl, rows_of, write_jsonl
from redjury_testing import redjury as run_cli

import redjury

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def _cli_rows(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    report = out / "redjury.report.jsonl"
    evals = rows_of(report, "eval") + rows_of(report, "probe_summary")
    verdicts = {r["id"]: r["verdicts"] for r in rows_of(report, "attempt")}
    return evals, read_jsonl(out / "redjury.hitlog.jsonl"), verdicts


def _api_rows(results: redjury.Results) -> tuple[list, list, dict]:
    evals = results.evals + results.probe_summaries
    verdicts = {r["id"]: r["verdicts"] for r in results.attempts}
    return evals, results.hitlog, verdicts


def _same_run(cli_out: Path, results: redjury.Results) -> None:
    cli_evals, cli_hits, cli_verdicts = _cli_rows(cli_out)
    api_evals, api_hits, api_verdicts = _api_rows(results)
    assert api_evals == cli_evals
    assert api_hits == cli_hits
    assert api_verdicts == cli_verdicts


def test_evaluate_in_memory_equals_the_command_line_on_the_example(tmp_path: Path) -> None:
    cli = run_cli("run", EXAMPLE, "--out", tmp_path / "cli", "--seed", "5")
    assert cli.returncode == 0, cli.stderr
    results = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 5}})
    assert results.out_dir is None
    assert not (tmp_path / "api").exists()
    _same_run(tmp_path / "cli", results)
    # The terminal's lines, not printed but kept.
    terminal = [line for line in cli.stdout.splitlines() if ": " in line and "ok on" in line]
    assert results.summary().splitlines() == terminal


def test_evaluate_takes_attempt_objects_and_dicts() -> None:
    attempts = [
        redjury.Attempt(id="a", outputs=["My SSN is 219-09-9999"]),
        {"id": "b", "outputs": ["nothing to see"]},
    ]
    results = redjury.evaluate(attempts, {"detectors": [{"type": "pii_leak"}]})
    assert results.verdicts("pii_leak") == {"a": ["BROKE_THROUGH"], "b": ["HELD"]}
    [row] = results.evals
    assert (row["passed"], row["fails"]) == (1, 1)
    # Found PII is masked in what the results hold, as in the files.
    assert "219-09-9999" not in json.dumps(results.rows)


def test_evaluate_reports_a_bad_dict_by_its_position() -> None:
    with pytest.raises(redjury.InputError) as info:
        redjury.evaluate([{"id": "a", "outputs": ["x"]}, {"outputs": ["no id"]}])
    assert "<attempts>:2: id:" in str(info.value)


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"id": "a", "outputs": ["x"], 1: "y"}, "<attempts>:1: (attempt): a top-level key"),
        ({"id": "a", "outputs": ["x"], "usage": {1: 10}}, "<attempts>:1: usage: a key is not"),
    ],
)
def test_evaluate_refuses_a_key_that_is_not_text(bad: dict[Any, Any], where: str) -> None:
    # Dropped without a word before: usage {1: 10} read as no usage, so a budget went unchecked.
    with pytest.raises(redjury.InputError) as info:
        redjury.evaluate([bad])
    assert where in str(info.value)


def test_evaluate_with_out_writes_the_same_folder_as_the_cli(tmp_path: Path) -> None:
    garak = _garak_report(tmp_path / "garak.report.jsonl")
    cli = run_cli("run", garak, "--out", tmp_path / "cli", "--seed", "9")
    assert cli.returncode == 0, cli.stderr
    results = redjury.evaluate(garak, {"reporting": {"seed": 9}}, out=tmp_path / "api")
    assert (tmp_path / "api" / "redjury.report.jsonl").is_file()
    _same_run(tmp_path / "cli", results)
    _same_run(tmp_path / "api", results)


def _garak_report(path: Path) -> Path:
    setup = {
        "entry_type": "start_run setup",
        "plugins.target_type": "test.Blank",
        "plugins.target_name": "m",
        "run.generations": 2,
    }
    rows: list[dict[str, Any]] = [setup]
    for i in range(12):
        rows.append(
            {
                "entry_type": "attempt",
                "uuid": f"u{i}",
                "seq": i,
                "status": 2,
                "probe_classname": f"probe.P{i % 2}",
                "prompt": {"turns": [{"role": "user", "content": {"text": f"ask {i}"}}]},
                "outputs": [{"text": f"Sure, step {i}"}, {"text": "card 4111 1111 1111 1111"}],
                "detector_results": {"mitigation.MitigationBypass": [i % 3 / 2, 0.0]},
                "notes": {},
                "goal": f"goal {i}",
            }
        )
    return write_jsonl(path, rows)


def _panel_config(server: FaultServer) -> dict[str, Any]:
    return {
        "detectors": [],
        "reporting": {"seed": 2},
        "evaluation": {
            "judges": [
                {
                    "name": "j",
                    "connection": {"base_url": server.openai_url},
                    "generation": {"seed": 1},
                }
            ]
        },
    }


def _verdict_script(req):
    return Reply("yes" if "BAD" in req.messages[-1]["content"] else "no")


def _panel_attempts(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"p{i}", "goal": "g", "outputs": [f"{'BAD' if i % 3 == 0 else 'fine'} {i}"]}
        for i in range(n)
    ]


def test_evaluate_with_a_judge_panel_equals_the_command_line(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.set_script(_verdict_script)
        config = _panel_config(server)
        src = write_jsonl(tmp_path / "a.jsonl", _panel_attempts(9))
        cfg_path = tmp_path / "c.yaml"
        cfg_path.write_text(json.dumps(config))
        env = {"REDJURY_CACHE_DIR": str(tmp_path / "cache")}
        cli = run_cli("run", src, "-c", cfg_path, "--out", tmp_path / "cli", "--no-cache", env=env)
        assert cli.returncode == 0, cli.stderr
        results = redjury.evaluate(src, config, use_cache=False)
    _same_run(tmp_path / "cli", results)
    assert results.verdicts("judge_panel")["p0"] == ["BROKE_THROUGH"]


async def test_aevaluate_runs_inside_a_running_event_loop(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.set_script(Reply("no", delay=0.05))
        config = _panel_config(server)
        config["evaluation"]["per_endpoint_concurrency"] = 3
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        results = await redjury.aevaluate(
            _panel_attempts(12), config, cache_path=tmp_path / "j.sqlite"
        )
        task.cancel()
        assert server.max_in_flight <= 3  # the engine's limit holds inside the caller's loop
        first_posts = server.count
        again = await redjury.aevaluate(
            _panel_attempts(12), config, cache_path=tmp_path / "j.sqlite"
        )
        assert server.count == first_posts  # the second run is served from the judge cache
    assert ticks > 5  # the caller's loop kept running while the judges worked
    assert len(results.attempts) == 12
    assert again.evals == results.evals


def test_detect_scores_one_reply_inline() -> None:
    found = redjury.detect("Card: 4111 1111 1111 1111", ["pii_leak", "jailbreak_heuristic"])
    assert [d.detector for d in found.failed] == ["pii_leak"]
    assert found["pii_leak"].evidence == ("card ****1111",)
    marker = redjury.detect(
        "the code is ZETA-42",
        [{"type": "secret_exfiltration", "markers": ["ZETA-42"]}],
    )
    assert marker["secret_exfiltration"].verdict == "BROKE_THROUGH"
    assert "ZETA-42" not in json.dumps(marker["secret_exfiltration"].evidence)
    canary = redjury.detect("ok XYZZY", ["prompt_injection"], notes={"triggers": ["XYZZY"]})
    assert canary["prompt_injection"].failed


async def test_adetect_asks_a_judge_panel(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.set_script(_verdict_script)
        panel = redjury.judge_panel(_panel_config(server), use_cache=False)
        try:
            bad = await redjury.adetect("BAD things", [panel], goal="g")
            fine = await redjury.adetect("fine", [panel], goal="g")
        finally:
            await panel.aclose()
    assert bad["judge_panel"].failed and not fine["judge_panel"].failed


def test_results_to_pandas_and_jsonl(tmp_path: Path) -> None:
    results = redjury.evaluate(EXAMPLE, {"reporting": {"seed": 1}})
    frame = results.to_pandas()
    assert list(frame["detector"]) == [r["detector"] for r in results.evals]
    hits = results.to_pandas("hitlog")
    assert len(hits) == len(results.hitlog) > 0
    path = results.to_jsonl(tmp_path / "r.jsonl")
    assert read_jsonl(path) == json.loads(json.dumps(results.rows))


def test_registries_list_and_register_from_code() -> None:
    assert "pii_leak" in redjury.detectors.available()
    assert "harmbench" in redjury.scoring_types.available()

    @redjury.detectors.register
    class Shouting(redjury.Detector):
        name = "api_test_shouting"
        family = redjury.Family.HEURISTIC
        description = "A reply in capitals."

        def check(self, attempt: redjury.Attempt, output: str) -> redjury.Finding:
            return self.bad("caps") if output.isupper() else self.good()

    try:
        assert redjury.detectors.get("api_test_shouting") is Shouting
        assert redjury.detect("NO WAY", ["api_test_shouting"])["api_test_shouting"].failed
    finally:  # the registry is the process's: later tests (the README reference) see it
        from redjury.plugins import DETECTORS

        DETECTORS._plugins.pop("api_test_shouting", None)


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for name in redjury.__all__:
        obj = getattr(redjury, name)
        if name.startswith("__") or not (
            inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)
        ):
            continue
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (
                    inspect.isfunction(member) or isinstance(member, property)
                ):
                    continue
                if not (inspect.getdoc(member) or "").strip():
                    missing.append(f"{name}.{attr}")
    assert missing == []
