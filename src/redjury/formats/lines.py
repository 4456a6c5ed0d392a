"""What the JSONL readers (redjury's and garak's) share: a line's JSON object or why it has
none, the hidden problems a parse passes in silence, and the located line errors."""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt, FieldError
from redjury.errors import RedjuryError
from redjury.records import InputRecord, LineError, loads_json

# What a JSON value is, in the words of a line error ("a valid number, not a string").
JSON_KINDS: dict[type, str] = {
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
    type(None): "null",
}
TOO_DEEP = "nested more than 250 levels deep"
REPEATED_KEY = "repeated key: JSON keeps only the last value, so give it once"


def _json_reason(exc: Exception) -> str:
    """orjson's message without its position noise on a one-line record."""
    return str(exc).split(":", 1)[0]


def first_error(
    path: str, line: int, exc: ValidationError, names: dict[str, str] | None = None
) -> LineError:
    """The first problem pydantic found, named by its field as the file spells it."""
    err = exc.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        return LineError(path, line, cause.field, cause.reason)
    loc = [str(p) for p in err["loc"]]
    if loc and names:
        loc[0] = names.get(loc[0], loc[0])
    reason = err["msg"]
    value = err["input"]
    if err["type"] == "int_type" and type(value) is float and abs(value) >= 2**63:
        # An integer literal beyond 64 bits, which orjson reads as a float.
        reason += ", not one beyond 64 bits"
    elif err["type"].endswith("_type"):
        reason += f", not {JSON_KINDS.get(type(value), 'that')}"
    return LineError(path, line, ".".join(loc) or "(record)", reason)


def line_error(path: str, line: int, field: str, reason: str) -> InputRecord:
    return InputRecord(path, line, None, LineError(path, line, field, reason))


def json_object(raw: bytes) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """The line's JSON object, or (field, reason) saying why there is none."""
    try:
        data = loads_json(raw)
    except ValueError as exc:
        return None, ("(line)", f"not JSON: {_json_reason(exc)}")
    if not isinstance(data, dict):
        return None, ("(line)", "not a JSON object")
    return data, None


class _RepeatedKey(RedjuryError, ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


def repeated_key(raw: bytes) -> str | None:
    """The first key given twice in the line's JSON, parsed again slowly to name it."""
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except _RepeatedKey as exc:
        return str(exc)
    return None


def hidden_json_problem(raw: bytes, data: dict[str, Any]) -> tuple[str, str] | None:
    """A repeated key or nesting too deep to write back: what a JSON parse passes in silence.

    orjson keeps the last of two equal keys. Writing the object back (orjson refuses more
    than 254 levels) and counting quote characters finds a repeat: a dropped key takes its
    quotes with it. Only such a line is parsed again, slowly, to name the key.
    """
    try:
        written = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return "(line)", TOO_DEEP
    if raw.count(b'"') == written.count(b'"') and b"\\u0022" not in raw:
        return None
    key = repeated_key(raw)
    return None if key is None else (key, REPEATED_KEY)


def no_replies(path: str, line: int, attempt: Attempt) -> InputRecord:
    """An attempt with nothing to judge is a bad line, not a silent zero in the counts."""
    if attempt.messages:
        return line_error(path, line, "messages", "no assistant turn after the last user turn")
    reason = "no replies to judge (null stands for a reply the target did not give)"
    return line_error(path, line, "outputs", reason)
