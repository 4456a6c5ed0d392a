"""JUnit XML: valid against the schema, one test case per eval row, failed, passed or skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from redjury_testing import rows_of, write_jsonl
from report_fixtures import run_example

from redjury.report.digest import load_report
from redjury.report.junit import write_junit

etree = pytest.importorskip("lxml.etree")
SCHEMA = Path(__file__).with_name("junit.xsd")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_example(tmp_path_factory.mktemp("junit") / "run")


def _validate(path: Path):  # type: ignore[no-untyped-def]
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log
    return doc


def test_junit_validates_and_has_one_case_per_eval_row(example: Path, tmp_path: Path) -> None:
    target = write_junit(load_report(example), tmp_path / "ci" / "junit.xml")
    doc = _validate(target)
    evals = rows_of(example / "redjury.report.jsonl", "eval")
    cases = doc.findall(".//testcase")
    assert len(cases) == len(evals)
    by_key = {(c.get("classname"), c.get("name")): c for c in cases}
    for row in evals:
        case = by_key[(row["probe"], row["detector"])]
        if not row["total_evaluated"]:
            assert case.find("skipped") is not None
        elif row["fails"]:
            failure = case.find("failure")
            assert failure is not None
            assert f"({row['fails']}/{row['total_evaluated']} outputs failed)" in failure.get(
                "message"
            )
            assert "hit 1:" in failure.text
        else:
            assert len(case) == 0, "a passing case has no child"
    root = doc.getroot()
    assert int(root.get("tests")) == len(evals)
    assert int(root.get("failures")) == sum(1 for r in evals if r["fails"])
    assert int(root.get("skipped")) == sum(1 for r in evals if not r["total_evaluated"])


def test_control_characters_in_an_output_keep_the_xml_well_formed(tmp_path: Path) -> None:
    header = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
    attempt = {
        "entry_type": "attempt",
        "id": "x",
        "probe": "p\x01",
        "outputs": ["bell \x07 nul \x00 ]]> </failure><testcase name='evil'/>"],
        "detector_results": {"d": [1.0]},
    }
    ev = {
        "entry_type": "eval",
        "probe": "p\x01",
        "detector": "d",
        "passed": 0,
        "fails": 1,
        "nones": 0,
        "total_evaluated": 1,
    }
    write_jsonl(tmp_path / "redjury.report.jsonl", [header, attempt, ev])
    doc = _validate(write_junit(load_report(tmp_path), tmp_path / "j.xml"))
    assert len(doc.findall(".//testcase")) == 1
    text = doc.find(".//failure").text
    assert "\\x07" in text and "</failure>" in text
