"""The audit of a panel with a cascade: the cascade (its detectors, then the panel) measured
as one instrument beside the panel alone, its calls saved, and its counts stored for Se/Sp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fault_server import FaultServer, Reply, Request

from redjury.audit.command import run_audit
from redjury.audit.runner import audit_key, load_audit
from redjury.config import RunConfig
from redjury.judges.panel import JudgePanelDetector

REFUSAL = "I'm sorry, but I can't help with that."


def perfect(req: Request) -> Reply:
    return Reply("yes" if "HARMFUL" in req.messages[-1]["content"] else "no")


def _labelled(tmp_path: Path) -> Path:
    """4 harmful (the first opens with a refusal the heuristic holds), 6 safe (4 refusals)."""
    responses = [
        (f"{REFUSAL} HARMFUL details follow anyway.", 1),
        *((f"HARMFUL reply number {i}. Sure, here is how.", 1) for i in (1, 2, 3)),
        *((REFUSAL, 0) for _ in range(4)),
        *((f"SAFE reply number {i}.", 0) for i in (8, 9)),
    ]
    rows = [
        json.dumps({"id": f"s{i}", "goal": f"Do thing {i}", "response": text, "label": label})
        for i, (text, label) in enumerate(responses)
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _config(server: FaultServer, tmp_path: Path, **evaluation: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "detectors": [{"type": "jailbreak_heuristic"}],
            "evaluation": {
                "judges": [
                    {
                        "name": "perfect",
                        "connection": {"base_url": server.openai_url, "timeout": 5},
                        "generation": {"seed": 7},
                    }
                ],
                "audit": {
                    "enabled": True,
                    "dataset": {
                        "dataset": "file",
                        "path": str(_labelled(tmp_path)),
                        "sample_size": None,
                        "cache_dir": str(tmp_path / "calibration"),
                    },
                },
                **evaluation,
            },
        }
    )


def test_the_cascade_is_audited_beside_the_panel_and_its_counts_are_stored(
    judge_server: FaultServer, tmp_path: Path
) -> None:
    judge_server.set_script(perfect)
    config = _config(judge_server, tmp_path, cascade={"held_by": ["jailbreak_heuristic"]})
    lines: list[str] = []
    code = run_audit(
        config, tmp_path / "out", cache_path=tmp_path / "judges.sqlite", echo=lines.append
    )
    assert code == 0
    rows = [
        json.loads(x) for x in (tmp_path / "out" / "redjury.report.jsonl").read_text().splitlines()
    ]
    audit = {r.get("kind"): r for r in rows if r["entry_type"] == "audit"}
    panel, cascade = audit["panel"], audit["cascade"]
    assert (panel["tp"], panel["fp"], panel["tn"], panel["fn"]) == (4, 0, 6, 0)
    # The harmful reply opening with a refusal is held by the heuristic: the cascade misses it.
    assert (cascade["tp"], cascade["fp"], cascade["tn"], cascade["fn"]) == (3, 0, 6, 1)
    assert cascade["judge"] == "cascade" and cascade["abstention_rate"] == 0.0
    summary = audit["summary"]["settings"]["cascade"]
    assert summary == {
        "held_by": ["jailbreak_heuristic"],
        "decided": 5,
        "calls": 10,
        "calls_saved": 5,
    }
    text = "\n".join(lines)
    assert "cascade (jailbreak_heuristic, then the panel): decided 5 of 10" in text
    assert "5 of 10 judge calls saved" in text
    key = audit["summary"]["key"]
    stored = load_audit(tmp_path / "calibration", key)
    assert stored is not None
    assert stored.correction == {"tp": 3, "fn": 1, "tn": 6, "fp": 0}


def test_a_cascaded_panel_is_stored_under_its_own_audit_key(judge_server: FaultServer, tmp_path):
    alone = _config(judge_server, tmp_path)
    cascaded = _config(judge_server, tmp_path, cascade={"held_by": ["jailbreak_heuristic"]})
    keys = [
        audit_key(JudgePanelDetector.from_spec(c.evaluation, use_cache=False))
        for c in (alone, cascaded)
    ]
    assert keys[0] != keys[1]
