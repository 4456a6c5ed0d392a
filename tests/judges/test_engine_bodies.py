"""Judge answers are bounded: bytes read (raw and decompressed, `max_answer_bytes`), and what
is kept of an answer in the report and the cache (STORED_TEXT_CHARS)."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest
from fault_server import Encoded, Endless, RawBody, Reply, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.asking import STORED_TEXT_CHARS, cut
from redjury.judges.config import EvaluationSpec

TOO_LARGE = "malformed response: the answer is over 1048576 bytes (evaluation.max_answer_bytes)"


async def one_finding(panel):
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    return finding


def _answer(text: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": text}}]}).encode()


async def test_a_flood_of_an_answer_abstains_with_its_cause(server, make_panel):
    server.set_script(always(RawBody(_answer("yes " + "x" * 50 * 2**20))))
    finding = await one_finding(make_panel([judge(server.openai_url)]))
    assert finding.details["abstained"] == {"harmbench:judge-a": TOO_LARGE}
    assert finding.score is None
    assert server.count == 1  # not retried


async def test_a_gzip_bomb_is_stopped_at_the_decoded_limit(server, make_panel):
    bomb = gzip.compress(_answer("yes " + "0" * 64 * 2**20), compresslevel=9)
    assert len(bomb) < 2**20  # the raw body is within the limit; only the decoded one is not
    server.set_script(always(Encoded(bomb, {"content-encoding": "gzip"})))
    finding = await one_finding(make_panel([judge(server.openai_url)]))
    assert finding.details["abstained"] == {"harmbench:judge-a": TOO_LARGE}


async def test_an_endless_stream_abstains(server, make_panel):
    server.set_script(always(Endless()))
    finding = await one_finding(make_panel([judge(server.openai_url)]))
    assert finding.details["abstained"] == {"harmbench:judge-a": TOO_LARGE}


async def test_a_gzip_answer_within_the_limit_is_read(server, make_panel):
    small = gzip.compress(_answer("yes"))
    server.set_script(always(Encoded(small, {"content-encoding": "gzip"})))
    finding = await one_finding(make_panel([judge(server.openai_url)]))
    assert finding.details["votes"] == {"harmbench:judge-a": 10.0}


async def test_max_answer_bytes_is_a_setting(server, make_panel):
    server.set_script(always(Reply("yes " + "x" * 4000)))
    small = await one_finding(make_panel([judge(server.openai_url)], max_answer_bytes=2048))
    reason = small.details["abstained"]["harmbench:judge-a"]
    assert reason == (
        "malformed response: the answer is over 2048 bytes (evaluation.max_answer_bytes)"
    )
    default = await one_finding(make_panel([judge(server.openai_url)], use_cache=False))
    assert default.details["votes"] == {"harmbench:judge-a": 10.0}


def test_max_answer_bytes_is_bounded():
    for bad in (0, 1023, 2**30 + 1):
        with pytest.raises(ValueError, match="max_answer_bytes"):
            EvaluationSpec.model_validate({"max_answer_bytes": bad})


async def test_a_long_answer_is_cut_in_the_report_and_the_cache(server, make_panel, tmp_path):
    server.set_script(always(Reply("yes " + "blah " * 100_000)))
    cache = tmp_path / "cut.sqlite"
    panel = make_panel([judge(server.openai_url)], cache=cache)
    finding = await one_finding(panel)
    [vote] = finding.details["judges"]
    assert vote["score"] == 10.0
    assert len(vote["raw"]) == STORED_TEXT_CHARS
    assert vote["raw"].startswith("yes blah") and vote["raw"].endswith("[cut: 500004 characters]")
    panel.close()
    [(raw,)] = sqlite3.connect(cache).execute("SELECT raw FROM judgements").fetchall()
    assert raw == vote["raw"]


def test_cut_keeps_short_text_and_is_stable():
    assert cut("short") == "short"
    once = cut("x" * 10_000)
    assert len(once) == STORED_TEXT_CHARS and cut(once) == once
