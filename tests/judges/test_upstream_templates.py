"""`scoring.template: upstream`: each type's request built from the source's prompt file (test
stand-ins in the sources' formats, in a pre-filled cache), in the source's message shape, and the
answer read by the source's rule; the prompt file downloaded, checked and cached."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fault_server import Reply, always, garbage
from judge_specs import judge
from raw_file_server import RawFileServer
from test_scoring_modes import CompletionsServer
from upstream_fakes import HACKAGENT_PY, HARMBENCH_PY, fake_pin, fill_cache, url_path

from redjury.attempts import Attempt
from redjury.judges import upstream as up
from redjury.judges.config import UpstreamSpec
from redjury.judges.scoring import get_scoring_type
from redjury.judges.scoring.upstream_rules import clip_tokens

# The chat-endpoint HarmBench tests check the request itself; the warning has its own test.
pytestmark = pytest.mark.filterwarnings("ignore:upstream prompt is a whole")

ATTEMPT = Attempt(id="a1", goal="GOAL-MARK", prompt="PROMPT-MARK", outputs=["OUT-MARK"])
HB_PROMPT = "[INST] <<SYS>>\nHB-SYS\n<</SYS>>\n\nB: GOAL-MARK\nG: OUT-MARK\nHB-RULES [/INST]"
# type → (the messages the source sends, an answer in the source's format, the vote it gives)
GOLDEN: dict[str, tuple[list[dict[str, str]], str, float]] = {
    "harmbench": ([{"role": "user", "content": HB_PROMPT}], "Yes", 10.0),
    "jailbreakbench": (
        [
            {
                "role": "user",
                # JailbreakBench fills REQUEST with the prompt sent, not the goal.
                "content": "JBB-RULES\n<BEGIN REQUEST>PROMPT-MARK<END REQUEST>\n"
                "<BEGIN RESPONSE>OUT-MARK<END RESPONSE>\nJBB-ANSWER safe or unsafe",
            }
        ],
        "The response is unsafe.",
        10.0,
    ),
    "strongreject": (
        [
            {"role": "system", "content": "SR-SYSTEM"},
            {"role": "user", "content": "U: GOAL-MARK\nR: OUT-MARK\n#scores 1.b 2.b 3.b"},
        ],
        "#overall_reasoning r\n#scores\n1.a no\n1.b 0\n2.a ok\n2.b 4\n3.a ok\n3.b 5\n",
        8.75,
    ),
    "nuanced": (
        [
            {
                "role": "user",
                "content": "NJ-RULES\n<BEGIN REQUEST>\nGOAL-MARK\n<END REQUEST>\n"
                "<BEGIN RESPONSE>\nOUT-MARK\n<END RESPONSE>\nlabel 1_violating or 0_compliant",
            }
        ],
        "It is detailed and real.\n**1_violating**",
        10.0,
    ),
    "harmbench_variant": (
        [
            {
                "role": "user",
                "content": "HBV-RULES <BEGIN PROMPT>GOAL-MARK<END PROMPT> "
                "<BEGIN RESPONSE>OUT-MARK<END RESPONSE> Yes or No",
            }
        ],
        "No",
        0.0,
    ),
    "on_topic": (
        [
            {
                "role": "user",
                "content": "OT-RULES <BEGIN TASK>GOAL-MARK<END TASK> "
                "<BEGIN PROMPT>PROMPT-MARK<END PROMPT>",
            }
        ],
        "yes",
        10.0,
    ),
    "llamaguard": (
        [{"role": "user", "content": "PROMPT-MARK"}, {"role": "assistant", "content": "OUT-MARK"}],
        "unsafe\nS1,S10",
        10.0,
    ),
}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return fill_cache(tmp_path / "upstream")


def upstream_judge(url: str, kind: str, cache: Path, **scoring: Any) -> dict[str, Any]:
    """A judge reading the stand-in file of its source (its hash named as the user's pin)."""
    source = get_scoring_type(kind).upstream_source
    pin = {"sha256": fake_pin(source)} if source is not None else {}
    settings = {
        "template": "upstream",
        "parsing": "upstream",
        "upstream": {"cache_dir": str(cache), "offline": True, **pin},
        **scoring,
    }
    return judge(url, "judge-a", kind, scoring=settings)


async def _one(make_panel, spec, attempt=ATTEMPT):
    panel = make_panel([spec], use_cache=False)
    [finding] = await panel.adetect(attempt)
    await panel.aclose()
    return finding


# -- golden requests, upstream mode --------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(GOLDEN))
async def test_upstream_request_is_the_sources_prompt_and_shape(server, make_panel, cache, kind):
    messages, answer, score = GOLDEN[kind]
    server.set_script(always(Reply(answer)))
    finding = await _one(make_panel, upstream_judge(server.openai_url, kind, cache))
    [req] = server.posts
    assert req.messages == messages
    assert finding.details["votes"] == {f"{kind}:judge-a": score}


@pytest.mark.parametrize("kind", sorted(GOLDEN))
async def test_upstream_parsing_alone_keeps_redjurys_request(server, make_panel, kind):
    """`parsing: upstream` with redjury's template: the golden request of the default mode."""
    golden = Path(__file__).parent / "golden_scoring" / f"{kind}.json"
    server.set_script(always(Reply("no")))
    full = Attempt(id="a1", goal="GOAL-MARK", prompt="PROMPT-MARK", outputs=["OUT-MARK"])
    await _one(
        make_panel, judge(server.openai_url, "judge-a", kind, scoring={"parsing": "upstream"}), full
    )
    body = server.posts[0].json
    expected = json.loads(golden.read_text())
    assert body["messages"][0] == expected["messages"][0]
    assert body["messages"][1]["role"] == "user"


def test_harmbench_upstream_defaults_to_one_greedy_token(server, cache):
    from redjury.judges.config import EvaluationSpec
    from redjury.judges.panel import JudgePanelDetector

    spec = EvaluationSpec.model_validate(
        {"judges": [upstream_judge(server.openai_url, "harmbench", cache)]}
    )
    panel = JudgePanelDetector.from_spec(spec, use_cache=False)
    body = json.loads(panel.judges[0].provider.body([{"role": "user", "content": "x"}]))
    assert (body["max_tokens"], body["temperature"]) == (1, 0.0)
    # A setting of the user's own wins.
    mine = upstream_judge(server.openai_url, "harmbench", cache)
    mine["generation"]["max_tokens"] = 4
    spec = EvaluationSpec.model_validate({"judges": [mine]})
    panel = JudgePanelDetector.from_spec(spec, use_cache=False)
    assert json.loads(panel.judges[0].provider.body([]))["max_tokens"] == 4


async def test_harmbench_classifier_layout_on_the_completions_endpoint(make_panel, cache):
    with CompletionsServer() as raw:
        raw.set_script(always(Reply("Yes")))
        spec = upstream_judge(raw.openai_url, "harmbench", cache, completions=True)
        finding = await _one(make_panel, spec)
        [req] = raw.posts
    assert req.path == "/v1/completions"
    assert req.json["prompt"] == HB_PROMPT
    assert (req.json["max_tokens"], req.json["temperature"]) == (1, 0.0)
    assert finding.details["votes"] == {"harmbench:judge-a": 10.0}


async def test_harmbench_contextual_prompt_for_contextual_behaviours(server, make_panel, cache):
    server.set_script(always(Reply("No")))
    attempt = ATTEMPT.model_copy(update={"goal_context": "CTX-MARK"})
    await _one(make_panel, upstream_judge(server.openai_url, "harmbench", cache), attempt)
    content = server.posts[0].messages[0]["content"]
    assert "C: CTX-MARK\nB: GOAL-MARK\nG: OUT-MARK" in content


async def test_harmbench_upstream_needs_the_behaviour_not_the_prompt(server, make_panel, cache):
    attempt = Attempt(id="a", prompt="PROMPT-MARK", outputs=["OUT-MARK"])
    finding = await _one(make_panel, upstream_judge(server.openai_url, "harmbench", cache), attempt)
    assert server.count == 0
    assert "no goal" in finding.details["abstained"]["harmbench:judge-a"]


async def test_harmbench_generation_is_cut_to_512_tokens(server, make_panel, cache):
    server.set_script(always(Reply("No")))
    long = " ".join(f"w{i}" for i in range(2000))
    attempt = ATTEMPT.model_copy(update={"outputs": [long]})
    await _one(make_panel, upstream_judge(server.openai_url, "harmbench", cache), attempt)
    content = server.posts[0].messages[0]["content"]
    kept = content.split("G: ", 1)[1].rsplit("\nHB-RULES", 1)[0]
    assert kept == clip_tokens(long) and long.startswith(kept)
    assert kept.endswith("w511") and "w512" not in kept.split()


async def test_hackagent_variant_cuts_the_reply_at_3000_characters(server, make_panel, cache):
    server.set_script(always(Reply("No")))
    attempt = ATTEMPT.model_copy(update={"outputs": ["x" * 3500]})
    await _one(make_panel, upstream_judge(server.openai_url, "harmbench_variant", cache), attempt)
    assert "x" * 3000 + "...[truncated]<END RESPONSE>" in server.posts[0].messages[0]["content"]


async def test_unreadable_answer_is_counted_not_reasked_in_upstream_mode(server, make_panel, cache):
    server.set_script(always(garbage()))
    finding = await _one(make_panel, upstream_judge(server.openai_url, "harmbench", cache))
    assert server.count == 1
    vote = finding.details["judges"][0]
    assert (vote["score"], vote["vote"]) == (0.0, "unreadable")
    assert "-1" in vote["abstain_reason"]


async def test_strongreject_unreadable_is_nan_left_out_without_reask(server, make_panel, cache):
    server.set_script(always(garbage()))
    finding = await _one(make_panel, upstream_judge(server.openai_url, "strongreject", cache))
    assert server.count == 1
    vote = finding.details["judges"][0]
    assert (vote["score"], vote["vote"]) == (None, "NaN")


def test_llamaguard_on_completions_needs_the_models_full_prompt(cache):
    from redjury.judges.config import ScoringSpec

    scoring = ScoringSpec.model_validate(
        {"type": "llamaguard", "template": "upstream", "completions": True}
    )
    with pytest.raises(up.UpstreamError, match="needs scoring.upstream.prompt_file"):
        get_scoring_type("llamaguard").from_spec(scoring)


async def test_llamaguard_full_prompt_on_the_completions_endpoint(make_panel, tmp_path):
    # A stand-in in the shape of a chat template's output, not Llama Guard's own text.
    prompt_file = tmp_path / "guard.txt"
    prompt_file.write_text(
        "<|user|>TASK {json: braces}\nUser: {prompt}\nAgent: {output}\n<|assistant|>\n"
    )
    attempt = ATTEMPT.model_copy(update={"outputs": ["says {prompt} literally"]})
    with CompletionsServer() as raw:
        raw.set_script(always(Reply("unsafe\nS2")))
        spec = judge(
            raw.openai_url,
            "judge-a",
            "llamaguard",
            scoring={
                "template": "upstream",
                "completions": True,
                "upstream": {"prompt_file": str(prompt_file)},
            },
        )
        finding = await _one(make_panel, spec, attempt)
        [req] = raw.posts
    assert req.path == "/v1/completions"
    assert req.json["prompt"] == (
        "<|user|>TASK {json: braces}\nUser: PROMPT-MARK\n"
        "Agent: says {prompt} literally\n<|assistant|>\n"
    )
    assert finding.details["votes"] == {"llamaguard:judge-a": 10.0}


@pytest.mark.parametrize("kind", ["scorer", "rag_outcome"])
def test_types_without_an_upstream_file_say_so(kind, cache):
    from redjury.judges.config import ScoringSpec

    spec = ScoringSpec.model_validate({"type": kind, "template": "upstream"})
    with pytest.raises(up.UpstreamError, match="no upstream template"):
        get_scoring_type(kind).from_spec(spec)


def test_the_fingerprint_names_the_source_revision_and_hash(server, cache):
    from redjury.judges.config import EvaluationSpec
    from redjury.judges.panel import JudgePanelDetector

    specs = [
        upstream_judge(server.openai_url, "jailbreakbench", cache),
        judge(server.openai_url, "judge-b", "jailbreakbench"),
    ]
    panel = JudgePanelDetector.from_spec(
        EvaluationSpec.model_validate({"judges": specs}), use_cache=False
    )
    a, b = (j.fingerprint_fields for j in panel.judges)
    assert a["template"] == (
        f"upstream:{up.JAILBREAKBENCH_JUDGE.repo}@{up.JAILBREAKBENCH_JUDGE.revision}:"
        f"{up.JAILBREAKBENCH_JUDGE.path}"
    )
    assert (a["parsing"], b["parsing"]) == ("upstream", "redjury")
    assert a["template_sha256"] != b["template_sha256"]


# -- the download --------------------------------------------------------------------------
@pytest.fixture
def files_server():
    srv = RawFileServer(
        {
            url_path(up.HARMBENCH_CLS): HARMBENCH_PY.encode(),
            url_path(up.HACKAGENT_NUANCED, "other-rev"): HACKAGENT_PY.encode(),
        }
    ).start()
    yield srv
    srv.stop()


def _spec(tmp_path: Path, srv: RawFileServer, **extra: Any) -> UpstreamSpec:
    extra.setdefault("sha256", fake_pin(up.HARMBENCH_CLS))
    return UpstreamSpec(cache_dir=str(tmp_path / "c"), base_url=srv.url, **extra)


def test_download_fills_the_cache_records_the_hash_then_works_offline(tmp_path, files_server):
    prompt = up.fetch_upstream(up.HARMBENCH_CLS, _spec(tmp_path, files_server))
    assert files_server.hits == [url_path(up.HARMBENCH_CLS)]
    assert (
        "{behavior}" in prompt.parts["prompt"] and "{context}" in prompt.parts["prompt_contextual"]
    )
    dest, _ = up.cached_path(up.HARMBENCH_CLS, _spec(tmp_path, files_server))
    digest = hashlib.sha256(HARMBENCH_PY.encode()).hexdigest()
    assert prompt.sha256 == digest
    assert dest.with_name(dest.name + ".sha256").read_text().strip() == digest
    again = up.fetch_upstream(up.HARMBENCH_CLS, _spec(tmp_path, files_server, offline=True))
    assert again.parts == prompt.parts and len(files_server.hits) == 1


def test_a_cached_file_changed_after_download_is_a_checksum_error(tmp_path, files_server):
    up.fetch_upstream(up.HARMBENCH_CLS, _spec(tmp_path, files_server))
    dest, _ = up.cached_path(up.HARMBENCH_CLS, _spec(tmp_path, files_server))
    dest.write_text(HARMBENCH_PY.replace("HB-RULES", "CHANGED"))
    with pytest.raises(up.UpstreamError, match=r"eval_utils\.py \(.*delete it.*SHA-256 mismatch"):
        up.fetch_upstream(up.HARMBENCH_CLS, _spec(tmp_path, files_server))


def test_a_pinned_sha256_that_does_not_match_keeps_nothing(tmp_path, files_server):
    spec = _spec(tmp_path, files_server, sha256="0" * 64)
    with pytest.raises(up.UpstreamError, match="SHA-256 mismatch"):
        up.fetch_upstream(up.HARMBENCH_CLS, spec)
    dest, _ = up.cached_path(up.HARMBENCH_CLS, spec)
    assert not dest.parent.exists() or not any(dest.parent.iterdir())


def test_another_revision_is_read_from_its_own_folder(tmp_path, files_server):
    spec = _spec(
        tmp_path, files_server, revision="other-rev", sha256=fake_pin(up.HACKAGENT_NUANCED)
    )
    prompt = up.fetch_upstream(up.HACKAGENT_NUANCED, spec)
    assert prompt.revision == "other-rev" and "{request}" in prompt.parts["prompt"]
    assert up.cached_path(up.HACKAGENT_NUANCED, spec)[0].parent.name == "other-rev"


def test_offline_without_the_file_names_the_url_and_the_path(tmp_path):
    spec = UpstreamSpec(cache_dir=str(tmp_path), offline=True)
    with pytest.raises(up.UpstreamError) as err:
        up.fetch_upstream(up.STRONGREJECT_RUBRIC, spec)
    text = str(err.value)
    assert (
        "raw.githubusercontent.com/dsbowen/strong_reject/" + up.STRONGREJECT_RUBRIC.revision in text
    )
    assert str(tmp_path / "dsbowen__strong_reject") in text


def test_a_missing_file_on_the_server_is_a_clear_error(tmp_path, files_server):
    with pytest.raises(up.UpstreamError, match="HTTP 404"):
        up.fetch_upstream(up.JAILBREAKBENCH_JUDGE, _spec(tmp_path, files_server, sha256=None))


def test_a_file_without_the_prompt_says_which(tmp_path):
    folder = tmp_path / "centerforaisafety__HarmBench" / up.HARMBENCH_CLS.revision
    folder.mkdir(parents=True)
    text = "LLAMA2_CLS_PROMPT = {'prompt': 'x'}\n"
    (folder / "eval_utils.py").write_text(text)
    spec = UpstreamSpec(
        cache_dir=str(tmp_path), offline=True, sha256=hashlib.sha256(text.encode()).hexdigest()
    )
    with pytest.raises(up.UpstreamError, match="'prompt_contextual'"):
        up.fetch_upstream(up.HARMBENCH_CLS, spec)


def test_python_values_are_read_without_running_the_file():
    text = "import os\nos.remove('x')\nclass A:\n    B = 'v' 'w'\nC = {'k': 'x'}\n"
    assert up.python_value("A.B")(text) == "vw"
    assert up.python_value("C", "k")(text) == "x"
    with pytest.raises(ValueError, match="no A.D"):
        up.python_value("A.D")(text)


def test_detectors_list_says_how_each_type_relates_to_its_source():
    from typer.testing import CliRunner

    from redjury.cli import app

    result = CliRunner().invoke(app, ["detectors", "list", "--json"])
    assert result.exit_code == 0, result.output
    types = {i["name"]: i for i in json.loads(result.output) if i["kind"] == "scoring_type"}
    relations = {name: item["relation"] for name, item in types.items()}
    assert relations["judge:harmbench"] == "upstream-fetched"
    assert relations["judge:scorer"] == relations["judge:rag_outcome"] == "redjury's own variant"
    assert relations["judge:llamaguard"].startswith("faithful")
    hb = types["judge:harmbench"]["upstream"]
    assert (hb["repo"], hb["path"]) == ("centerforaisafety/HarmBench", "eval_utils.py")
    assert len(hb["revision"]) == 40
    # Built-ins only: other tests register throwaway types in the same process.
    builtin = [f"judge:{k}" for k in (*GOLDEN, "scorer", "rag_outcome")]
    assert all(types[name]["differs"] for name in builtin)


async def test_each_finding_names_the_judges_in_upstream_mode(server, make_panel, cache):
    server.set_script(always(Reply("no")))
    specs = [
        upstream_judge(server.openai_url, "jailbreakbench", cache),
        judge(server.openai_url, "judge-b", "harmbench"),
    ]
    panel = make_panel(specs, use_cache=False)
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    modes = finding.details["upstream"]
    assert list(modes) == ["jailbreakbench:judge-a"]
    assert modes["jailbreakbench:judge-a"]["parsing"] == "upstream"
    assert modes["jailbreakbench:judge-a"]["template"].startswith("upstream:JailbreakBench/")


def test_harmbench_prompt_on_the_chat_endpoint_warns_it_is_wrapped_twice(server, cache):
    from redjury.judges.config import EvaluationSpec
    from redjury.judges.panel import JudgePanelDetector, PanelWarning

    chat = EvaluationSpec.model_validate(
        {"judges": [upstream_judge(server.openai_url, "harmbench", cache)]}
    )
    with pytest.warns(PanelWarning, match="completions: true"):
        JudgePanelDetector.from_spec(chat, use_cache=False)
    raw = EvaluationSpec.model_validate(
        {"judges": [upstream_judge(server.openai_url, "harmbench", cache, completions=True)]}
    )
    assert not JudgePanelDetector.from_spec(raw, use_cache=False).warnings


def test_run_without_the_prompt_offline_is_a_clear_exit_2(server, tmp_path):
    from test_panel_cli import run, write_attempts

    spec = judge(
        server.openai_url,
        "m",
        "harmbench",
        scoring={
            "template": "upstream",
            "upstream": {"offline": True, "cache_dir": str(tmp_path / "empty")},
        },
    )
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"evaluation": {"judges": [spec]}}))
    result = run(
        tmp_path,
        write_attempts(tmp_path / "a.jsonl", 2),
        "--config",
        config,
        "--out",
        tmp_path / "out",
    )
    assert result.returncode == 2
    assert "judge harmbench:m: scoring (template: upstream)" in result.stderr
    assert "HarmBench/" + up.HARMBENCH_CLS.revision + "/eval_utils.py" in result.stderr
    assert server.count == 0


# -- the pin table -------------------------------------------------------------------------
SOURCES = [
    up.HARMBENCH_CLS,
    up.JAILBREAKBENCH_JUDGE,
    up.STRONGREJECT_RUBRIC,
    up.HACKAGENT_NUANCED,
    up.HACKAGENT_HARMBENCH_VARIANT,
    up.HACKAGENT_ON_TOPIC,
]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.note.split(".")[0][:24])
def test_every_source_pins_each_prompt_it_reads(source):
    assert set(source.part_sha256) == set(source.parts)
    pins = [*source.part_sha256.values(), *([source.sha256] if source.sha256 else [])]
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in pins)


def _place(tmp_path: Path, source: up.UpstreamSource, text: str) -> Path:
    folder = tmp_path / source.repo.replace("/", "__") / source.revision
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(source.path).name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_hand_placed_copy_is_checked_against_the_prompt_pins_too(tmp_path):
    """StrongREJECT pins no file hash: a copy without a record is checked prompt by prompt."""
    path = _place(
        tmp_path,
        up.STRONGREJECT_RUBRIC,
        json.dumps(
            {"strongreject_rubric_system": "SR-SYSTEM", "strongreject_rubric": "{forbidden_prompt}"}
        ),
    )
    with pytest.raises(up.UpstreamError) as err:
        up.fetch_upstream(
            up.STRONGREJECT_RUBRIC, UpstreamSpec(cache_dir=str(tmp_path), offline=True)
        )
    text = str(err.value)
    assert str(path) in text and "extracted 'system' prompt" in text
    assert f"expected {up.STRONGREJECT_RUBRIC.part_sha256['system']}" in text
    assert "scoring.upstream.sha256: " + hashlib.sha256(path.read_bytes()).hexdigest() in text


def test_a_download_that_does_not_match_the_prompt_pins_keeps_nothing(tmp_path):
    srv = RawFileServer({url_path(up.HACKAGENT_NUANCED): HACKAGENT_PY.encode()}).start()
    try:
        spec = UpstreamSpec(cache_dir=str(tmp_path), base_url=srv.url)
        with pytest.raises(up.UpstreamError, match="extracted 'prompt' prompt"):
            up.fetch_upstream(up.HACKAGENT_NUANCED, spec)
    finally:
        srv.stop()
    dest, _ = up.cached_path(up.HACKAGENT_NUANCED, spec)
    assert not dest.exists() and not dest.with_name(dest.name + ".sha256").exists()


def test_another_revision_needs_a_hash_of_the_users_own(tmp_path):
    spec = UpstreamSpec(cache_dir=str(tmp_path), offline=True, revision="main")
    with pytest.raises(up.UpstreamError, match="not the one redjury pins.*upstream.sha256"):
        up.fetch_upstream(up.HARMBENCH_CLS, spec)


def test_the_fingerprint_carries_the_file_hash(server, cache):
    from redjury.judges.config import EvaluationSpec
    from redjury.judges.panel import JudgePanelDetector

    spec = EvaluationSpec.model_validate(
        {"judges": [upstream_judge(server.openai_url, "nuanced", cache)]}
    )
    [j] = JudgePanelDetector.from_spec(spec, use_cache=False).judges
    assert j.fingerprint_fields["upstream_sha256"] == fake_pin(up.HACKAGENT_NUANCED)


def test_the_llamaguard_prompt_file_is_checked_against_upstream_sha256(tmp_path):
    from redjury.judges.config import ScoringSpec

    prompt_file = tmp_path / "guard.txt"
    prompt_file.write_text("User: {prompt}\nAgent: {output}\n")
    found = hashlib.sha256(prompt_file.read_bytes()).hexdigest()
    settings = {"type": "llamaguard", "template": "upstream", "completions": True}
    upstream = {"prompt_file": str(prompt_file), "sha256": "0" * 64}
    with pytest.raises(up.UpstreamError, match=f"expected {'0' * 64}, found {found}"):
        get_scoring_type("llamaguard").from_spec(
            ScoringSpec.model_validate({**settings, "upstream": upstream})
        )
    upstream["sha256"] = found
    scoring = get_scoring_type("llamaguard").from_spec(
        ScoringSpec.model_validate({**settings, "upstream": upstream})
    )
    assert scoring.upstream_used() == {"prompt_file": str(prompt_file), "sha256": found}


# -- the real files, where the test data has them (kept apart: $REDJURY_TEST_DATA/upstream) --
def _real_files() -> list[tuple[up.UpstreamSource, Path]]:
    """The pinned sources whose real file the test data holds. The test exists only for
    those: a checkout without them has nothing to compare (CI allows no skip)."""
    import os

    root = os.environ.get("REDJURY_TEST_DATA")
    found = []
    for source in SOURCES:
        name = Path(source.repo.replace("/", "__")) / source.revision / Path(source.path).name
        path = Path(root, "upstream", name) if root else None
        if path is not None and path.is_file():
            found.append((source, path))
    return found


REAL_FILES = _real_files()

if REAL_FILES:

    @pytest.mark.parametrize(
        ("source", "real"), REAL_FILES, ids=lambda v: getattr(v, "note", "x").split(".")[0][:24]
    )
    def test_the_real_files_match_the_pins(source, real, tmp_path):
        """Served from a local mirror, as a download at the pinned revision: the pins hold."""
        srv = RawFileServer({url_path(source): real.read_bytes()}).start()
        try:
            spec = UpstreamSpec(cache_dir=str(tmp_path), base_url=srv.url)
            prompt = up.fetch_upstream(source, spec)
        finally:
            srv.stop()
        assert prompt.used()["prompt_sha256"] == dict(source.part_sha256)
        if source.sha256:
            assert prompt.sha256 == source.sha256


# -- the sources' rules in upstream mode ---------------------------------------------------
@pytest.mark.parametrize("kind", ["nuanced", "harmbench_variant"])
@pytest.mark.parametrize("reply", ["...", " . .\n", ""])
async def test_hackagent_scores_a_trivial_reply_0_without_asking(
    server, make_panel, cache, kind, reply
):
    server.set_script(always(Reply("yes")))
    attempt = ATTEMPT.model_copy(update={"outputs": [reply]})
    finding = await _one(make_panel, upstream_judge(server.openai_url, kind, cache), attempt)
    assert server.count == 0
    [vote] = finding.details["judges"]
    assert (vote["score"], vote["vote"]) == (0.0, "trivial reply")


async def test_a_trivial_reply_is_asked_in_redjurys_mode(server, make_panel):
    server.set_script(always(Reply("no")))
    attempt = ATTEMPT.model_copy(update={"outputs": ["..."]})
    await _one(make_panel, judge(server.openai_url, "judge-a", "nuanced"), attempt)
    assert server.count == 1


async def test_jailbreakbench_request_is_the_goal_when_no_prompt_was_recorded(
    server, make_panel, cache
):
    server.set_script(always(Reply("safe")))
    attempt = Attempt(id="a", goal="GOAL-MARK", outputs=["OUT-MARK"])
    spec = upstream_judge(server.openai_url, "jailbreakbench", cache)
    await _one(make_panel, spec, attempt)
    assert "<BEGIN REQUEST>GOAL-MARK<END REQUEST>" in server.posts[0].messages[0]["content"]
