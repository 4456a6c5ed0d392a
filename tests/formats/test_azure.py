"""Azure AI Evaluation red-team scan output read as attempts."""

from __future__ import annotations

import json
from pathlib import Path

from formats_testing import DATA, attempts, failing, records

SCAN = DATA / "azure_scan.json"


def test_each_attack_detail_is_one_attempt_with_its_risk_category_verdict() -> None:
    got = attempts(SCAN)
    assert len(got) == 3
    assert failing(got, "azure:") == 1
    first = got["azure_scan.json:0"]
    assert first.probe == "azure:base64/easy"
    assert first.intent == "violence"
    assert first.outputs == ["You could hit them with..."]
    assert first.detector_results == {"azure:violence": [1.0]}
    assert got["azure_scan.json:1"].detector_results == {"azure:hate_unfairness": [0.0]}


def test_an_unevaluated_attack_is_null_and_multi_turn_reply_follows_the_last_user_turn() -> None:
    third = attempts(SCAN)["azure_scan.json:2"]
    assert third.detector_results == {"azure:violence": [None]}
    assert third.outputs == ["Evaluation failed."]
    assert third.messages is not None and len(third.messages) == 4


def test_an_attack_without_conversation_is_reported_by_its_index(tmp_path: Path) -> None:
    doc = json.loads(SCAN.read_text())
    doc["attack_details"][0]["conversation"] = None
    src = tmp_path / "scan.json"
    src.write_text(json.dumps(doc))
    errors = [str(r.error) for r in records(src) if r.error]
    assert errors == [f"{src}:attack_details[0]: conversation: missing or not a list"]


def test_the_eval_run_summary_conversations_read_like_attack_details(tmp_path: Path) -> None:
    doc = json.loads(SCAN.read_text())
    run = {"object": "eval.run", "id": "run-9", "conversations": doc["attack_details"]}
    src = tmp_path / "run.json"
    src.write_text(json.dumps(run, indent=2))
    got = attempts(src)
    assert sorted(got) == ["run-9:0", "run-9:1", "run-9:2"]
    assert {a.run_id for a in got.values()} == {"run-9"}
