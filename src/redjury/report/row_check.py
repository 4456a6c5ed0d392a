"""A report's rows against their documented types (`redjury.row_types`).

Reading a report trusts redjury's own rows to have the shapes it wrote. A report edited since
(by hand, by a script) can break that anywhere: a count that is text, a probe that is a list.
Checking every row first would cost every reader; instead, a reader that fails on one is
asked which row and field do not have their documented type (`first_bad_row`), and says
that in one line (`read_as_written`)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict, get_type_hints

import msgspec

from redjury.errors import RedjuryError
from redjury.report.digest import numbered_report_rows
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
# Keys of one mapping tried one by one to name the one of another type (each try converts
# the row again): beyond these the field is named as `[...]`, whatever size an edited row has.
MAX_KEYS_TRIED = 64
_MISSING = re.compile(r"Object missing required field `([^`]*)`")


def _any_keys(kind: Any) -> Any:
    """`kind` with every key optional: its values' types without its required keys."""
    return TypedDict(f"{kind.__name__}Values", get_type_hints(kind), total=False)  # type: ignore[operator]


# First the values of another type, then the keys missing: an older report lacks keys added
# since (an attempt's `content_hash`), which its readers cope with, so a missing key is only
# named where no row has a value of another type.
@functools.cache
def _passes() -> tuple[dict[str, Any], dict[str, Any]]:
    return {k: _any_keys(v) for k, v in ROW_TYPES.items()}, ROW_TYPES


# What the readers take from a detector's per-output details (`details.DETECTOR[i]`): the
# tallies' counted keys of any detector's, and the judge panel's votes and calls. Only the
# keys read are typed; a detector's other keys are its own.
class _JudgeCall(TypedDict, total=False):
    prompt_tokens: int | None
    completion_tokens: int | None


class _Graded(TypedDict):
    name: str
    score: float


class _CountedDetail(TypedDict, total=False):
    graded: dict[str, _Graded] | None
    abstention_rate: float | None
    upstream_counting: bool | None


class _PanelDetail(_CountedDetail, total=False):
    votes: dict[str, float | None]
    abstained: dict[str, Any] | None
    judges: list[_JudgeCall] | None
    skipped: list[Any] | None
    calls_saved: int | None


# What the readers take from the header's config (`init.config`) and verdict policy.
class _Price(TypedDict, total=False):
    input: float | None
    output: float | None
    batch_input: float | None
    batch_output: float | None


class _Connection(TypedDict, total=False):
    price: _Price | None


class _Scoring(TypedDict, total=False):
    type: str


class _Judge(TypedDict, total=False):
    name: str
    scoring: _Scoring | None
    connection: _Connection | None


class _Evaluation(TypedDict, total=False):
    threshold: float
    judges: list[_Judge] | None


class _Reporting(TypedDict, total=False):
    confidence_interval_method: str
    bootstrap_confidence_level: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)]
    bootstrap_min_sample_size: Annotated[int, msgspec.Meta(gt=0)]


class _Config(TypedDict, total=False):
    reporting: _Reporting | None
    evaluation: _Evaluation | None


class _Evaluator(TypedDict, total=False):
    type: str
    threshold: float


def row_problem(row: dict[str, Any]) -> str | None:
    """`field PATH: what` for a row of a documented kind with a value of another type at
    PATH (or, when it has none, missing a key there); None for a row that has its kind's
    types, or of a kind that is not documented."""
    for types in _passes():
        if (problem := _row_problem(row, types)) is not None:
            return problem
    return None


def _row_problem(row: dict[str, Any], types: dict[str, Any]) -> str | None:
    entry_type = row.get("entry_type")
    kind = types.get(entry_type) if isinstance(entry_type, str) else None
    if kind is None:
        return None
    problem = _problem(row, kind, "")
    if problem is None and kind is types["attempt"]:
        return _details_problem(row.get("details"))
    if problem is None and kind is types["init"]:
        return _header_problem(row)
    return problem


def _header_problem(row: dict[str, Any]) -> str | None:
    for key, kind in (("config", _Config), ("evaluator", _Evaluator)):
        value = row.get(key)
        if isinstance(value, dict) and (found := _problem(value, kind, key)):
            return found
    return None


def _details_problem(details: Any) -> str | None:
    if not isinstance(details, dict):
        return None  # None, or a value of another type, named by the row's own type
    for detector, per_output in details.items():
        where = f"details.{detector}"
        if not isinstance(per_output, list | None):
            return f"field {where}: Expected `array | null`, got `{type(per_output).__name__}`"
        kind = _PanelDetail if detector == "judge_panel" else _CountedDetail
        for i, detail in enumerate(per_output or ()):
            if isinstance(detail, dict) and (found := _problem(detail, kind, f"{where}[{i}]")):
                return found
    return None


def _problem(value: Any, kind: Any, prefix: str) -> str | None:
    """`field PATH: what` where `value` (at `prefix`) is not a `kind`, or None."""
    try:
        msgspec.convert(value, kind, strict=True)
    except msgspec.ValidationError as exc:
        what, _, at = str(exc).partition(" - at `")
        where = prefix + _named(value, kind, at.rstrip("`").removeprefix("$"))
        where = where.removeprefix(".")
        missing = _MISSING.match(what)
        if missing is not None:
            key = missing.group(1)
            return f"field {where + '.' + key if where else key}: missing"
        return f"field {where or '(row)'}: {what}"
    return None


def first_bad_row(path: Path) -> str | None:
    """`FILE:LINE: field PATH: what` for the first row of the report at `path` with a value
    of another type than its kind documents (or, when none has, a key missing), or None."""
    for types in _passes():
        for number, row in numbered_report_rows(path):
            problem = _row_problem(row, types)
            if problem is not None:
                return f"{path}:{number}: {problem}"
    return None


@contextlib.contextmanager
def read_as_written(*reports: Path, error: type[ValueError] = ValueError) -> Iterator[None]:
    """A reader of `reports` that fails (a TypeError, a KeyError, …) on a row edited into
    another shape raises `error` naming its line and field instead; any other failure, or
    one no row explains, goes on as it was."""
    try:
        yield
    except RedjuryError:  # already one line naming what is wrong
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        found = next(filter(None, map(_first_bad_row_or_none, reports)), None)
        if found is None and len(reports) == 1 and isinstance(exc, ValueError):
            # A value of the right type the reader refuses (an unknown verdict policy): the
            # reader's own words, with the report they are about.
            said = str(exc)
            raise error(said if str(reports[0]) in said else f"{reports[0]}: {said}") from exc
        if found is None:
            raise
        raise error(
            f"{found}; the report was changed after redjury wrote it (restore it, or run again)"
        ) from exc


def _first_bad_row_or_none(report: Path) -> str | None:
    try:
        return first_bad_row(report)
    except OSError:
        return None


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])")


def _named(value: Any, kind: Any, path: str) -> str:
    """msgspec's `path` into `value` with each `[...]` (a mapping's key it does not name)
    replaced by `.KEY`, the key whose value has another type."""
    keys: list[str | int] = []
    shown = ""
    for step in _STEP.finditer(path):
        name, index, unnamed = step.groups()
        if unnamed:
            key = _culprit(value, kind, keys, path[: step.end()])
            if key is None:
                return shown + path[step.start() :]
            name = key
        if index is not None:
            keys.append(int(index))
            shown += f"[{index}]"
        else:
            keys.append(name)
            shown += f".{name}"
    return shown


def _culprit(value: Any, kind: Any, keys: list[str | int], unnamed_at: str) -> str | None:
    """Which key of the mapping at `keys` holds the value of another type: the first whose
    value alone, put in the mapping's place for a moment, fails at the same place
    (`unnamed_at`, msgspec's path to it)."""
    if not keys:
        return None
    holder = _at(value, keys[:-1])
    mapping = holder[keys[-1]]
    if not isinstance(mapping, dict):
        return None
    try:
        for key in itertools.islice(mapping, MAX_KEYS_TRIED):
            holder[keys[-1]] = {key: mapping[key]}
            try:
                msgspec.convert(value, kind, strict=True)
            except msgspec.ValidationError as exc:
                if f" - at `${unnamed_at}" in str(exc):
                    return str(key)
    finally:
        holder[keys[-1]] = mapping
    return None


def _at(value: Any, keys: list[str | int]) -> Any:
    for key in keys:
        value = value[key]
    return value
