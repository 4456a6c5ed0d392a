"""The records every reader shares: one input line read (`InputRecord`) or the located
reason it could not be (`LineError`, `InputError`), and the JSON loading helpers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from redjury.attempts import Attempt
from redjury.errors import RedjuryError


@dataclass(frozen=True, slots=True)
class LineError:
    path: str
    line: int
    field: str
    reason: str
    # A record of a JSON document has no line of its own: `sample 3 epoch 1`, `results[4]`.
    where: str | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.where or self.line}: {self.field}: {self.reason}"


class InputError(RedjuryError, ValueError):
    """Bad input: every bad line (up to a limit) with file, line and field."""

    def __init__(self, errors: list[LineError], total: int, message: str | None = None) -> None:
        self.errors = errors
        self.total = total
        lines = [str(e) for e in errors]
        if total > len(errors):
            lines.append(f"... and {total - len(errors)} more bad lines")
        super().__init__(message or "\n".join(lines))


@dataclass(slots=True)
class InputRecord:
    """One line: either an Attempt or the error that kept it from being one."""

    path: str
    line: int
    attempt: Attempt | None
    error: LineError | None = None


# A UTF-8 byte-order mark, which Windows tools write at the start of a file (and `cat` then
# carries into the middle of a joined one): not part of the JSON after it.
BOM = b"\xef\xbb\xbf"
# A \uD800–\uDFFF escape: half of a UTF-16 surrogate pair.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def loads_json(raw: bytes | bytearray) -> Any:
    """orjson.loads, past a leading byte-order mark, and with a lone surrogate escape
    (`"\\ud83d"`, half an emoji: what JavaScript's JSON.stringify writes for a string cut
    between the two halves) read as U+FFFD, as a decoder replaces any broken character,
    instead of refusing the whole text. Both are looked at only when orjson refuses the
    text; a surrogate escape then has the standard library parse it again, with NaN and
    Infinity still refused."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if raw.startswith(BOM):
            return loads_json(raw[len(BOM) :])
        if not _SURROGATE_ESCAPE.search(raw):
            raise
        try:
            return _without_lone_surrogates(json.loads(raw, parse_constant=_no_constant))
        except (ValueError, RecursionError):
            raise exc from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value
