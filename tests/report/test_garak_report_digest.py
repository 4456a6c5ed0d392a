"""garak's own `report_digest` renders redjury's report: the real garak package (0.17.1, in
a virtualenv of its own: .ci/install_garak.sh) run as a subprocess on a report redjury wrote,
its page opened in headless Chromium with no script error, redjury's probes on it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redjury_testing import REPO
from report_fixtures import Browser, run_example, start_browser

from redjury.report.garak_digest import defcon, garak_digest

GARAK_PYTHON_ENV = "REDJURY_GARAK_PYTHON"


def garak_python() -> str:
    """The interpreter that has garak: $REDJURY_GARAK_PYTHON or .venv-garak; skipped where
    neither is, except on CI where that is a failure."""
    candidates = [os.environ.get(GARAK_PYTHON_ENV), str(REPO / ".venv-garak" / "bin" / "python")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    missing = f"garak is not installed: .ci/install_garak.sh (or set {GARAK_PYTHON_ENV})"
    if os.environ.get("CI") == "true":
        pytest.fail(missing)
    pytest.skip(missing)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = start_browser()
    try:
        yield b
    finally:
        b.close()


def report_digest(report: Path, html: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(scratch),
        "XDG_CONFIG_HOME": str(scratch / "config"),
        "XDG_DATA_HOME": str(scratch / "data"),
        "XDG_CACHE_HOME": str(scratch / "cache"),
    }
    return subprocess.run(
        [garak_python(), "-m", "garak.analyze.report_digest", "-r", str(report), "-o", str(html)],
        capture_output=True,
        text=True,
        cwd=scratch,
        env=env,
        timeout=300,
    )


def test_garaks_report_digest_renders_redjurys_report(browser: Browser, tmp_path: Path) -> None:
    run = run_example(tmp_path / "run")
    html = tmp_path / "digest.html"
    proc = report_digest(run / "redjury.report.jsonl", html, tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = html.read_text(encoding="utf-8")
    assert "jailbreak.roleplay" in page and "pii.customer_records" in page

    browser.open(html.resolve().as_uri())
    time.sleep(1.0)  # the page renders after the load event
    assert browser.errors() == []
    text = browser.evaluate("document.body.innerText")
    assert "Garak Version: redjury" in text
    assert not re.search(r"Invalid Date|undefined|NaN", text)
    for group in ("injection", "jailbreak", "leak", "multiturn", "pii"):
        assert f"redjury probes {group}.*" in text


def test_the_garak_view_of_the_digest_row() -> None:
    header = {"redjury_version": "9.9", "start_time": "2026-01-01T00:00:00+00:00", "run_id": "r"}
    pairs = [
        {"probe": "a.x", "detector": "d1", "passed": 3, "fails": 1, "total_evaluated": 4,
         "confidence": 0.95, "confidence_lower": 0.05, "confidence_upper": 0.7},
        {"probe": "a.x", "detector": "d2", "passed": 4, "fails": 0, "total_evaluated": 4},
        {"probe": "a.y", "detector": "d1", "passed": 0, "fails": 0, "total_evaluated": 0},
        {"probe": "b", "detector": "d1", "passed": 0, "fails": 2, "total_evaluated": 2},
    ]  # fmt: skip
    view = json.loads(json.dumps(garak_digest(header, pairs)))  # plain JSON, as written
    assert view["meta"]["garak_version"] == "redjury 9.9"
    assert sorted(view["eval"]) == ["a", "b"]
    probe = view["eval"]["a"]["a.x"]
    assert "a.y" not in view["eval"]["a"]  # nothing evaluated: no row, as in garak
    assert probe["_summary"]["probe_score"] == 0.75  # the worst detector's pass rate
    d1 = probe["d1"]
    assert (d1["absolute_score"], d1["absolute_defcon"]) == (0.75, 3)
    assert d1["absolute_confidence_lower"] == pytest.approx(0.3)  # 1 - ASR upper
    assert d1["absolute_confidence_upper"] == pytest.approx(0.95)
    assert probe["d2"]["absolute_defcon"] == 5
    assert view["eval"]["b"]["_summary"]["group_defcon"] == 1
    assert [defcon(s) for s in (0.0, 0.05, 0.4, 0.8, 0.99, 1.0)] == [1, 2, 3, 4, 5, 5]
