"""The HTML report in real headless Chromium: no console errors, no network requests, the
headline chart and hits table present, filtering works, and a large report opens fast."""

from __future__ import annotations

import base64
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
def test_report_of_100k_attempts_opens_in_seconds(browser: Browser, tmp_path: Path) -> None:
    synthetic_report(tmp_path, 100_000)
    html = write_html(tmp_path)
    start = time.monotonic()
    browser.open(html.resolve().as_uri())
    while browser.evaluate("document.body.getAttribute('data-hits-ready')") != "1":
        assert time.monotonic() - start < 10, "the hits table was not ready in 10 s"
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    assert elapsed < 5, f"{elapsed:.1f}s"
    assert len(_rows(browser)) == 50, "one page of hits in the DOM"
    _set(browser, "hits-search", "a1234", "input")
    time.sleep(0.5)
    rows = _rows(browser)
    assert rows and all(r[5].startswith("a1234") for r in rows)
    assert browser.errors() == []


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
