"""garak's `report.jsonl`: its attempt rows read as attempts, streamed.

A report is read twice. The pre-scan (`scan_report`) reads what the run's setup and init
rows say (target, generations, run id) and which attempts have a final (status 2) row; the
read then judges each final row, or the status-1 row of an attempt that never got one."""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import orjson
from pydantic import ValidationError

from redjury.attempts import Attempt, checked_attempt
from redjury.formats.base import DocumentFormat
from redjury.formats.lines import (
    JSON_KINDS,
    REPEATED_KEY,
    TOO_DEEP,
    first_error,
    json_object,
    line_error,
    no_replies,
    repeated_key,
)
from redjury.plugins import FORMATS
from redjury.records import InputRecord, loads_json

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
# garak's names for the fields a garak row maps onto.
_GARAK_FIELDS = {"id": "uuid", "probe": "probe_classname"}


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
    """What the pre-scan of a garak report read: what its `start_run setup` and `init` rows
    say about the run, and its final rows."""

    generator: str | None = None
    generations_per_prompt: int | None = None
    run_id: str | None = None
    attempt_rows: int = 0
    # Hash of an attempt uuid -> how many status-2 rows carry it (one, except in a merged
    # report, where garak's aggregation gives every attempt one uuid).
    final_rows: dict[int, int] = field(default_factory=dict)

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

    def repeated_uuids(self) -> bool:
        """Whether the report gives one uuid to several final rows (a merged report): their
        ids are numbered in file order, so its lines depend on each other."""
        return any(n > 1 for n in self.final_rows.values())

    def empty_reason(self) -> str | None:
        """Why the report holds no attempt, where it has no attempt row at all."""
        if self.attempt_rows:
            return None
        return "no attempt rows in a garak report (the run ended before its first attempt)"


def scan_report(path: Path) -> GarakSetup:
    """The pre-scan: the setup and init rows, and how many final rows each uuid has."""
    setup = GarakSetup()
    final = setup.final_rows
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
    return setup


def read_report(path: Path, setup: GarakSetup | None = None) -> Iterator[InputRecord]:
    """The attempts of a garak `report.jsonl`, with its pre-scan (made here if not given)."""
    if setup is None:
        setup = scan_report(path)
    with path.open("rb") as fh:
        yield from garak_line_records(str(path), enumerate(fh, 1), setup)


def garak_line_records(
    name: str, lines: Iterable[tuple[int, bytes]], setup: GarakSetup
) -> Iterator[InputRecord]:
    """The records of numbered lines of a garak report whose pre-scan is `setup`."""
    final = setup.final_rows
    repeats: dict[int, int] = {}
    for lineno, raw in lines:
        if not raw or raw.isspace():
            continue
        repeated = _repeated_garak_key(raw)
        if repeated is not None:
            yield line_error(name, lineno, *repeated)
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
            yield line_error(name, lineno, *problem)
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
    `json_object`, which names the problem as for any other line. Integers beyond 64 bits,
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
    return json_object(raw)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def _repeated_garak_key(raw: bytes) -> tuple[str, str] | None:
    """A key given twice in a garak row, looked for only where `status` or `uuid` (which
    decide whether a row is judged, and as which attempt) appear more than once: two
    counts of the line, a sixth of the cost of its parse."""
    if raw.count(b'"status"') < 2 and raw.count(b'"uuid"') < 2:
        return None
    try:
        key = repeated_key(raw)
    except (ValueError, RecursionError):
        return None  # not JSON: the parse that follows names it
    return None if key is None else (key, REPEATED_KEY)


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
        return "notes", f"a JSON object, not {JSON_KINDS.get(type(notes), 'that')}"
    if notes and _too_deep(notes):  # notes go into the report as they are
        return "notes", TOO_DEEP
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
        kind = JSON_KINDS.get(type(outputs), "that")
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


def _garak_record(
    name: str, lineno: int, row: dict[str, Any], setup: GarakSetup, attempt_id: str | None = None
) -> InputRecord:
    try:
        fields = garak_attempt_fields(row, setup, attempt_id)
    except RecursionError:  # a prompt nested ~1,000 levels deep, turned into text
        return line_error(name, lineno, "prompt", "nested too deeply")
    if fields.get("detector_results"):
        align_garak_scores(fields)
    attempt = checked_attempt(fields)
    if attempt is None:
        try:
            attempt = Attempt.model_validate(fields)
        except ValidationError as exc:
            return InputRecord(name, lineno, None, first_error(name, lineno, exc, _GARAK_FIELDS))
    if attempt.outputs:
        return InputRecord(name, lineno, attempt)
    return no_replies(name, lineno, attempt)


def _is_garak_row(first: Any) -> bool:
    """A JSONL file whose first JSON object names garak's `entry_type`."""
    return isinstance(first, dict) and "entry_type" in first


FORMAT = FORMATS.register(
    DocumentFormat(
        name="garak",
        claims=_is_garak_row,
        head=lambda head: False,
        read=read_report,
        lines=True,
        prescan=scan_report,
        read_scanned=read_report,
    )
)
