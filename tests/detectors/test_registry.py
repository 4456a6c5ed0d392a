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


def test_builtin_name_table_matches_what_the_modules_register() -> None:
    """Each built-in name leads to the module that registers it, and every built-in is named."""
    from redjury.detectors.registry import BUILTIN_MODULES, BUILTIN_NAMES, detector_classes

    classes = detector_classes()
    builtin = {n: c for n, c in classes.items() if c.__module__.startswith("redjury.")}
    assert set(BUILTIN_NAMES) == set(builtin)
    for name, module in BUILTIN_NAMES.items():
        assert module in BUILTIN_MODULES
        assert builtin[name].__module__.startswith(module), name


def test_a_run_that_names_its_detectors_imports_only_theirs(tmp_path: Path) -> None:
    """No HTTP client and no JSON Schema library for a run of pii_leak (start-up time)."""
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "1", "outputs": ["hello"]}])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors:\n  - type: pii_leak\n")
    code = textwrap.dedent(
        f"""
        import sys
        from redjury.cli import main
        sys.argv = ["redjury", "run", {str(src)!r}, "-c", {str(cfg)!r},
                    "-o", {str(tmp_path / "out")!r}]
        try:
            main()
        except SystemExit as exc:
            assert not exc.code, exc.code
        loaded = sorted(m for m in ("aiohttp", "jsonschema", "redjury.judges.panel")
                        if m in sys.modules)
        print(",".join(loaded) or "none")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "none"
    assert rows_of(tmp_path / "out" / "redjury.report.jsonl", "attempt")


def test_the_default_builtins_are_the_builtins_enabled_by_default() -> None:
    from redjury.detectors.registry import (
        DEFAULT_BUILTINS,
        default_detector_classes,
        detector_classes,
    )

    enabled = {
        name
        for name, cls in detector_classes().items()
        if cls.default_enabled and cls.__module__.startswith("redjury.")
    }
    assert set(DEFAULT_BUILTINS) == enabled
    assert {cls.name for cls in default_detector_classes()} >= enabled
