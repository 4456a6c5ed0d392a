"""The comparison page (issue 42) in real headless Chromium: no script errors, nothing fetched,
the forest plot drawn, nothing wider than 1280 px, names from the input shown as text."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from compare_fixtures import PII_ONLY, attempts_with_rates
from report_fixtures import Browser, start_browser

import redjury
from redjury.report.compare_html import write_comparison_html

HOSTILE = "<img src=x onerror=alert(1)>" + "very.long.probe.name" * 12


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = start_browser()
    try:
        yield b
    finally:
        b.close()


def test_the_page_draws_the_forest_plot_within_1280_px(browser: Browser, tmp_path: Path) -> None:
    rates_base = {"A": 0.3, "B": 0.15, HOSTILE: 0.05}
    rates_new = {"A": 0.1, "B": 0.15, HOSTILE: 0.25}
    found = redjury.compare(
        redjury.evaluate(attempts_with_rates(rates_base, 100, seed=1), PII_ONLY),
        redjury.evaluate(attempts_with_rates(rates_new, 100, seed=2), PII_ONLY),
        margin=0.02,
    )
    page = write_comparison_html(found.rows, "runs/<base>", "runs/new", tmp_path / "c.html")
    url = page.resolve().as_uri()
    browser.open(url)
    time.sleep(0.3)  # late console messages arrive after the load event
    assert browser.errors() == []
    assert set(browser.requests()) <= {url}, browser.requests()
    assert browser.evaluate("window.innerWidth") == 1280
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    compared = sum(1 for r in found.rows if r["difference"] is not None)
    assert browser.evaluate("document.querySelectorAll('svg.forest line.ci').length") == compared
    assert (
        browser.evaluate("document.querySelectorAll('svg.forest circle.point').length") == compared
    )
    first = browser.evaluate(
        "Array.from(document.querySelector('#comparison tbody tr').cells).map(c => c.textContent)"
    )
    assert first[0] == "regression" and first[2] == HOSTILE
    # The regression's interval lies right of the zero line, the improvement's left.
    ends = browser.evaluate(
        "Array.from(document.querySelectorAll('#comparison tbody tr')).slice(0, 2).map(tr => {"
        " const l = tr.querySelector('line.ci'), z = tr.querySelector('svg.forest line');"
        " return [+l.getAttribute('x1'), +l.getAttribute('x2'), +z.getAttribute('x1')]; })"
    )
    (lo, _, zero), (_, hi, zero2) = ends
    assert lo > zero and hi < zero2
