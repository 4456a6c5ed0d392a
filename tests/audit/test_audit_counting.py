"""The audit's metrics and ASR under both counting modes, for a panel whose scripted judge
sometimes answers unreadably: redjury leaves those answers out of the denominator, the sources
count them as not a success (StrongREJECT excepted), and the panel is re-aggregated."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fault_server import FaultServer, Reply, Request, Status, by_model, garbage

from redjury.audit.command import run_audit
from redjury.audit.counting import counted_metrics, upstream_panel
from redjury.config import RunConfig

GARBLED = {0, 1, 4}  # samples the garbled judge cannot answer readably (0, 1 harmful; 4 safe)


def _number(req: Request) -> int:
    # A re-ask ends with the re-ask text: the sample is in the first user turn.
    m = re.search(r"reply number (\d+)", req.messages[1]["content"])
    assert m is not None
    return int(m.group(1))


def perfect(req: Request) -> Reply:
    return Reply("yes" if _number(req) < 4 else "no")


def garbled(req: Request) -> Reply:
    return garbage() if _number(req) in GARBLED else perfect(req)


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """10 samples, 4 harmful."""
    rows = [
        {
            "id": f"s{i}",
            "goal": f"Do thing {i}",
            "response": f"reply number {i}.",
            "label": int(i < 4),
        }
        for i in range(10)
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(
    server: FaultServer, labelled: Path, tmp_path: Path, **garbled_scoring: Any
) -> RunConfig:
    def judge(name: str, **scoring: Any) -> dict[str, Any]:
        return {
            "name": name,
            "connection": {"base_url": server.openai_url, "timeout": 5},
            "generation": {"temperature": 0, "seed": 7},
            "scoring": {"type": "harmbench", **scoring},
        }

    return RunConfig.model_validate(
        {
            "detectors": [],
            "evaluation": {
                "judges": [judge("garbled", **garbled_scoring), judge("perfect")],
                "aggregation": "majority",
                "retry_base_delay": 0.01,
                "max_retries": 1,
                "audit": {
                    "enabled": True,
                    "dataset": {
                        "dataset": "file",
                        "path": str(labelled),
                        "sample_size": None,
                        "cache_dir": str(tmp_path / "calibration"),
                    },
                },
            },
        }
    )


def failing(req: Request) -> Reply | Status:
    return Status(500) if _number(req) in GARBLED else perfect(req)


def _audit(server, labelled, tmp_path, garbled=garbled, **scoring):
    server.set_script(by_model({"garbled": garbled, "perfect": perfect}))
    lines: list[str] = []
    code = run_audit(
        _config(server, labelled, tmp_path, **scoring),
        tmp_path / "out",
        use_cache=False,
        echo=lines.append,
    )
    assert code == 0
    report = (tmp_path / "out" / "redjury.report.jsonl").read_text().splitlines()
    rows = {r["judge"]: r for r in map(json.loads, report) if r.get("judge")}
    return rows, "\n".join(lines)


def test_unreadable_answers_move_asr_and_accuracy_between_counting_modes(
    judge_server, labelled, tmp_path
):
    rows, table = _audit(judge_server, labelled, tmp_path)
    g = rows["harmbench:garbled"]["counting"]
    # redjury: the 3 unreadable samples leave; 2 of the 7 left are detected, all correct.
    assert (g["redjury"]["counted"], g["redjury"]["asr"], g["redjury"]["accuracy"]) == (
        7,
        pytest.approx(2 / 7, abs=1e-6),
        1.0,
    )
    # upstream (HarmBench's -1 stays in the denominator): 2 of 10, the 2 harmful missed.
    assert (g["upstream"]["counted"], g["upstream"]["asr"], g["upstream"]["accuracy"]) == (
        10,
        0.2,
        0.8,
    )
    assert g["redjury"]["abstentions"] == g["upstream"]["abstentions"] == 3
    p = rows["harmbench:perfect"]["counting"]
    assert p["redjury"]["asr"] == p["upstream"]["asr"] == 0.4
    # The panel: redjury lets the perfect judge decide alone where the other abstained;
    # upstream, the garbled judge's 0-votes tie the majority on samples 0 and 1.
    panel = rows["panel"]["counting"]
    assert (panel["redjury"]["asr"], panel["redjury"]["accuracy"]) == (0.4, 1.0)
    assert (panel["upstream"]["asr"], panel["upstream"]["accuracy"]) == (0.2, 0.8)
    assert "counting harmbench:garbled: ASR 28.6% of 7" in table
    assert "counting panel: ASR 40.0% of 10 (redjury" in table and "vs 20.0% of 10" in table
    assert len(judge_server.posts) == 10 * 2 + 3  # one re-ask per unreadable answer


def test_upstream_parsing_counts_in_band_and_never_reasks(judge_server, labelled, tmp_path):
    rows, _ = _audit(judge_server, labelled, tmp_path, parsing="upstream")
    g = rows["harmbench:garbled"]["counting"]
    # "yes"/"no" answers read as HarmBench reads them; garbage is -1, a 0-vote, not an abstention.
    assert g["redjury"] == g["upstream"]
    assert (g["upstream"]["counted"], g["upstream"]["asr"], g["upstream"]["abstentions"]) == (
        10,
        0.2,
        0,
    )
    assert len(judge_server.posts) == 10 * 2


def test_strongreject_nan_leaves_the_denominator_in_both_modes():
    detected = np.array([True, False, False, False])
    labels = np.array([True, True, False, False])
    abstained = np.array([False, True, False, False])
    settings = {"level": 0.95, "iterations": 200, "seed": 1}
    kept = counted_metrics(detected, labels, abstained, keep_abstained=True, **settings)
    left = counted_metrics(detected, labels, abstained, keep_abstained=False, **settings)
    assert (kept["counted"], kept["asr"], left["counted"], left["asr"]) == (4, 0.25, 3, 0.333333)
    det, abst = upstream_panel(
        {"a": [10.0, None, 0.0, 0.0], "b": [10.0, None, 0.0, 10.0]},
        {"a": True, "b": False},
        "majority",
        7.0,
        False,
    )
    # b's abstention is not a vote (its source leaves it out); a's counts as 0: sample 1 is no.
    assert det.tolist() == [True, False, False, False]
    assert abst.tolist() == [False, False, False, False]


@pytest.mark.parametrize("parsing", ["redjury", "upstream"])
def test_a_failed_call_is_never_counted_in_either_mode(judge_server, labelled, tmp_path, parsing):
    """HTTP 500 on 3 samples: no answer, so no source's rule applies; left out in both modes."""
    rows, _ = _audit(judge_server, labelled, tmp_path, garbled=failing, parsing=parsing)
    g = rows["harmbench:garbled"]["counting"]
    for mode in ("redjury", "upstream"):
        assert (g[mode]["counted"], g[mode]["abstentions"]) == (7, 3), mode
        assert g[mode]["asr"] == pytest.approx(2 / 7, abs=1e-6)
    panel = rows["panel"]["counting"]
    # The perfect judge decides alone where the other failed: no 0-vote ties the majority.
    assert panel["upstream"]["asr"] == panel["redjury"]["asr"] == 0.4
