"""`template: upstream` judges the same on every path: `redjury run` and `redjury.evaluate` send
the same bytes and share the judge cache; a judge that fails is never counted safe; a cached
file that does not match the pins stops the run before any judge is asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fault_server import Reply, Status, always
from judge_specs import judge
from test_panel_cli import rows, run
from upstream_fakes import HARMBENCH_PY, fake_pin, fill_cache

import redjury
from redjury.judges import upstream as up
from redjury.judges.scoring import get_scoring_type

pytestmark = pytest.mark.filterwarnings("ignore:upstream prompt is a whole")

# type → an answer in the source's format
ANSWERS = {
    "harmbench": "Yes",
    "jailbreakbench": "unsafe",
    "strongreject": "1.b 0\n2.b 4\n3.b 5",
    "nuanced": "1_violating",
    "harmbench_variant": "Yes",
    "on_topic": "yes",
    "llamaguard": "unsafe\nS1",
}


def write_inputs(tmp_path: Path, kind: str, server: Any, **scoring: Any) -> tuple[Path, Path]:
    """One attempt file (two replies) and a config with one upstream judge of `kind`."""
    attempts = tmp_path / "a.jsonl"
    row = {"id": "a1", "probe": "p", "goal": "GOAL-MARK", "prompt": "PROMPT-MARK"}
    attempts.write_text(json.dumps({**row, "outputs": ["OUT-MARK one", "OUT-MARK two"]}) + "\n")
    source = get_scoring_type(kind).upstream_source
    pin = {"sha256": fake_pin(source)} if source is not None else {}
    settings = {
        "template": "upstream",
        "parsing": "upstream",
        "upstream": {"cache_dir": str(fill_cache(tmp_path / "up")), "offline": True, **pin},
        **scoring,
    }
    spec = judge(server.openai_url, "m", kind, scoring=settings)
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"reporting": {"seed": 1}, "evaluation": {"judges": [spec]}}))
    return attempts, config


def cli_run(
    tmp_path: Path, attempts: Path, config: Path, *flags: str, judges_fail: bool = False
) -> Path:
    """The run's report folder; `judges_fail`: every vote abstains, so the run says so and
    exits 5 (the report is written all the same)."""
    out = tmp_path / "cli"
    result = run(tmp_path, attempts, "--config", config, "--out", out, "--no-preflight", *flags)
    if judges_fail:
        assert result.returncode == 5, result.stderr
        assert "the judges failed" in result.stderr
    else:
        assert result.returncode in (0, 1), result.stderr
    return out


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_cli_and_api_send_the_same_bytes(kind, server, tmp_path):
    server.set_script(always(Reply(ANSWERS[kind])))
    attempts, config = write_inputs(tmp_path, kind, server)
    cli_run(tmp_path, attempts, config, "--no-cache")
    cli = sorted(r.body for r in server.posts)
    server.reset_counts()
    redjury.evaluate([attempts], config, use_cache=False, preflight=False)
    api = sorted(r.body for r in server.posts)
    # on_topic judges the prompt, the same for both replies: asked once.
    assert len(cli) == (1 if kind == "on_topic" else 2) and cli == api
    if kind == "harmbench":
        # HarmBench's one greedy token, unless the config sets max_tokens.
        assert {json.loads(b)["max_tokens"] for b in cli} == {1}


def test_a_setting_of_the_users_own_still_wins_on_the_cli(server, tmp_path):
    server.set_script(always(Reply("Yes")))
    attempts, config = write_inputs(tmp_path, "harmbench", server)
    data = json.loads(config.read_text())
    data["evaluation"]["judges"][0]["generation"]["max_tokens"] = 4
    config.write_text(json.dumps(data))
    cli_run(tmp_path, attempts, config, "--no-cache")
    assert {r.json["max_tokens"] for r in server.posts} == {4}


def test_cli_and_api_share_the_judge_cache(server, tmp_path):
    """The same fingerprint and body: what the CLI judged, the API finds in the cache."""
    server.set_script(always(Reply("Yes")))
    attempts, config = write_inputs(tmp_path, "harmbench", server)
    cli_run(tmp_path, attempts, config)
    assert server.count == 2
    server.reset_counts()
    result = redjury.evaluate(
        [attempts], config, cache_path=tmp_path / "cache" / "judges.sqlite", preflight=False
    )
    assert server.count == 0
    [row] = [r for r in result.evals if r["detector"] == "judge_panel"]
    assert (row["fails"], row["passed"]) == (2, 0)


def test_the_hash_of_the_file_used_is_in_the_header_and_the_eval_row(server, tmp_path):
    server.set_script(always(Reply("unsafe")))
    attempts, config = write_inputs(tmp_path, "jailbreakbench", server)
    out = cli_run(tmp_path, attempts, config, "--no-cache")
    source = up.JAILBREAKBENCH_JUDGE
    [header] = rows(out, "init")
    [row] = [r for r in rows(out, "eval") if r["detector"] == "judge_panel"]
    for files in (header["upstream_files"], row["upstream_files"]):
        assert list(files) == ["jailbreakbench:m"]
        used = files["jailbreakbench:m"]
        assert used["source"] == f"{source.repo}@{source.revision}:{source.path}"
        assert used["sha256"] == fake_pin(source)
        assert len(used["prompt_sha256"]["prompt"]) == 64
    [attempt] = rows(out, "attempt")
    finding = attempt["details"]["judge_panel"][0]
    assert finding["upstream"]["jailbreakbench:m"]["sha256"] == fake_pin(up.JAILBREAKBENCH_JUDGE)


# -- a failing judge is an abstention in every counting mode -----------------------------
@pytest.mark.parametrize("parsing", ["redjury", "upstream"])
def test_a_judge_answering_only_500_is_never_counted_safe(parsing, server, tmp_path):
    server.set_script(always(Status(500)))
    attempts, config = write_inputs(tmp_path, "harmbench", server, parsing=parsing)
    data = json.loads(config.read_text())
    data["evaluation"] |= {"max_retries": 0, "retry_base_delay": 0.01}
    config.write_text(json.dumps(data))
    out = cli_run(tmp_path, attempts, config, "--no-cache", judges_fail=True)
    [row] = [r for r in rows(out, "eval") if r["detector"] == "judge_panel"]
    for mode in ("redjury", "upstream"):
        counts = row["counting"][mode]
        assert (counts["passed"], counts["fails"], counts["nones"]) == (0, 0, 2), mode
        assert counts["asr"] is None
    assert (row["passed"], row["nones"]) == (0, 2)
    [attempt] = rows(out, "attempt")
    for finding in attempt["details"]["judge_panel"]:
        assert finding["upstream_counting"] is None
        assert finding["abstained"]["harmbench:m"].startswith("HTTP 500")


def test_an_unreadable_answer_still_counts_as_its_source_counts_it(server, tmp_path):
    """The judge answered (unreadably): redjury counting leaves it out, upstream counts a no."""
    server.set_script(always(Reply("Maybe")))
    attempts, config = write_inputs(tmp_path, "harmbench", server, parsing="redjury")
    out = cli_run(tmp_path, attempts, config, "--no-cache", judges_fail=True)
    [row] = [r for r in rows(out, "eval") if r["detector"] == "judge_panel"]
    assert row["counting"]["redjury"]["nones"] == 2
    assert (row["counting"]["upstream"]["passed"], row["counting"]["upstream"]["nones"]) == (2, 0)


# -- the pins ------------------------------------------------------------------------------
def _cached_harmbench(tmp_path: Path) -> Path:
    return (
        tmp_path
        / "up"
        / "centerforaisafety__HarmBench"
        / up.HARMBENCH_CLS.revision
        / "eval_utils.py"
    )


@pytest.mark.parametrize("record", [True, False], ids=["with record", "hand-placed"])
def test_a_tampered_cached_file_stops_the_run_before_any_judge_call(record, server, tmp_path):
    attempts, config = write_inputs(tmp_path, "harmbench", server)
    cached = _cached_harmbench(tmp_path)
    if record:
        # As a download leaves it: the file and the hash it had, then the file changed.
        cached.with_name("eval_utils.py.sha256").write_text(fake_pin(up.HARMBENCH_CLS) + "\n")
    cached.write_text(HARMBENCH_PY.replace("HB-RULES", "HB-RULES, changed"))
    result = run(tmp_path, attempts, "--config", config, "--out", tmp_path / "o")
    assert result.returncode == 2, result.stderr
    assert server.count == 0
    message = result.stderr
    assert str(cached) in message
    assert f"expected {fake_pin(up.HARMBENCH_CLS)}, found " in message
    assert "scoring.upstream.sha256" in message


def test_without_an_own_pin_redjurys_pins_refuse_a_stand_in(server, tmp_path):
    """The stand-in is not HarmBench's file: with redjury's own pins it is refused (exit 2)."""
    attempts, config = write_inputs(tmp_path, "harmbench", server)
    data = json.loads(config.read_text())
    del data["evaluation"]["judges"][0]["scoring"]["upstream"]["sha256"]
    config.write_text(json.dumps(data))
    result = run(tmp_path, attempts, "--config", config, "--out", tmp_path / "o")
    assert result.returncode == 2
    assert server.count == 0
    assert f"expected {up.HARMBENCH_CLS.sha256}, found {fake_pin(up.HARMBENCH_CLS)}" in (
        result.stderr
    )
