"""The HTML report in real headless Chromium: no console errors, no network requests, the
headline chart and hits table present, filtering works, and a large report opens fast."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redjury_testing import REPO
from report_fixtures import Browser, run_example, start_browser, synthetic_report

from redjury.report.html import write_html

ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = start_browser()
    try:
        yield b
    finally:
        b.close()


def _rows(browser: Browser) -> list[list[str]]:
    return browser.evaluate(
        "Array.from(document.querySelectorAll('#hits-body tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))"
    )


def _set(browser: Browser, element: str, value: str, event: str) -> None:
    browser.evaluate(
        f"(() => {{ const e = document.getElementById({element!r}); e.value = {value!r};"
        f" e.dispatchEvent(new Event({event!r})); }})()"
    )


def test_example_report_loads_clean_and_filters(browser: Browser, tmp_path: Path) -> None:
    out = run_example(tmp_path / "run")
    html = write_html(out)
    url = html.resolve().as_uri()
    browser.open(url)
    time.sleep(0.3)  # late console messages and CSP reports arrive after the load event
    assert browser.evaluate("document.body.getAttribute('data-hits-ready')") == "1"
    assert browser.errors() == []
    assert set(browser.requests()) <= {url}, browser.requests()

    assert browser.evaluate("document.querySelectorAll('#headline-chart rect.asr-bar').length") > 0
    assert browser.evaluate("document.querySelectorAll('#headline-chart g.ci').length") > 0
    assert browser.evaluate("!!document.getElementById('matrix-chart')")
    rows = _rows(browser)
    assert len(rows) == 9  # the example's failing outputs
    assert {r[1] for r in rows} >= {"pii_leak", "jailbreak_heuristic"}

    _set(browser, "hits-detector", "pii_leak", "change")
    rows = _rows(browser)
    assert rows and all(r[1] == "pii_leak" for r in rows)
    _set(browser, "hits-detector", "", "change")

    _set(browser, "hits-search", "keylogger", "input")
    time.sleep(0.4)  # the search box waits for typing to pause
    rows = _rows(browser)
    assert len(rows) == 1 and "keylogger" in rows[0][4].lower()
    assert browser.evaluate("document.getElementById('hits-count').textContent") == "1 of 9 hits"
    _set(browser, "hits-search", "", "input")
    time.sleep(0.4)
    assert len(_rows(browser)) == 9
    assert browser.errors() == []

    shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(base64.b64decode(shot["data"]))


@pytest.mark.slow
def test_report_of_100k_attempts_opens_one_page_of_hits(browser: Browser, tmp_path: Path) -> None:
    synthetic_report(tmp_path, 100_000)
    html = write_html(tmp_path)
    start = time.monotonic()
    browser.open(html.resolve().as_uri())
    # A bound on the wait, not a speed check (the machines are noisy).
    while browser.evaluate("document.body.getAttribute('data-hits-ready')") != "1":
        assert time.monotonic() - start < 30, "the hits table was not ready in 30 s"
        time.sleep(0.05)
    assert len(_rows(browser)) == 50, "one page of hits in the DOM"
    _set(browser, "hits-search", "a1234", "input")
    time.sleep(0.5)
    rows = _rows(browser)
    assert rows and all(r[5].startswith("a1234") for r in rows)
    assert browser.errors() == []


PAYLOADS = (
    "<img src=x onerror=window.__pwned=1>",
    "</script><script>window.__pwned=2</script>",
    '"><svg onload=window.__pwned=3>',
    "javascript:window.__pwned=4",
    "{{constructor.constructor('window.__pwned=5')()}}",
    "<iframe src=https://evil.example/></iframe>",
)


def _hostile_report(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    evil = " ".join(PAYLOADS)
    url = "http://intruder:pl4nted-pass@127.0.0.1:9/v1"
    header = {
        "entry_type": "init",
        "run_id": PAYLOADS[0],
        "evaluator": {"type": "threshold", "threshold": 0.5},
        "inputs": [PAYLOADS[1]],
        "detectors": list(PAYLOADS),
        # An older report may still hold URL user info in its config dump.
        "config": {
            "evaluation": {"judges": [{"name": PAYLOADS[2], "connection": {"base_url": url}}]}
        },
    }
    rows: list[dict[str, object]] = [header]
    for name in PAYLOADS:
        rows.append(
            {
                "entry_type": "attempt",
                "id": name,
                "probe": name,
                "goal": evil,
                "intent": name,
                "hazard": name,
                "generator": name,
                "outputs": [evil],
                "detector_results": {name: [1.0]},
                "details": {name: [{"judges": [{"judge": name, "raw": evil, "score": 10}]}]},
            }
        )
        rows.append(
            {
                "entry_type": "eval",
                "probe": name,
                "detector": name,
                "passed": 0,
                "fails": 1,
                "nones": 0,
                "total_evaluated": 1,
                "total_processed": 1,
            }
        )
    with (folder / "redjury.report.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return folder


def test_hostile_names_and_outputs_stay_text_in_a_real_browser(
    browser: Browser, tmp_path: Path
) -> None:
    html = write_html(_hostile_report(tmp_path / "run"))
    page = html.read_text(encoding="utf-8")
    assert "pl4nted-pass" not in page and "intruder" not in page
    url = html.resolve().as_uri()
    browser.open(url)
    time.sleep(0.3)
    assert browser.evaluate("document.body.getAttribute('data-hits-ready')") == "1"
    _set(browser, "hits-search", "pwned", "input")
    time.sleep(0.4)
    assert len(_rows(browser)) == len(PAYLOADS)
    assert browser.evaluate("window.__pwned === undefined")
    assert (
        browser.evaluate(
            "document.querySelectorAll('img, iframe, svg [onload], [onerror], [onload]').length"
        )
        == 0
    )
    # The page's own script and its data blob, nothing else.
    assert browser.evaluate("document.scripts.length") == 2
    methods = {ev.get("method") for ev in browser.events}
    assert "Page.javascriptDialogOpening" not in methods
    assert browser.errors() == []
    assert set(browser.requests()) <= {url}, browser.requests()
    text = browser.evaluate("document.body.innerText")
    assert PAYLOADS[0] in text, "the payload is shown as text"


def test_hits_table_fits_1280_px_with_the_attempt_column_visible(
    browser: Browser, tmp_path: Path
) -> None:
    html = write_html(run_example(tmp_path / "run"))
    browser.open(html.resolve().as_uri())
    assert browser.evaluate("window.innerWidth") == 1280
    # No horizontal scrollbar, and the attempt column is as wide as its text needs.
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    right = browser.evaluate("document.getElementById('hits-table').getBoundingClientRect().right")
    assert right <= 1280
    widths = browser.evaluate(
        "Array.from(document.querySelectorAll('#hits-body tr td:last-child'))"
        ".map(td => [td.clientWidth, td.scrollWidth])"
    )
    assert widths and all(client >= 80 and scroll <= client for client, scroll in widths)
