"""A report edited after redjury wrote it (any value of any row replaced by a JSON value of
another shape, or a key removed): every reader of reports either reads it or stops with one
line naming the report, the line and the field. None fails with another error."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redjury_testing import REPO

import redjury as rj
from redjury.errors import RunError
from redjury.stats.calibration import build_calibration

REPORT = "redjury.report.jsonl"
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
REMOVED = object()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The report lines of real runs: the bundled example and a garak report read in."""
    found = {}
    for name in ("attempts.jsonl", "garak.report.jsonl"):
        out = tmp_path_factory.mktemp("run")
        rj.evaluate([REPO / "examples" / name], None, out=out)
        found[name] = (out / REPORT).read_text(encoding="utf-8").splitlines()
    return found


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a row a value sits (keys and list indices), the row's own keys first."""
    found = [at] if at else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value[:4]):
            found += _paths(inner, (*at, i))
    return found


def _edit(draw: st.DrawFn, line: str) -> str:
    """The row on `line` with one of its values replaced by another JSON shape, or removed."""
    row = json.loads(line)
    path = draw(st.sampled_from(_paths(row)))
    value = draw(VALUES | st.just(REMOVED))
    holder = row
    for step in path[:-1]:
        holder = holder[step]
    if value is REMOVED and isinstance(holder, dict):
        del holder[path[-1]]
    else:
        holder[path[-1]] = None if value is REMOVED else value
    return json.dumps(row)


@st.composite
def edits(draw: st.DrawFn, runs: dict[str, list[str]]) -> tuple[str, int, list[str]]:
    name = draw(st.sampled_from(sorted(runs)))
    lines = list(runs[name])
    number = draw(st.integers(0, len(lines) - 1))
    lines[number] = _edit(draw, lines[number])
    return name, number + 1, lines


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI never meets a new one by chance
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_reader_reads_an_edited_report_or_names_the_line(
    runs: dict[str, list[str]], tmp_path: Path, data: st.DataObject
) -> None:
    name, _, lines = data.draw(edits(runs))
    folder = tmp_path / "edited"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    report = folder / REPORT
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    original = tmp_path / "original"
    if not original.exists():
        original.mkdir()
    (original / REPORT).write_text("\n".join(runs[name]) + "\n", encoding="utf-8")
    readers = {
        "summary": lambda: rj.print_summary(folder),
        "report": lambda: rj.write_html(folder),
        "compare": lambda: rj.compare(original, folder),
        "calibrate": lambda: build_calibration([report]),
    }
    for reader, read in readers.items():
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                read()
            except (ValueError, RunError) as exc:  # one line, naming the edited report
                said = str(exc).strip()
                assert "\n" not in said, (reader, said)
                # compare reads two reports: a refused value that has its type (an unknown
                # verdict policy) cannot always say which of the two it came from.
                assert reader == "compare" or str(folder) in said, (reader, said)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the bundled example."""
    out = tmp_path_factory.mktemp("judged")
    rj.evaluate([REPO / "examples" / "attempts.jsonl"], None, out=out)
    return out


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_resume_over_edited_kept_rows_goes_on_or_names_the_line_and_keeps_the_folder(
    judged: Path, tmp_path: Path, data: st.DataObject
) -> None:
    lines = (judged / REPORT).read_text(encoding="utf-8").splitlines()
    attempts = [i for i, line in enumerate(lines) if '"entry_type":"attempt"' in line]
    kept = data.draw(st.integers(1, len(attempts)))
    lines = lines[: attempts[kept - 1] + 1]
    number = data.draw(st.sampled_from(attempts[:kept]))
    lines[number] = _edit(data.draw, lines[number])
    folder = tmp_path / "resumed"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / REPORT).write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            rj.evaluate([REPO / "examples" / "attempts.jsonl"], None, out=folder)
    except (ValueError, RunError) as exc:
        said = str(exc).strip()
        assert "\n" not in said and str(folder) in said, said
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
        return
    ids = [
        r.get("id")
        for r in map(json.loads, (folder / REPORT).read_text(encoding="utf-8").splitlines())
        if r.get("entry_type") == "attempt"
    ]
    expected = [json.loads(x)["id"] for x in (REPO / "examples" / "attempts.jsonl").open()]
    assert set(expected) <= set(ids), "every attempt of the input is judged or kept"
