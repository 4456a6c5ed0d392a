"""The files a config names are checked when it loads: calibration, detector metrics,
the JUnit target and a labelled audit file; each problem names its key path and file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redjury.config import ConfigError, parse_config


def problems(reporting: dict | None = None, **sections: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config({"reporting": reporting or {}, **sections}, "c.yaml")
    return info.value.messages


def test_missing_calibration_names_key_and_file(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    assert problems({"calibration": str(path)}) == [
        f"c.yaml: reporting.calibration: cannot read {str(path)!r}: No such file or directory"
    ]


def test_calibration_that_is_not_json_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text('{"a/b": {"mu": 1,\n oops}')
    (message,) = problems({"calibration": str(path)})
    assert message.startswith(f"c.yaml: reporting.calibration: {str(path)!r} is not JSON:")
    assert "line 2 column 2" in message


def test_calibration_that_is_a_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text("[1, 2]")
    (message,) = problems({"calibration": str(path)})
    assert "reporting.calibration" in message and "must be an object" in message


def test_valid_calibration_loads(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"p/d": {"mu": 0.5, "sigma": 0.1}}))
    assert parse_config({"reporting": {"calibration": str(path)}}).reporting.calibration


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"results": 3}', "\xff"])
def test_detector_metrics_file_must_be_a_garak_summary(tmp_path: Path, content: str) -> None:
    path = tmp_path / "metrics.json"
    path.write_bytes(content.encode("latin-1"))
    (message,) = problems({"detector_metrics_file": str(path)})
    assert message.startswith("c.yaml: reporting.detector_metrics_file:") and str(path) in message


def test_detector_metrics_entries_that_are_not_objects_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"results": {"d": {"metrics": 3}, "e": 4}}))
    assert parse_config({"reporting": {"detector_metrics_file": str(path)}})


def test_device_is_not_a_calibration_file() -> None:
    assert problems({"calibration": "/dev/zero"}) == [
        "c.yaml: reporting.calibration: '/dev/zero' is not a regular file"
    ]


def test_junit_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report").write_text("x")
    target = tmp_path / "report" / "deeper" / "junit.xml"
    (message,) = problems({"junit": str(target)})
    assert message.startswith("c.yaml: reporting.junit:")
    assert f"{str(tmp_path / 'report')!r} is a file, not a folder" in message


def test_junit_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    (message,) = problems({"junit": str(tmp_path)})
    assert message == f"c.yaml: reporting.junit: {str(tmp_path)!r} is a folder, not a file"


def test_junit_in_folders_yet_to_be_made_is_fine(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "junit.xml"
    assert parse_config({"reporting": {"junit": str(target)}}).reporting.junit == str(target)


def test_missing_labelled_audit_file_is_refused(tmp_path: Path) -> None:
    audit = {"audit": {"dataset": {"dataset": "file", "path": str(tmp_path / "labels.csv")}}}
    (message,) = problems(evaluation=audit)
    assert message.startswith("c.yaml: evaluation.audit.dataset.path: cannot read")
