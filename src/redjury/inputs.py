"""Reading attempts from redjury JSONL and garak `report.jsonl` files, streamed (R1)."""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec
import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt, FieldError, checked_attempt
from redjury.errors import RedjuryError
from redjury.idstore import IdStore
from redjury.records import InputRecord, LineError, loads_json

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


def _scan_lines(path: Path) -> Iterator[tuple[re.Match[bytes] | None, bytes]]:
    """Each line of a garak report for the pre-scan: an attempt row's head as matched by
    `_GARAK_ATTEMPT_HEAD` (the rest of the line unread), or a line that names an entry type.

    A regular file is mapped, not read: the heads are matched in place, so the replies and
    prompts that make up most of its bytes are never copied (half the scan's time)."""
    with path.open("rb") as fh:
        try:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a pipe or an empty file: read it line by line
            yield from _read_lines(fh)
            return
        with mapped:
            yield from _mapped_lines(mapped)


def _read_lines(lines: Iterable[bytes]) -> Iterator[tuple[re.Match[bytes] | None, bytes]]:
    for raw in lines:
        head = _GARAK_ATTEMPT_HEAD.match(raw)
        if head is not None or b'"entry_type"' in raw:
            yield head, raw


def _mapped_lines(data: mmap.mmap) -> Iterator[tuple[re.Match[bytes] | None, bytes]]:
    match = _GARAK_ATTEMPT_HEAD.match
    size = len(data)
    pos = 0
    while pos < size:
        end = data.find(b"\n", pos)
        end = size if end < 0 else end + 1
        head = match(data, pos, end)
        if head is not None:
            yield head, b""
        elif data.find(b'"entry_type"', pos, end) >= 0:
            yield None, data[pos:end]
        pos = end


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
    return [_without_text(o) if isinstance(o, dict) else None for o in outputs]


def _without_text(message: dict[str, Any]) -> dict[str, Any]:
    fields = message.copy()  # a C-level copy: faster than rebuilding the dict key by key
    fields.pop("text", None)
    return fields


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


# What a JSON value is, in the words of a line error ("a valid number, not a string").
_JSON_KINDS: dict[type, str] = {
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
    type(None): "null",
}
# garak's names for the fields a garak row maps onto.
_GARAK_FIELDS = {"id": "uuid", "probe": "probe_classname"}


def _first_error(
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
        reason += f", not {_JSON_KINDS.get(type(value), 'that')}"
    return LineError(path, line, ".".join(loc) or "(record)", reason)


def _line_error(path: str, line: int, field: str, reason: str) -> InputRecord:
    return InputRecord(path, line, None, LineError(path, line, field, reason))


def _json_object(raw: bytes) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """The line's JSON object, or (field, reason) saying why there is none."""
    try:
        data = loads_json(raw)
    except ValueError as exc:
        return None, ("(line)", f"not JSON: {_json_reason(exc)}")
    if not isinstance(data, dict):
        return None, ("(line)", "not a JSON object")
    return data, None


_TOO_DEEP = "nested more than 250 levels deep"

# Every field of a garak row that `garak_row_problem` and `garak_attempt_fields` read.
GARAK_ROW_FIELDS = (
    "entry_type",
    "uuid",
    "seq",
    "status",
    "probe_classname",
    "prompt",
    "outputs",
    "detector_results",
    "notes",
    "goal",
    "intent",
    "run_id",
    "run",
)
_GarakRow = msgspec.defstruct(
    "_GarakRow", [(name, Any, msgspec.UNSET) for name in GARAK_ROW_FIELDS]
)
_decode_garak_row = msgspec.json.Decoder(_GarakRow).decode


def garak_json_object(raw: bytes) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """A garak row's JSON object with only the fields redjury reads, or why there is none.

    A garak row repeats its prompt and replies in `conversations` and carries fields redjury
    does not read; msgspec checks their syntax without building them, a third of the parse.
    msgspec does not check the UTF-8 of what it skips, so a line that is not ASCII (garak
    writes its replies unescaped, `ensure_ascii=False`) is decoded first, a sixth of the
    parse; any line that is not UTF-8, or that msgspec refuses, is parsed again by
    `_json_object`, which names the problem as for any other line. Integers beyond 64 bits,
    which orjson reads as floats, are read exact here."""
    if raw.isascii() or _is_utf8(raw):
        try:
            row = _decode_garak_row(raw)
        except (msgspec.DecodeError, RecursionError):  # msgspec stops at 1,000 levels
            pass
        else:
            return {
                name: value
                for name in GARAK_ROW_FIELDS
                if (value := getattr(row, name)) is not msgspec.UNSET
            }, None
    return _json_object(raw)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


class _RepeatedKey(RedjuryError, ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


def hidden_json_problem(raw: bytes, data: dict[str, Any]) -> tuple[str, str] | None:
    """A repeated key or nesting too deep to write back: what a JSON parse passes in silence.

    orjson keeps the last of two equal keys. Writing the object back (orjson refuses more
    than 254 levels) and counting quote characters finds a repeat: a dropped key takes its
    quotes with it. Only such a line is parsed again, slowly, to name the key.
    """
    try:
        written = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return "(line)", _TOO_DEEP
    if raw.count(b'"') == written.count(b'"') and b"\\u0022" not in raw:
        return None
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except _RepeatedKey as exc:
        return str(exc), "repeated key: JSON keeps only the last value, so give it once"
    return None


def _repeated_garak_key(raw: bytes) -> tuple[str, str] | None:
    """A key given twice in a garak row, looked for only where `status` or `uuid` (which
    decide whether a row is judged, and as which attempt) appear more than once: two
    counts of the line, a sixth of the cost of its parse."""
    if raw.count(b'"status"') < 2 and raw.count(b'"uuid"') < 2:
        return None
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except _RepeatedKey as exc:
        return str(exc), "repeated key: JSON keeps only the last value, so give it once"
    except (ValueError, RecursionError):
        return None  # not JSON: the parse that follows names it
    return None


def _no_replies(path: str, line: int, attempt: Attempt) -> InputRecord:
    """An attempt with nothing to judge is a bad line, not a silent zero in the counts."""
    if attempt.messages:
        return _line_error(path, line, "messages", "no assistant turn after the last user turn")
    reason = "no replies to judge (null stands for a reply the target did not give)"
    return _line_error(path, line, "outputs", reason)


def redjury_line_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    """A garak row inside a redjury JSONL file: one file holds one format."""
    if "entry_type" in data:
        return "entry_type", (
            "a garak row in a redjury JSONL file (its first record is a redjury attempt);"
            " give each format its own file"
        )
    return None


def garak_row_problem(row: dict[str, Any]) -> tuple[str, str] | None:
    """What in a garak row would be misread or skipped in silence, checked before mapping."""
    kind = row.get("entry_type")
    if kind is None:
        return "entry_type", (
            "missing: not a garak row, in a garak report; give each format its own file"
        )
    if type(kind) is not str:
        return "entry_type", "the kind of garak row, a string"
    if kind != "attempt":
        # Other kinds (setup, init, eval, digest, completion, and kinds garak may add) are
        # not judged. Only attempt rows carry replies: one of another kind with `outputs`
        # would have its replies skipped in silence.
        if "outputs" in row:
            return "entry_type", (
                "replies (outputs) in a row that is not an attempt: "
                'an attempt row\'s entry_type is "attempt"'
            )
        return None
    if type(row.get("uuid")) is not str:
        return "uuid", "garak's attempt id, a string"
    status = row.get("status")
    if type(status) is not int or status not in (0, 1, 2):
        return "status", "garak's attempt status: 0, 1 or 2 (a number)"
    notes = row.get("notes")
    if notes is not None and type(notes) is not dict:
        return "notes", f"a JSON object, not {_JSON_KINDS.get(type(notes), 'that')}"
    if notes and _too_deep(notes):  # notes go into the report as they are
        return "notes", _TOO_DEEP
    return _garak_outputs_problem(row.get("outputs"))


def _too_deep(value: Any) -> bool:
    """Nested deeper than orjson writes (254 levels)."""
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        # Not an integer beyond 64 bits: the report writes that one another way.
        return "recursion" in str(exc).lower()
    return False


def _garak_outputs_problem(outputs: Any) -> tuple[str, str] | None:
    if outputs is None:
        return None
    if type(outputs) is not list:
        kind = _JSON_KINDS.get(type(outputs), "that")
        return "outputs", f"a list with one entry per generation, not {kind}"
    for out in outputs:  # the common row passes this loop without a call
        if type(out) is dict:
            text = out.get("text")
            if text is None or type(text) is str:
                continue
        elif out is None or type(out) is str:
            continue
        return f"outputs.{outputs.index(out)}", 'a garak Message ({"text": ...}), a string or null'
    return None


def align_garak_scores(fields: dict[str, Any]) -> None:
    """Older garak detectors skipped null outputs and wrote fewer scores than outputs: put
    a null score back at each null output, so every score meets its own output. A detector
    that wrote no score at all scored nothing: all its scores are null (counted as nones)."""
    results, outputs = fields.get("detector_results"), fields.get("outputs") or []
    n = len(outputs)
    if type(results) is not dict or all(
        type(s) is not list or len(s) >= n for s in results.values()
    ):
        return
    present = None
    for name, scores in list(results.items()):
        if type(scores) is not list or len(scores) >= len(outputs):
            continue
        if present is None:
            present = [i for i, o in enumerate(outputs) if o is not None]
        if scores and len(scores) != len(present):
            continue
        aligned: list[Any] = [None] * len(outputs)
        for i, score in zip(present, scores, strict=False):
            aligned[i] = score
        results = {**results, name: aligned}
    fields["detector_results"] = results


def path_problem(path: Path) -> str | None:
    """What keeps `path` from being read as an input file, or None."""
    if path.is_dir():
        return "is a folder, not an input file (name the files in it)"
    if path.is_file():
        return None
    if path.exists():  # a FIFO, a device or a socket: it would block or never end
        return "not a regular file (a pipe, device or socket); give a file"
    return "no such input file"


def detect_format(path: Path) -> str:
    """Another tool's format recognised from the content (promptfoo, inspect_ai, PyRIT,
    Azure), else `garak` when the first JSON object has garak's `entry_type`, else `redjury`.

    A broken line before it does not decide: it is reported as a bad line of the format
    that the rest of the file is."""
    # Imported here: the readers build InputRecords from this module.
    from redjury.formats import sniff

    tool = sniff(path)
    if tool is not None:
        return tool
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                first, _ = _json_object(raw)
                if first is not None:
                    return "garak" if "entry_type" in first else "redjury"
    return "redjury"


class AttemptSource(Protocol):
    """A stream of input records: files (InputSet) or attempts given from Python."""

    paths: list[Path]
    garak_setup: dict[str, GarakSetup]

    def records(self) -> Iterator[InputRecord]: ...

    def prepare(self) -> None: ...

    def empty_reason(self) -> str: ...


def redjury_record(name: str, lineno: int, data: Any) -> InputRecord:
    """One redjury record given as a dict (from Python) as an attempt or a line error."""
    if not isinstance(data, dict):
        return _line_error(name, lineno, "(line)", "not a JSON object")
    return _checked_redjury(name, lineno, data, redjury_line_problem(data))


@dataclass
class InputSet:
    """Several input files read as one stream of attempts."""

    paths: list[Path]
    garak_setup: dict[str, GarakSetup] = field(default_factory=dict)
    # Per garak file: hash of an attempt uuid -> how many status-2 rows carry it (one,
    # except in a merged report, where garak's aggregation gives every attempt one uuid).
    _final_rows: dict[str, dict[int, int]] = field(default_factory=dict)

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
        with path.open("rb") as fh:
            yield from redjury_line_records(str(path), enumerate(fh, 1))

    def _scan_garak(self, path: Path) -> None:
        name = str(path)
        if name in self._final_rows:
            return
        setup = GarakSetup()
        final: dict[int, int] = {}
        for head, raw in _scan_lines(path):
            if head is not None:
                setup.attempt_rows += 1
                if head.group(2) == b"2":
                    key = hash(head.group(1).decode(errors="replace"))
                    final[key] = final.get(key, 0) + 1
                continue
            try:
                row = loads_json(raw)
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
                uuid = row.get("uuid")
                if row.get("status") == 2 and type(uuid) is str:  # others: a line error
                    key = hash(uuid)
                    final[key] = final.get(key, 0) + 1
        self.garak_setup[name] = setup
        self._final_rows[name] = final

    def _garak_records(self, path: Path) -> Iterator[InputRecord]:
        self._scan_garak(path)
        with path.open("rb") as fh:
            yield from self.garak_line_records(str(path), enumerate(fh, 1))

    def repeated_uuids(self, path: Path) -> bool:
        """Whether a scanned garak report gives one uuid to several final rows (a merged
        report): their ids are numbered in file order, so its lines depend on each other."""
        return any(n > 1 for n in self._final_rows.get(str(path), {}).values())

    def garak_line_records(
        self, name: str, lines: Iterable[tuple[int, bytes]]
    ) -> Iterator[InputRecord]:
        """The records of numbered lines of a garak report that `_scan_garak` has read."""
        setup = self.garak_setup[name]
        final = self._final_rows[name]
        repeats: dict[int, int] = {}
        for lineno, raw in lines:
            if not raw or raw.isspace():
                continue
            repeated = _repeated_garak_key(raw)
            if repeated is not None:
                yield _line_error(name, lineno, *repeated)
                continue
            head = _GARAK_ATTEMPT_HEAD.match(raw)
            if head is not None:
                head_status, head_uuid = head.group(2), head.group(1).decode(errors="replace")
                if head_status == b"0" or (head_status == b"1" and hash(head_uuid) in final):
                    continue
            row, problem = garak_json_object(raw)
            if row is not None:
                problem = garak_row_problem(row)
            if problem is not None:
                yield _line_error(name, lineno, *problem)
                continue
            assert row is not None
            if row["entry_type"] != "attempt":
                continue
            status = row["status"]
            key = hash(row["uuid"])
            if status != 2 and (status != 1 or key in final):
                continue
            # A uuid on several status-2 rows: numbered in file order, the same on every
            # read, so a resumed run finds the attempts it has judged.
            attempt_id = None
            if status == 2 and final.get(key, 0) > 1:
                repeats[key] = repeats.get(key, 0) + 1
                attempt_id = f"{row['uuid']}#{repeats[key]}"
            yield _garak_record(name, lineno, row, setup, attempt_id)


def redjury_line_records(name: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[InputRecord]:
    """The records of numbered lines of a redjury JSONL file (blank lines skipped)."""
    for lineno, raw in lines:
        if raw and not raw.isspace():
            yield _redjury_record(name, lineno, raw)


def _redjury_record(name: str, lineno: int, raw: bytes) -> InputRecord:
    data, problem = _json_object(raw)
    if data is not None:
        problem = redjury_line_problem(data) or hidden_json_problem(raw, data)
    return _checked_redjury(name, lineno, data, problem)


def _checked_redjury(
    name: str, lineno: int, data: dict[str, Any] | None, problem: tuple[str, str] | None
) -> InputRecord:
    if problem is not None:
        return _line_error(name, lineno, *problem)
    assert data is not None
    try:
        attempt = Attempt.model_validate(data)
    except ValidationError as exc:
        return InputRecord(name, lineno, None, _first_error(name, lineno, exc))
    if attempt.outputs:
        return InputRecord(name, lineno, attempt)
    return _no_replies(name, lineno, attempt)


def _garak_record(
    name: str, lineno: int, row: dict[str, Any], setup: GarakSetup, attempt_id: str | None = None
) -> InputRecord:
    try:
        fields = garak_attempt_fields(row, setup, attempt_id)
    except RecursionError:  # a prompt nested ~1,000 levels deep, turned into text
        return _line_error(name, lineno, "prompt", "nested too deeply")
    if fields.get("detector_results"):
        align_garak_scores(fields)
    attempt = checked_attempt(fields)
    if attempt is None:
        try:
            attempt = Attempt.model_validate(fields)
        except ValidationError as exc:
            return InputRecord(name, lineno, None, _first_error(name, lineno, exc, _GARAK_FIELDS))
    if attempt.outputs:
        return InputRecord(name, lineno, attempt)
    return _no_replies(name, lineno, attempt)


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
            elif (problem := _key_not_text(item)) is not None:
                yield _line_error(self.name, index, *problem)
            else:
                yield redjury_record(self.name, index, item)

    def prepare(self) -> None:
        return None  # nothing to read ahead

    def empty_reason(self) -> str:
        """Why there is nothing to judge."""
        return f"{self.name}: no attempts to judge (none were given)"


def _key_not_text(item: dict[str, Any]) -> tuple[str, str] | None:
    """(field, reason) for a key that is not text in a dict from Python (no JSON line has
    one): the model would drop it without a word, and `usage` would read as no usage."""
    if any(type(key) is not str for key in item):
        return "(attempt)", "a top-level key is not text; attempt keys are field names"
    usage = item.get("usage")
    if isinstance(usage, dict) and any(type(key) is not str for key in usage):
        return "usage", "a key is not text; usage keys are prompt_tokens, completion_tokens…"
    return None


def check_inputs(
    inputs: AttemptSource, on_attempt: Callable[[Attempt], None] | None = None
) -> tuple[int, list[LineError], int]:
    """First pass: count good attempts, collect bad lines (duplicate ids included);
    `on_attempt` sees each good attempt.

    Returns (good attempts, first errors, total errors). The ids are held in an `IdStore`,
    so memory stays bounded for any number of attempts.
    """
    seen = IdStore()
    errors: list[LineError] = []
    total_errors = 0
    good = 0
    for rec in inputs.records():
        err = rec.error
        if err is None and rec.attempt is not None:
            if not seen.add(rec.attempt.id):
                err = LineError(rec.path, rec.line, "id", f"duplicate id {rec.attempt.id!r}")
            else:
                good += 1
                if on_attempt is not None:
                    on_attempt(rec.attempt)
        if err is not None:
            total_errors += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(err)
    return good, errors, total_errors
