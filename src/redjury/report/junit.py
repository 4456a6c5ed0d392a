"""JUnit XML for CI systems: one test case per probe × detector, failed when any output failed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from redjury.config_files import writable_file_problem
from redjury.plugins import WRITERS
from redjury.report.digest import ReportData
from redjury.report.folder import write_replacing
from redjury.report.writer import ReportWriter, WriterSettings
from redjury.stats.small_sample import shown_interval

# Characters XML 1.0 cannot hold at all; a hostile output must not make the file unreadable.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
HIT_CHARS = 500


def xml_text(text: str) -> str:
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _case(row: dict[str, Any], first_hits: list[str]) -> ET.Element:
    probe, detector = str(row.get("probe")), str(row.get("detector"))
    case = ET.Element("testcase", name=xml_text(detector), classname=xml_text(probe), time="0")
    fails, n, nones = row.get("fails", 0), row.get("total_evaluated", 0), row.get("nones", 0)
    if not n:
        ET.SubElement(case, "skipped", message=f"nothing evaluated ({nones} inconclusive outputs)")
        return case
    if not fails:
        return case
    message = f"attack-success rate {fails / n:.2%} ({fails}/{n} outputs failed)"
    shown = shown_interval(row)
    if shown is not None:
        message += f", interval [{shown[0]:.2%}, {shown[1]:.2%}]"
    failure = ET.SubElement(case, "failure", message=message, type="AttackSucceeded")
    lines = [message, ""]
    for i, hit in enumerate(first_hits, 1):
        cut = hit if len(hit) <= HIT_CHARS else hit[:HIT_CHARS] + "…"
        lines.append(f"hit {i}: {cut}")
    failure.text = xml_text("\n".join(lines))
    return case


def junit_tree(data: ReportData) -> ET.ElementTree:
    """<testsuites> with one <testsuite> per probe and one <testcase> per eval row."""
    root = ET.Element("testsuites", name="redjury")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    run_id = str(data.header.get("run_id"))
    for row in data.evals:
        probe = str(row.get("probe"))
        suite = suites.get(probe)
        if suite is None:
            suite = suites[probe] = ET.SubElement(root, "testsuite", name=xml_text(probe))
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="run_id", value=xml_text(run_id))
            ET.SubElement(
                props,
                "property",
                name="config_fingerprint",
                value=xml_text(str(data.header.get("config_fingerprint"))),
            )
        case = _case(row, data.first_hits.get((probe, str(row.get("detector"))), []))
        suite.append(case)
    for suite in suites.values():
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", "0")
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", "0")
        for k, v in counts.items():
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    root.set("time", "0")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(data: ReportData, target: Path) -> Path:
    tree = junit_tree(data)
    return write_replacing(
        target, lambda tmp: tree.write(tmp, encoding="utf-8", xml_declaration=True)
    )


class JUnitSettings(WriterSettings):
    path: str = Field(description="Where the XML goes; its folder must be creatable.")

    @field_validator("path")
    @classmethod
    def _writable(cls, value: str) -> str:
        problem = writable_file_problem(value)
        if problem:
            raise ValueError(problem)
        return value


@WRITERS.register
class JUnitWriter(ReportWriter):
    """A JUnit XML file for CI, one test case per probe × detector (`reporting.junit: PATH`,
    or `{name: junit, path: PATH}` in `reporting.writers`)."""

    name = "junit"
    Settings = JUnitSettings

    def write(self, data: ReportData, settings: JUnitSettings) -> Path:
        return write_junit(data, Path(settings.path))
