"""Real files published by others (REDJURY_TEST_DATA): one attempt per case, sample or
attack, and the tool's own failing count comes out of redjury unchanged."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from formats_testing import attempts, failing
from redjury_testing import redjury, rows_of

ROOT = Path(os.environ.get("REDJURY_TEST_DATA", "/nonexistent")) / "real-formats"
pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason="REDJURY_TEST_DATA/real-formats not present"
)


def promptfoo_files() -> list[Path]:
    return sorted((ROOT / "promptfoo").glob("*.json")) if ROOT.is_dir() else []


def inspect_files() -> list[Path]:
    return sorted((ROOT / "inspect_ai").glob("*")) if ROOT.is_dir() else []


@pytest.mark.parametrize("path", promptfoo_files(), ids=lambda p: p.name)
def test_promptfoo_file_gives_one_attempt_per_row_and_promptfoos_failures(path: Path) -> None:
    doc = json.loads(path.read_text())
    summary = doc["results"] if isinstance(doc["results"], dict) else doc
    rows = summary["results"]
    got = attempts(path)
    assert len(got) == len(rows)
    assert failing(got, "promptfoo:") == summary["stats"]["failures"]


def _inspect_samples(path: Path) -> list[dict]:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.startswith("samples/")]
            return [json.loads(z.read(n)) for n in names]
    return json.loads(path.read_text())["samples"]


@pytest.mark.parametrize("path", inspect_files(), ids=lambda p: p.name)
def test_inspect_log_gives_one_attempt_per_sample_and_epoch(path: Path) -> None:
    samples = _inspect_samples(path)
    got = attempts(path)
    assert len(got) == len(samples)
    incorrect = sum(
        any(s.get("value") in ("I", 0, 0.0, False) for s in (x.get("scores") or {}).values())
        for x in samples
    )
    assert failing(got, "inspect:") == incorrect
    assert all(a.outputs and a.outputs[0] for a in got.values()), "every sample has a reply"


def test_run_over_all_real_files_exits_0(tmp_path: Path) -> None:
    files = promptfoo_files() + inspect_files()
    proc = redjury("run", *files, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert rows_of(tmp_path / "out" / "redjury.report.jsonl", "input_error") == []
