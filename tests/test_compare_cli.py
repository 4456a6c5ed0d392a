"""`redjury compare` end to end (issue 42): two runs made by `redjury run` on generated attempts
with known rates — probe A 30 % → 10 %, B unchanged, C 5 % → 25 %, 400 attempts each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from compare_fixtures import attempts_with_rates, write_attempts
from redjury_testing import redjury

BASE_RATES = {"A": 0.30, "B": 0.15, "C": 0.05}
NEW_RATES = {"A": 0.10, "B": 0.15, "C": 0.25}
N = 400
CONFIG = "detectors:\n  - type: pii_leak\nreporting:\n  seed: 7\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    config = root / "config.yaml"
    config.write_text(CONFIG)
    folders = []
    for name, rates, seed in (("base", BASE_RATES, 1), ("new", NEW_RATES, 2)):
        attempts = write_attempts(root / f"{name}.jsonl", attempts_with_rates(rates, N, seed=seed))
        proc = redjury("run", attempts, "--config", config, "--out", root / name)
        assert proc.returncode == 0, proc.stderr
        folders.append(root / name)
    return folders[0], folders[1]


def _rows(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(r["entry_type"] == "comparison" for r in rows)
    return {r["probe"] or r["scope"]: r for r in rows}


def test_known_rates_get_the_right_verdicts_and_covering_intervals(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "c.jsonl"
    proc = redjury("compare", *runs, "--out", out, "--fail-on-regression")
    assert proc.returncode == 4, proc.stderr
    rows = _rows(out)
    expected = {"A": "improvement", "B": "no_change", "C": "regression"}
    for probe, verdict in expected.items():
        row = rows[probe]
        truth = NEW_RATES[probe] - BASE_RATES[probe]
        assert row["verdict"] == verdict, row
        assert row["difference_lower"] <= truth <= row["difference_upper"], row
        assert row["paired"] and row["pairs"] == N
    assert "gate failed: regression: probe C pii_leak" in proc.stdout
    # The table leads with the regression.
    table = [line for line in proc.stdout.splitlines() if re.search(r"│ \w+ +│ probe", line)]
    assert "regression" in table[0] and "C" in table[0]


def test_a_run_against_itself_passes_the_gate(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "self.jsonl"
    proc = redjury("compare", runs[0], runs[0] / "redjury.report.jsonl", "--out", out,
                   "--fail-on-regression")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert {r["verdict"] for r in _rows(out).values()} == {"no_change"}


def test_markdown_renders_as_a_table_and_junit_fails_the_regression(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    from lxml import etree
    from markdown_it import MarkdownIt

    md, xml = tmp_path / "c.md", tmp_path / "c.xml"
    proc = redjury("compare", *runs, "--out", tmp_path / "c.jsonl", "--markdown", md,
                   "--junit", xml, "--adjust", "bh", "--margin", "0.02",
                   "--html", tmp_path / "c.html")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "c.html").read_text().count('class="ci"') == 4
    html = MarkdownIt("commonmark").enable(["table"]).render(md.read_text())
    body_rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(body_rows) == 1 + 3 + 1  # the header, three probes, the run overall (no intents)
    assert all(r.count("<td") in (0, 10) and r.count("<th") in (0, 10) for r in body_rows)
    assert "regression" in body_rows[1]
    schema = etree.XMLSchema(etree.parse(str(Path(__file__).parent / "report" / "junit.xsd")))
    doc = etree.parse(str(xml))
    assert schema.validate(doc), schema.error_log
    failed = [
        case.get("classname") for case in doc.iter("testcase") if case.find("failure") is not None
    ]
    assert failed == ["C"]  # overall the three probes even out: 16.7 % in both runs


def test_bad_arguments_are_one_line_and_exit_2(runs: tuple[Path, Path], tmp_path: Path) -> None:
    proc = redjury("compare", runs[0], tmp_path / "missing", "--out", tmp_path / "x.jsonl")
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"redjury: error: {tmp_path / 'missing'}: no redjury report here (expected redjury.report.jsonl)"
    )
    proc = redjury("compare", *runs, "--adjust", "sidak", "--out", tmp_path / "x.jsonl")
    assert proc.returncode == 2 and "--adjust must be holm or bh" in proc.stderr
