"""A report's rows against their documented types (`redjury.row_types`).

Reading a report trusts redjury's own rows to have the shapes it wrote. A report edited since
(by hand, by a script) can break that anywhere: a count that is text, a probe that is a list.
Checking every row first would cost every reader; instead, a reader that fails on one is
asked which row and field do not have their documented type (`first_bad_row`), and says
that in one line (`read_as_written`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict, get_type_hints

import msgspec
import orjson

from redjury.row_types import (
    AttemptRow,
    CompletionRow,
    EvalRow,
    InitRow,
    InputErrorRow,
    ProbeSummaryRow,
)

ROW_TYPES: dict[str, Any] = {
    "init": InitRow,
    "attempt": AttemptRow,
    "eval": EvalRow,
    "probe_summary": ProbeSummaryRow,
    "completion": CompletionRow,
    "input_error": InputErrorRow,
}
_MISSING = re.compile(r"Object missing required field `([^`]*)`")


def _any_keys(kind: Any) -> Any:
    """`kind` with every key optional: its values' types without its required keys."""
    return TypedDict(f"{kind.__name__}Values", get_type_hints(kind), total=False)  # type: ignore[operator]


# First the values of another type, then the keys missing: an older report lacks keys added
# since (an attempt's `content_hash`), which its readers cope with, so a missing key is only
# named where no row has a value of another type.
_PASSES = ({k: _any_keys(v) for k, v in ROW_TYPES.items()}, ROW_TYPES)


def row_problem(row: dict[str, Any], types: dict[str, Any] = ROW_TYPES) -> str | None:
    """`field PATH: what` for a row of a documented kind (`types`) with a value of another
    type at PATH, or missing a key there; None for a row that has its kind's types, or of a
    kind that is not documented."""
    kind = types.get(row.get("entry_type"))  # type: ignore[arg-type]
    if kind is None:
        return None
    try:
        msgspec.convert(row, kind, strict=True)
    except msgspec.ValidationError as exc:
        what, _, at = str(exc).partition(" - at `")
        where = at.rstrip("`").removeprefix("$").removeprefix(".")
        missing = _MISSING.match(what)
        if missing is not None:
            key = missing.group(1)
            return f"field {where + '.' + key if where else key}: missing"
        return f"field {where or '(row)'}: {what}"
    return None


def first_bad_row(path: Path) -> str | None:
    """`FILE:LINE: field PATH: what` for the first row of the report at `path` with a value
    of another type than its kind documents (or, when none has, a key missing), or None."""
    for types in _PASSES:
        for number, row in _numbered_rows(path):
            problem = row_problem(row, types)
            if problem is not None:
                return f"{path}:{number}: {problem}"
    return None


def _numbered_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield number, row


@contextlib.contextmanager
def read_as_written(report: Path) -> Iterator[None]:
    """A reader of `report` that fails (a TypeError, a KeyError, …) on a row edited into
    another shape raises ValueError naming its line and field instead; any other failure,
    or one no row explains, goes on as it was."""
    try:
        yield
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        try:
            found = first_bad_row(report)
        except OSError:
            found = None
        if found is None:
            raise
        raise ValueError(
            f"{found}; the report was changed after redjury wrote it (restore it, or run again)"
        ) from exc
