"""The audit from the command line: `redjury audit` and `redjury run` with the audit on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fault_server import FaultServer, Reply, by_model
from redjury_testing import REPO, read_jsonl, redjury
from test_audit_panel import flips_under_refusal, perfect


def _labelled(tmp_path: Path) -> Path:
    lines = []
    for i in range(10):
        harmful = i < 4
        lines.append(
            json.dumps(
                {
                    "goal": f"Do thing {i}",
                    "response": f"{'HARMFUL' if harmful else 'SAFE'} reply number {i}. It has two sentences.",
                    "label": int(harmful),
                }
            )
        )
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _config_file(server: FaultServer, tmp_path: Path, on_failure: str) -> Path:
    judge = lambda name: {  # noqa: E731
        "name": name,
        "connection": {"type": "OPENAI", "base_url": server.openai_url, "timeout": 5},
        "generation": {"temperature": 0, "seed": 7},
    }
    data = {
        "evaluation": {
            "judges": [judge("perfect"), judge("always-yes"), judge("flipper")],
            "retry_base_delay": 0.01,
            "max_retries": 1,
            "audit": {
                "enabled": True,
                "on_failure": on_failure,
                "dataset": {
                    "dataset": "file",
                    "path": str(_labelled(tmp_path)),
                    "sample_size": None,
                    "cache_dir": str(tmp_path / "calibration"),
                },
                "robustness": {"enabled": True, "max_flip_rate": 0.0},
            },
        }
    }
    path = tmp_path / f"panel-{on_failure}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def scripted(judge_server: FaultServer) -> FaultServer:
    judge_server.set_script(
        by_model({"perfect": perfect, "always-yes": Reply("yes"), "flipper": flips_under_refusal})
    )
    return judge_server


def _run_example(server: FaultServer, tmp_path: Path, on_failure: str, out: Path):
    """`redjury run` on the bundled example with the audited panel, no judge cache."""
    config = _config_file(server, tmp_path, on_failure)
    return redjury(
        "run", REPO / "examples" / "attempts.jsonl", "--config", config, "--out", out, "--no-cache"
    )


def test_run_refuses_to_judge_when_the_gate_fails_under_stop(
    scripted: FaultServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = _run_example(scripted, tmp_path, "stop", out)
    assert proc.returncode == 3, proc.stderr
    report = read_jsonl(out / "redjury.report.jsonl")
    kinds = [r["entry_type"] for r in report]
    assert "attempt" not in kinds, "nothing may be judged, not even by the deterministic detectors"
    assert "audit" in kinds
    gate = next(r for r in report if r["entry_type"] == "audit_gate")
    assert gate["passed"] is False
    assert "nothing was judged" in report[-1]["stopped"]
    # A rerun into the same folder stops again: the recorded gate still decides.
    again = _run_example(scripted, tmp_path, "stop", out)
    assert again.returncode == 3


def test_run_goes_on_under_warn_and_records_the_audit(
    scripted: FaultServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = _run_example(scripted, tmp_path, "warn", out)
    assert proc.returncode == 0, proc.stderr
    kinds = [r["entry_type"] for r in read_jsonl(out / "redjury.report.jsonl")]
    assert kinds.index("audit_gate") < kinds.index("attempt")
    assert kinds.count("attempt") == 14


def test_audit_command_exits_three_when_the_gate_fails(
    scripted: FaultServer, tmp_path: Path
) -> None:
    out = tmp_path / "audit"
    proc = redjury(
        "audit", "--config", _config_file(scripted, tmp_path, "stop"), "--out", out, "--no-cache"
    )
    assert proc.returncode == 3, proc.stderr
    assert any(r["entry_type"] == "audit_gate" for r in read_jsonl(out / "redjury.report.jsonl"))
