"""redjury's own JSONL: one attempt per line (`Attempt`'s fields), read as a stream.

It is the default format: a file that no other format claims is read as redjury JSONL.
Worker processes read blocks of its lines (`redjury_line_records`): the hot path."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from redjury.attempts import Attempt
from redjury.formats.base import DocumentFormat
from redjury.formats.lines import (
    first_error,
    hidden_json_problem,
    json_object,
    line_error,
    no_replies,
)
from redjury.plugins import FORMATS
from redjury.records import InputRecord


def redjury_line_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    """A garak row inside a redjury JSONL file: one file holds one format."""
    if "entry_type" in data:
        return "entry_type", (
            "a garak row in a redjury JSONL file (its first record is a redjury attempt);"
            " give each format its own file"
        )
    return None


def redjury_record(name: str, lineno: int, data: Any) -> InputRecord:
    """One redjury record given as a dict (from Python) as an attempt or a line error."""
    if not isinstance(data, dict):
        return line_error(name, lineno, "(line)", "not a JSON object")
    return _checked_redjury(name, lineno, data, redjury_line_problem(data))


def redjury_line_records(name: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[InputRecord]:
    """The records of numbered lines of a redjury JSONL file (blank lines skipped)."""
    for lineno, raw in lines:
        if raw and not raw.isspace():
            yield _redjury_record(name, lineno, raw)


def read_redjury(path: Path) -> Iterator[InputRecord]:
    """Every line of a redjury JSONL file as an attempt or the line's error."""
    with path.open("rb") as fh:
        yield from redjury_line_records(str(path), enumerate(fh, 1))


def _redjury_record(name: str, lineno: int, raw: bytes) -> InputRecord:
    data, problem = json_object(raw)
    if data is not None:
        problem = redjury_line_problem(data) or hidden_json_problem(raw, data)
    return _checked_redjury(name, lineno, data, problem)


def _checked_redjury(
    name: str, lineno: int, data: dict[str, Any] | None, problem: tuple[str, str] | None
) -> InputRecord:
    if problem is not None:
        return line_error(name, lineno, *problem)
    assert data is not None
    try:
        attempt = Attempt.model_validate(data)
    except ValidationError as exc:
        return InputRecord(name, lineno, None, first_error(name, lineno, exc))
    if attempt.outputs:
        return InputRecord(name, lineno, attempt)
    return no_replies(name, lineno, attempt)


def _any_object(first: Any) -> bool:
    return isinstance(first, dict)


FORMAT = FORMATS.register(
    DocumentFormat(
        name="redjury", claims=_any_object, head=lambda head: False, read=read_redjury, lines=True
    )
)
