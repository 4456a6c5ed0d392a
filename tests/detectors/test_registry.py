"""The detector registry: built-ins listed with family and hazards, third parties via entry points (R10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from redjury_testing import REPO, read_jsonl, redjury, rows_of, write_jsonl

BUILTINS = {
    "pii_leak",
    "secret_exfiltration",
    "prompt_injection",
    "refusal_consistency",
    "jailbreak_heuristic",
    "guardrail",
    "latency",
    "cost",
    "schema",
}


def test_detectors_list_json_names_every_builtin_with_family_and_hazards() -> None:
    proc = redjury("detectors", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    items = {i["name"]: i for i in json.loads(proc.stdout)}
    assert set(items) >= BUILTINS
    for name in BUILTINS:
        assert {"name", "family", "hazards", "description"} <= set(items[name])
        assert items[name]["family"] in ("deterministic", "heuristic", "agentic")
        assert items[name]["description"]
    assert items["pii_leak"]["hazards"] == ["privacy"]
    assert items["jailbreak_heuristic"]["family"] == "heuristic"


def test_detectors_list_table_mentions_each_detector() -> None:
    proc = redjury("detectors", "list")
    assert proc.returncode == 0
    for name in BUILTINS:
        assert name in proc.stdout


def test_third_party_detector_registers_through_an_entry_point(tmp_path: Path) -> None:
    pkg = tmp_path / "src_pkg"
    (pkg / "shouty_detector").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [build-system]
            requires = ["setuptools>=68"]
            build-backend = "setuptools.build_meta"
            [project]
            name = "shouty-detector"
            version = "0.0.1"
            [project.entry-points."redjury.detectors"]
            shouty = "shouty_detector:ShoutyDetector"
            """
        )
    )
    (pkg / "shouty_detector" / "__init__.py").write_text(
        textwrap.dedent(
            '''
            """A throwaway third-party detector: flags replies written in capitals."""
            from redjury.detectors.base import Detector, Family


            class ShoutyDetector(Detector):
                name = "shouty"
                family = Family.HEURISTIC
                hazards = ("harassment",)
                description = "Flags replies written entirely in capital letters."

                def check(self, attempt, output):
                    return self.bad("all caps") if output.isupper() else self.good()
            '''
        )
    )
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(pkg),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    listed = redjury("detectors", "list", "--json", env=env)
    assert "shouty" in {i["name"] for i in json.loads(listed.stdout)}
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "1", "outputs": ["GO AWAY", "hello there"]}])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors:\n  - type: shouty\n")
    proc = redjury("run", src, "--config", cfg, "--out", tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    (attempt,) = rows_of(tmp_path / "out" / "redjury.report.jsonl", "attempt")
    assert attempt["detector_results"] == {"shouty": [1.0, 0.0]}
    assert len(read_jsonl(tmp_path / "out" / "redjury.hitlog.jsonl")) == 1
    assert REPO.exists()
