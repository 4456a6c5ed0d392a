"""Reading attempts from redjury JSONL and garak `report.jsonl` files, streamed (R1)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt

MAX_REPORTED_ERRORS = 20
# The head of a garak attempt row as garak writes it (entry_type, uuid, seq, status first):
# read without parsing the row, so rows that are skipped (a status-1 row superseded by its
# status-2 row) cost no JSON parse. Rows that do not match are parsed in full.
_GARAK_ATTEMPT_HEAD = re.compile(
    rb'\{\s*"entry_type":\s*"attempt",\s*"uuid":\s*"([^"\\]*)",\s*"seq":\s*[^,]*,\s*"status":\s*(\d+)\s*[,}]'
)


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


class InputError(ValueError):
    """Bad input: every bad line (up to a limit) with file, line and field."""

    def __init__(self, errors: list[LineError], total: int, message: str | None = None) -> None:
        self.errors = errors
        self.total = total
        lines = [str(e) for e in errors]
        if total > len(errors):
            lines.append(f"... and {total - len(errors)} more bad lines")
        super().__init__(message or "\n".join(lines))


@dataclass(slots=True)
class GarakSetup:
    """What a garak report's `start_run setup` row says about the run."""

    generator: str | None = None
    generations_per_prompt: int | None = None


@dataclass(slots=True)
class InputRecord:
    """One line: either an Attempt or the error that kept it from being one."""

    path: str
    line: int
    attempt: Attempt | None
    error: LineError | None = None


def _json_reason(exc: Exception) -> str:
    """orjson's message without its position noise on a one-line record."""
    return str(exc).split(":", 1)[0]


def _message_text(value: Any) -> str | None:
    """garak stores outputs as Message dicts (`{"text": ...}`); older reports as strings."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        return text if text is None or isinstance(text, str) else str(text)
    return str(value)


def _garak_prompt(prompt: Any) -> str | None:
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        turns = prompt.get("turns")
        if isinstance(turns, list):
            for turn in reversed(turns):
                if isinstance(turn, dict) and turn.get("role") == "user":
                    return _message_text(turn.get("content"))
            if turns:
                return _message_text(
                    turns[-1].get("content") if isinstance(turns[-1], dict) else None
                )
        return _message_text(prompt)
    return str(prompt)


def garak_attempt_fields(row: dict[str, Any], setup: GarakSetup) -> dict[str, Any]:
    """Map a garak attempt row onto Attempt fields."""
    notes = row.get("notes") or {}
    outputs = row.get("outputs") or []
    data: dict[str, Any] = {
        "id": row.get("uuid"),
        "probe": row.get("probe_classname") or "default",
        "goal": row.get("goal"),
        "prompt": _garak_prompt(row.get("prompt")),
        "outputs": [_message_text(o) for o in outputs],
        "notes": notes if isinstance(notes, dict) else {},
        "seq": row.get("seq"),
        "run_id": row.get("run_id") or row.get("run"),
        "intent": row.get("intent"),
        "detector_results": row.get("detector_results") or {},
        "generator": setup.generator,
    }
    return data


def _validation_errors(path: str, line: int, exc: ValidationError) -> list[LineError]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        out.append(LineError(path, line, loc, err["msg"]))
    return out


def detect_format(path: Path) -> str:
    """Another tool's format recognised from the content (promptfoo, inspect_ai, PyRIT,
    Azure), else `garak` when the first record has garak's `entry_type`, else `redjury`."""
    # Imported here: the readers build InputRecords from this module.
    from redjury.formats import sniff

    tool = sniff(path)
    if tool is not None:
        return tool
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    first = orjson.loads(raw)
                except ValueError:
                    return "redjury"
                return "garak" if isinstance(first, dict) and "entry_type" in first else "redjury"
    return "redjury"


class AttemptSource(Protocol):
    """A stream of input records: files (InputSet) or attempts given from Python."""

    paths: list[Path]
    garak_setup: dict[str, GarakSetup]

    def records(self) -> Iterator[InputRecord]: ...

    def prepare(self) -> None: ...


def redjury_record(name: str, lineno: int, data: Any) -> InputRecord:
    """One redjury record (a parsed JSONL line or a dict from Python) as an attempt or an error."""
    if not isinstance(data, dict):
        return InputRecord(
            name, lineno, None, LineError(name, lineno, "(line)", "not a JSON object")
        )
    try:
        return InputRecord(name, lineno, Attempt.model_validate(data))
    except ValidationError as exc:
        return InputRecord(name, lineno, None, _validation_errors(name, lineno, exc)[0])


@dataclass
class InputSet:
    """Several input files read as one stream of attempts."""

    paths: list[Path]
    garak_setup: dict[str, GarakSetup] = field(default_factory=dict)
    # Per garak file: hashes of attempt uuids that have a status-2 row.
    _final_rows: dict[str, set[int]] = field(default_factory=dict)

    def records(self) -> Iterator[InputRecord]:
        for path in self.paths:
            fmt = detect_format(path)
            if fmt == "garak":
                yield from self._garak_records(path)
            elif fmt != "redjury":
                from redjury.formats import read_records

                yield from read_records(fmt, path)
            else:
                yield from self._redjury_records(path)

    def prepare(self) -> None:
        """Read what garak reports say about their runs (setup rows) before judging."""
        for path in self.paths:
            if detect_format(path) == "garak":
                self._scan_garak(path)

    def _redjury_records(self, path: Path) -> Iterator[InputRecord]:
        name = str(path)
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw or raw.isspace():
                    continue
                try:
                    data = orjson.loads(raw)
                except ValueError as exc:
                    yield InputRecord(
                        name,
                        lineno,
                        None,
                        LineError(name, lineno, "(line)", f"not JSON: {_json_reason(exc)}"),
                    )
                    continue
                yield redjury_record(name, lineno, data)

    def _scan_garak(self, path: Path) -> None:
        name = str(path)
        if name in self._final_rows:
            return
        setup = GarakSetup()
        final: set[int] = set()
        with path.open("rb") as fh:
            for raw in fh:
                head = _GARAK_ATTEMPT_HEAD.match(raw)
                if head is not None:
                    if head.group(2) == b"2":
                        final.add(hash(head.group(1).decode()))
                    continue
                if b'"entry_type"' not in raw:
                    continue
                try:
                    row = orjson.loads(raw)
                except ValueError:
                    continue
                kind = row.get("entry_type")
                if kind == "start_run setup":
                    ttype, tname = row.get("plugins.target_type"), row.get("plugins.target_name")
                    parts = [str(p) for p in (ttype, tname) if p]
                    setup.generator = " ".join(parts) or None
                    gens = row.get("run.generations")
                    setup.generations_per_prompt = gens if isinstance(gens, int) else None
                elif kind == "attempt" and row.get("status") == 2:
                    final.add(hash(str(row.get("uuid"))))
        self.garak_setup[name] = setup
        self._final_rows[name] = final

    def _garak_records(self, path: Path) -> Iterator[InputRecord]:
        self._scan_garak(path)
        name = str(path)
        setup = self.garak_setup[name]
        final = self._final_rows[name]
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw or raw.isspace():
                    continue
                head = _GARAK_ATTEMPT_HEAD.match(raw)
                if head is not None:
                    head_status, head_uuid = head.group(2), head.group(1).decode()
                    if head_status != b"2" and (head_status != b"1" or hash(head_uuid) in final):
                        continue
                try:
                    row = orjson.loads(raw)
                except ValueError as exc:
                    yield InputRecord(
                        name,
                        lineno,
                        None,
                        LineError(name, lineno, "(line)", f"not JSON: {_json_reason(exc)}"),
                    )
                    continue
                if not isinstance(row, dict) or row.get("entry_type") != "attempt":
                    continue
                status = row.get("status")
                if status != 2 and (status != 1 or hash(str(row.get("uuid"))) in final):
                    continue
                try:
                    attempt = Attempt.model_validate(garak_attempt_fields(row, setup))
                except ValidationError as exc:
                    yield InputRecord(name, lineno, None, _validation_errors(name, lineno, exc)[0])
                    continue
                yield InputRecord(name, lineno, attempt)


@dataclass
class AttemptList:
    """Attempts given from Python (Attempt objects or dicts), read like the lines of a file."""

    items: Sequence[Attempt | dict[str, Any]]
    name: str = "<attempts>"
    paths: list[Path] = field(default_factory=list)
    garak_setup: dict[str, GarakSetup] = field(default_factory=dict)

    def records(self) -> Iterator[InputRecord]:
        for index, item in enumerate(self.items, 1):
            if isinstance(item, Attempt):
                yield InputRecord(self.name, index, item)
            else:
                yield redjury_record(self.name, index, item)

    def prepare(self) -> None:
        return None  # nothing to read ahead


def check_inputs(inputs: AttemptSource) -> tuple[int, list[LineError], int]:
    """First pass: count good attempts, collect bad lines (duplicate ids included).

    Returns (good attempts, first errors, total errors). Only a hash per id is kept, so
    memory stays small for millions of attempts.
    """
    seen: set[int] = set()
    errors: list[LineError] = []
    total_errors = 0
    good = 0
    for rec in inputs.records():
        err = rec.error
        if err is None and rec.attempt is not None:
            key = hash(rec.attempt.id)
            if key in seen:
                err = LineError(rec.path, rec.line, "id", f"duplicate id {rec.attempt.id!r}")
            else:
                seen.add(key)
                good += 1
        if err is not None:
            total_errors += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(err)
    return good, errors, total_errors
