"""The HTML file: built from the JSONL alone, redacted as it is, inert against hostile outputs, offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from redjury_testing import redjury, write_jsonl

from redjury.report.digest import load_report
from redjury.report.html import hits_blob, write_html
from redjury.report.outputs import write_html as write_html_contract
from test_pipeline import CARD, EMAIL, SECRET_MARKER, SSN, redaction_inputs


def test_html_holds_none_of_the_redaction_tests_secrets(tmp_path: Path) -> None:
    src, cfg = redaction_inputs(tmp_path)
    out = tmp_path / "out"
    assert redjury("run", src, "--config", cfg, "--out", out).returncode == 0
    html = write_html_contract(out).read_text(encoding="utf-8")
    for raw in (SECRET_MARKER, CARD, SSN, EMAIL, "4539148803436467"):
        assert raw not in html, f"{raw!r} reached the HTML"
    assert "****6467" in html, "the redacted output is in the hits"


def test_a_hostile_output_cannot_leave_the_data_blob(tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)> & <!--"
    header = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    attempt = {
        "entry_type": "attempt",
        "id": "<b>id</b>",
        "probe": "<i>probe</i>",
        "goal": evil,
        "intent": "<u>x</u>",
        "outputs": [evil],
        "detector_results": {"d": [1.0]},
    }
    write_jsonl(tmp_path / "redjury.report.jsonl", [header, attempt])
    html = write_html(tmp_path).read_text(encoding="utf-8")
    assert "<script>alert" not in html and "<img src=x" not in html and "<i>probe</i>" not in html
    blob = re.search(r'<script type="application/json" id="hits-data">(.*?)</script>', html, re.S)
    assert blob is not None
    data = json.loads(blob.group(1))
    assert evil in data["strings"], "the text survives intact inside the blob"


def test_the_page_asks_for_nothing_outside_itself(tmp_path: Path) -> None:
    src, cfg = redaction_inputs(tmp_path)
    out = tmp_path / "out"
    assert redjury("run", src, "--config", cfg, "--out", out).returncode == 0
    html = write_html(out).read_text(encoding="utf-8")
    assert "Content-Security-Policy" in html and "default-src &#x27;none&#x27;" in html
    for pattern in (r"\bsrc\s*=", r"@import", r"url\(", r"https?://(?!www\.w3\.org/2000/svg)"):
        assert not re.search(pattern, html), pattern
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert all(h.startswith("#") or h == "data:," for h in hrefs), hrefs


def test_hits_beyond_the_limit_are_counted_not_embedded(tmp_path: Path) -> None:
    from report_fixtures import synthetic_report

    synthetic_report(tmp_path, 300)
    data = load_report(tmp_path, hit_limit=50)
    assert len(data.hits) == 50 and data.hits_total > 50
    html = write_html(tmp_path, hit_limit=50).read_text(encoding="utf-8")
    assert f"{data.hits_total} failing outputs" in html and "The first 50 are shown" in html


@pytest.mark.slow
def test_html_of_100k_attempts_stays_small(tmp_path: Path) -> None:
    # How long it takes is measured by benchmarks/html_report.py, not asserted here.
    from report_fixtures import synthetic_report

    synthetic_report(tmp_path, 100_000)
    path = write_html(tmp_path)
    assert path.stat().st_size < 8_000_000, path.stat().st_size
    data = load_report(tmp_path, hit_limit=10)
    assert json.loads(hits_blob(data))["hits"]
