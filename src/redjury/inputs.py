"""Reading attempts from redjury JSONL and garak `report.jsonl` files, streamed (R1)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt

MAX_REPORTED_ERRORS = 20
# The setup fields naming garak's target: `target_*` from garak 0.13.1, `model_*` before.
_GARAK_TARGET_KEYS = (
    ("plugins.target_type", "plugins.target_name"),
    ("plugins.model_type", "plugins.model_name"),
)
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

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.reason}"


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
    """What a garak report's `start_run setup` and `init` rows say about the run."""

    generator: str | None = None
    generations_per_prompt: int | None = None
    run_id: str | None = None
    attempt_rows: int = 0

    def read_setup(self, row: dict[str, Any]) -> None:
        """The target (as garak's hitlog names it), generations and the run id of setup."""
        for type_key, name_key in _GARAK_TARGET_KEYS:
            if type_key in row or name_key in row:
                # garak's hitlog formats the pair as it is, a missing name included.
                self.generator = f"{row.get(type_key)} {row.get(name_key)}"
                break
        gens = row.get("run.generations")
        self.generations_per_prompt = (
            gens if isinstance(gens, int) and not isinstance(gens, bool) else None
        )
        run_id = row.get("transient.run_id")
        if self.run_id is None and run_id:
            self.run_id = str(run_id)

    def read_init(self, row: dict[str, Any]) -> None:
        """The `init` row's `run` is the run id garak's hitlog writes; it wins over setup's."""
        if row.get("run"):
            self.run_id = str(row["run"])


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


def _message_fields(outputs: Any) -> list[dict[str, Any] | None] | None:
    """garak's Message objects without their text (the attempt's outputs hold it), or None
    where garak wrote plain strings (before 0.11): enough to write its hitlog's `output`
    exactly, without a second copy of every output in the report."""
    if not isinstance(outputs, list) or not any(isinstance(o, dict) for o in outputs):
        return None
    return [
        {k: v for k, v in o.items() if k != "text"} if isinstance(o, dict) else None
        for o in outputs
    ]


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


def garak_attempt_fields(
    row: dict[str, Any], setup: GarakSetup, attempt_id: str | None = None
) -> dict[str, Any]:
    """Map a garak attempt row onto Attempt fields; `attempt_id` replaces a uuid that the
    report gives several attempts (a merged report), and the uuid is kept for the hitlog."""
    notes = row.get("notes") or {}
    outputs = row.get("outputs") or []
    source: dict[str, Any] = {"prompt": row.get("prompt"), "outputs": _message_fields(outputs)}
    if attempt_id is not None:
        source["uuid"] = row.get("uuid")
    data: dict[str, Any] = {
        "id": row.get("uuid") if attempt_id is None else attempt_id,
        "probe": row.get("probe_classname") or "default",
        "goal": row.get("goal"),
        "prompt": _garak_prompt(row.get("prompt")),
        "outputs": [_message_text(o) for o in outputs],
        "notes": notes if isinstance(notes, dict) else {},
        "seq": row.get("seq"),
        "run_id": row.get("run_id") or row.get("run") or setup.run_id,
        "intent": row.get("intent"),
        "detector_results": row.get("detector_results") or {},
        "generator": setup.generator,
        "source_record": source,
    }
    return data


def path_problem(path: Path) -> str | None:
    """What keeps `path` from being read as an input file, or None."""
    if path.is_dir():
        return "is a folder, not an input file (name the files in it)"
    if not path.is_file():
        return "no such input file"
    return None


def _validation_errors(path: str, line: int, exc: ValidationError) -> list[LineError]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        out.append(LineError(path, line, loc, err["msg"]))
    return out


def detect_format(path: Path) -> str:
    """`garak` when the first record has garak's `entry_type`, else `redjury`."""
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    first = orjson.loads(raw)
                except ValueError:
                    return "redjury"
                return "garak" if isinstance(first, dict) and "entry_type" in first else "redjury"
    return "redjury"


@dataclass
class InputSet:
    """Several input files read as one stream of attempts, twice if need be (check, then run)."""

    paths: list[Path]
    garak_setup: dict[str, GarakSetup] = field(default_factory=dict)
    # Per garak file: hash of an attempt uuid -> how many status-2 rows carry it (one,
    # except in a merged report, where garak's aggregation gives every attempt one uuid).
    _final_rows: dict[str, dict[int, int]] = field(default_factory=dict)
    # (file, line) of every attempt whose id repeats an earlier one; set by check_inputs,
    # so the judging pass skips them without remembering every id again.
    duplicate_lines: dict[tuple[str, int], str] = field(default_factory=dict)

    def empty_reason(self) -> str:
        """Why the inputs hold no attempt at all (asked when they hold none)."""
        names = ", ".join(str(p) for p in self.paths)
        setups = [self.garak_setup.get(str(p)) for p in self.paths]
        if all(s is not None and s.attempt_rows == 0 for s in setups):
            return (
                f"{names}: no attempt rows in a garak report "
                "(the run ended before its first attempt)"
            )
        return f"{names}: no attempts to judge (the input is empty)"

    def records(self) -> Iterator[InputRecord]:
        for path in self.paths:
            fmt = detect_format(path)
            if fmt == "garak":
                yield from self._garak_records(path)
            else:
                yield from self._redjury_records(path)

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
                if not isinstance(data, dict):
                    yield InputRecord(
                        name, lineno, None, LineError(name, lineno, "(line)", "not a JSON object")
                    )
                    continue
                try:
                    yield InputRecord(name, lineno, Attempt.model_validate(data))
                except ValidationError as exc:
                    errs = _validation_errors(name, lineno, exc)
                    yield InputRecord(name, lineno, None, errs[0])

    def _scan_garak(self, path: Path) -> None:
        name = str(path)
        if name in self._final_rows:
            return
        setup = GarakSetup()
        final: dict[int, int] = {}
        with path.open("rb") as fh:
            for raw in fh:
                head = _GARAK_ATTEMPT_HEAD.match(raw)
                if head is not None:
                    setup.attempt_rows += 1
                    if head.group(2) == b"2":
                        key = hash(head.group(1).decode())
                        final[key] = final.get(key, 0) + 1
                    continue
                if b'"entry_type"' not in raw:
                    continue
                try:
                    row = orjson.loads(raw)
                except ValueError:
                    continue
                if not isinstance(row, dict):
                    continue
                kind = row.get("entry_type")
                if kind == "start_run setup":
                    setup.read_setup(row)
                elif kind == "init":
                    setup.read_init(row)
                elif kind == "attempt":
                    setup.attempt_rows += 1
                    if row.get("status") == 2:
                        key = hash(str(row.get("uuid")))
                        final[key] = final.get(key, 0) + 1
        self.garak_setup[name] = setup
        self._final_rows[name] = final

    def _garak_records(self, path: Path) -> Iterator[InputRecord]:
        self._scan_garak(path)
        name = str(path)
        setup = self.garak_setup[name]
        final = self._final_rows[name]
        repeats: dict[int, int] = {}
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
                key = hash(str(row.get("uuid")))
                if status != 2 and (status != 1 or key in final):
                    continue
                # A uuid on several status-2 rows: numbered in file order, the same on every
                # read, so a resumed run finds the attempts it has judged.
                attempt_id = None
                if status == 2 and final.get(key, 0) > 1:
                    repeats[key] = repeats.get(key, 0) + 1
                    attempt_id = f"{row.get('uuid')}#{repeats[key]}"
                try:
                    attempt = Attempt.model_validate(garak_attempt_fields(row, setup, attempt_id))
                except ValidationError as exc:
                    yield InputRecord(name, lineno, None, _validation_errors(name, lineno, exc)[0])
                    continue
                yield InputRecord(name, lineno, attempt)


def check_inputs(inputs: InputSet) -> tuple[int, list[LineError], int]:
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
                inputs.duplicate_lines[(rec.path, rec.line)] = err.reason
            else:
                seen.add(key)
                good += 1
        if err is not None:
            total_errors += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(err)
    return good, errors, total_errors
