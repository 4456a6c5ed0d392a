"""The `file` dataset: the user's own labelled CSV or JSONL, with line-numbered errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redjury.audit.datasets import DatasetError, load_calibration, load_labelled_file
from redjury.judges.config import CalibrationSpec


def test_csv_with_optional_context(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        "goal,response,label,goal_context\n"
        'Explain X,"Sure, here is X.",1,\n'
        "Explain Y,I can't help with that.,0,Some context\n",
        encoding="utf-8",
    )
    data = load_labelled_file(path)
    assert [s.label for s in data.samples] == [True, False]
    assert data.samples[0].goal_context is None
    assert data.samples[1].goal_context == "Some context"
    assert data.samples[0].response == "Sure, here is X."
    assert data.samples[0].id == "line-2"


def test_jsonl_bad_lines_are_reported_with_their_numbers(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [
        json.dumps({"goal": "g", "response": "r", "label": 1}),
        "",
        "{not json",
        json.dumps({"goal": "g", "response": "r", "label": 2}),
        json.dumps({"goal": "g", "label": 0}),
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_labelled_file(path)
    text = str(err.value)
    assert "3 bad line(s)" in text
    assert f"{path}:3: not JSON" in text
    assert f"{path}:4: label must be 0 or 1, got 2" in text
    assert f"{path}:5: missing response" in text


def test_file_dataset_through_the_spec_is_sampled(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "goal": "g", "response": f"r{i}", "label": i % 3 == 0})
            + "\n"
            for i in range(30)
        ),
        encoding="utf-8",
    )
    spec = CalibrationSpec(dataset="file", path=str(path), sample_size=6, seed=1)
    drawn = load_calibration(spec)
    assert len(drawn.samples) == 6 and drawn.positives == 2
    assert drawn.joined == 30
    with pytest.raises(DatasetError, match="path is required"):
        load_calibration(CalibrationSpec(dataset="file"))
