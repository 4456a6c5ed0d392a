"""What every reader of another tool's records shares: the located document error,
building an Attempt from mapped fields, and the transcript helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt
from redjury.errors import RedjuryError
from redjury.records import InputRecord, LineError

# A zip archive's first bytes: a member's local header, or the end record of an empty one.
ZIP_SIGNATURES = frozenset({b"PK\x03\x04", b"PK\x05\x06"})


@dataclass(frozen=True)
class DocumentFormat:
    name: str
    claims: Callable[[Any], bool]
    head: Callable[[bytes], bool]
    read: Callable[[Path], Iterator[InputRecord]]
    # A JSONL format (redjury's, garak's): `claims` is asked about the file's first JSON
    # object, never about a document's shape, and `head` is not asked.
    lines: bool = False
    # Read ahead before judging (a garak report's setup rows and final rows): the inputs
    # keep what `prescan` returns and read the file with `read_scanned(path, it)`.
    prescan: Callable[[Path], Any] | None = None
    read_scanned: Callable[[Path, Any], Iterator[InputRecord]] | None = None


@dataclass(frozen=True, slots=True)
class Located:
    """Where a record sits in a document: its ordinal (1-based, unique per file) and a
    human label (`results[3]`, `sample 7 epoch 2`) for error messages."""

    ordinal: int
    where: str


class DocumentError(RedjuryError):
    """The document as a whole cannot be read; carries the located error."""

    def __init__(self, error: LineError) -> None:
        super().__init__(str(error))
        self.error = error


def bad(path: Path, at: Located, field: str, reason: str) -> InputRecord:
    name = str(path)
    return InputRecord(name, at.ordinal, None, LineError(name, at.ordinal, field, reason, at.where))


def document_error(path: Path, field: str, reason: str, line: int = 1) -> DocumentError:
    return DocumentError(LineError(str(path), line, field, reason))


_TEXT_FIELDS = ("id", "goal", "prompt", "intent", "hazard", "expected", "generator", "run_id")


def _tidy(fields: dict[str, Any]) -> dict[str, Any]:
    """Tools put what they like in free-form fields (a goal as a list, a numeric run id):
    text fields become text, a latency that is not a duration is dropped."""
    out = dict(fields)
    for key in _TEXT_FIELDS:
        value = out.get(key)
        if value is not None and not isinstance(value, str):
            out[key] = text_of(value)
        if out.get(key) == "" and key != "prompt":
            out[key] = None
    latency = number(out.get("latency_ms"))
    out["latency_ms"] = latency if latency is not None and 0 <= latency < float("inf") else None
    return out


def attempt_record(path: Path, at: Located, fields: dict[str, Any]) -> InputRecord:
    """Validate mapped fields into an Attempt, or an error naming the record and field."""
    try:
        attempt = Attempt.model_validate(_tidy(fields))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        return bad(path, at, loc, err["msg"])
    return InputRecord(str(path), at.ordinal, attempt)


def guarded(path: Path, records: Iterable[InputRecord]) -> Iterator[InputRecord]:
    """The records of one document, with a DocumentError turned into one error record.

    A tool may give two records of one file the same id (promptfoo rows of a repeated
    test, an attack result written twice); each is still its own attempt, so a repeat
    gets the record's place appended (`id#7`) instead of being refused as a duplicate.
    """
    seen: set[str] = set()
    try:
        for rec in records:
            attempt = rec.attempt
            if attempt is not None:
                if attempt.id in seen:
                    attempt = attempt.model_copy(update={"id": f"{attempt.id}#{rec.line}"})
                    rec = InputRecord(rec.path, rec.line, attempt)
                seen.add(attempt.id)
            yield rec
    except DocumentError as exc:
        yield InputRecord(str(path), exc.error.line, None, exc.error)


def text_of(value: Any) -> str | None:
    """A reply or prompt as text: strings as they are, other JSON values serialised."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def reply_after_last_user(turns: list[dict[str, Any]]) -> str | None:
    """The assistant turns after the last user turn, joined: the reply a tool scored."""
    last_user = max((i for i, t in enumerate(turns) if t.get("role") == "user"), default=-1)
    texts = [
        t["content"]
        for t in turns[last_user + 1 :]
        if t.get("role") == "assistant" and isinstance(t.get("content"), str) and t["content"]
    ]
    return "\n\n".join(texts) if texts else None


def last_user_text(turns: list[dict[str, Any]]) -> str | None:
    for turn in reversed(turns):
        if turn.get("role") == "user":
            content = turn.get("content")
            return content if isinstance(content, str) else None
    return None


def mapping(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one where the field is missing or of another type."""
    return value if isinstance(value, dict) else {}


def listed(value: Any) -> list[Any]:
    """A JSON list, or an empty one where the field is missing or of another type."""
    return value if isinstance(value, list) else []


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def class_name(identifier: Any) -> str | None:
    """PyRIT's identifiers: `{"__type__": "SelfAskRefusalScorer", ...}` (newer: class_name)."""
    if isinstance(identifier, str):
        return identifier or None
    if isinstance(identifier, dict):
        for key in ("__type__", "class_name", "name", "type"):
            value = identifier.get(key)
            if isinstance(value, str) and value:
                return value
    return None
