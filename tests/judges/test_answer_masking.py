"""A judge's answer is masked at the source: credentials, the run's markers and any PII it
quotes never reach the judge cache, a vote or an abstention reason."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from fault_server import Reply, Request, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.cache import CachedJudgement, JudgeCache
from redjury.redaction import Redactor

KEY, HEADER, MARKER = "sk-mask-test-0042", "hdr-mask-test-0077", "MARKER-mask-0099"
CARD, SSN = "4539 1488 0343 6467", "219-09-9999"
ATTEMPT = Attempt(id="a", goal="g", outputs=[f"I leak {MARKER}, {CARD} and {SSN}"])


def echo(req: Request) -> Reply:
    return Reply(f"yes; I read {req.body.decode()} and {json.dumps(req.headers)}")


def secret_judge(url: str) -> dict[str, object]:
    return judge(url, "a", connection={"api_key_env": "MASK_TEST_KEY", "headers": {"x-h": HEADER}})


def cache_text(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return json.dumps(db.execute("SELECT * FROM judgements").fetchall(), default=repr)
    finally:
        db.close()


async def test_the_cache_and_the_vote_hold_the_answer_masked_and_never_the_prompt(
    server, make_panel, tmp_path, monkeypatch
):
    monkeypatch.setenv("MASK_TEST_KEY", KEY)
    server.set_script(echo)
    cache = tmp_path / "judges.sqlite"
    panel = make_panel([secret_judge(server.openai_url)], cache=cache)
    panel.mask_answers_with(Redactor([MARKER]))
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    raw = finding.details["judges"][0]["raw"]
    assert finding.score == 1.0 and "I read" in raw
    stored = cache_text(cache)
    for text in (raw, stored):
        for value in (KEY, HEADER, MARKER, CARD, SSN):
            assert value not in text
    assert "****6467" in raw and "****0042" in raw and "****0077" in raw and "****0099" in raw


async def test_the_cache_keeps_the_verdict_and_answer_never_the_question(
    server, make_panel, tmp_path
):
    server.set_script(always(Reply("yes")))
    cache = tmp_path / "judges.sqlite"
    panel = make_panel([judge(server.openai_url, "a")], cache=cache)
    await panel.adetect(Attempt(id="q", goal="GOAL-TEXT-1", outputs=["REPLY-TEXT-2"]))
    await panel.aclose()
    stored = cache_text(cache)
    assert "'yes', 10.0, 'yes'" in stored.replace('"', "'")
    assert "GOAL-TEXT-1" not in stored and "REPLY-TEXT-2" not in stored
    raw_db = cache.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("*-wal"))
    assert b"GOAL-TEXT-1" not in raw_db and b"REPLY-TEXT-2" not in raw_db


async def test_an_answer_cached_unmasked_by_an_older_version_is_masked_when_read(
    server, make_panel, tmp_path
):
    cache_path = tmp_path / "judges.sqlite"
    panel = make_panel([judge(server.openai_url, "a")], cache=cache_path)
    j = panel.judges[0]
    key = j.cache_key(j.provider.body(j.scoring.render(ATTEMPT, ATTEMPT.outputs[0])))
    old = JudgeCache(cache_path)
    old.put(key, j.id, CachedJudgement(f"yes, {CARD} {SSN} {MARKER}", 10.0, "yes", 1, 1))
    old.close()
    panel.mask_answers_with(Redactor([MARKER]))
    [finding] = await panel.adetect(ATTEMPT)
    await panel.aclose()
    assert server.count == 0
    assert finding.details["judges"][0]["raw"] == "yes, ****6467 ****9999 ****0099"


async def test_an_abstention_reason_carries_no_url_credentials(make_panel, monkeypatch):
    # A config refuses credentials in base_url; $OLLAMA_HOST is read by no config check.
    monkeypatch.setenv("OLLAMA_HOST", "http://someone:pa55word@127.0.0.1:9")  # nothing listens
    spec = judge("unused", "a", type="OLLAMA", timeout=2.0)
    del spec["connection"]["base_url"]
    panel = make_panel([spec], max_retries=0)
    [finding] = await panel.adetect(ATTEMPT)
    servers = await panel.check_servers()
    await panel.aclose()
    assert finding.score is None
    text = json.dumps([finding.details, finding.reason, servers])
    assert "pa55word" not in text and "someone" not in text
    assert all("pa55word" not in url and "someone" not in url for url in servers)
