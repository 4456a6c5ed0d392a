"""The inputs of a run: each file opened and read, streamed (R1), by the format that claims
it (`redjury.formats`), and the first pass that counts good attempts and bad lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from redjury.attempts import Attempt
from redjury.formats import DEFAULT_FORMAT, line_format, sniff
from redjury.formats.base import DocumentFormat
from redjury.formats.garak import GarakSetup
from redjury.formats.jsonl import redjury_record
from redjury.formats.lines import json_object, line_error
from redjury.idstore import IdStore
from redjury.plugins import FORMATS
from redjury.records import InputRecord, LineError

MAX_REPORTED_ERRORS = 20


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
    """The registered format whose records `path` holds: a document format that claims it
    (promptfoo, inspect_ai, PyRIT, Azure), else the JSONL format that claims its first JSON
    object (garak's when it has `entry_type`), else redjury's.

    A broken line before it does not decide: it is reported as a bad line of the format
    that the rest of the file is."""
    tool = sniff(path)
    if tool is not None:
        return tool
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                first, _ = json_object(raw)
                if first is not None:
                    return line_format(first)
    return DEFAULT_FORMAT


class AttemptSource(Protocol):
    """A stream of input records: files (InputSet) or attempts given from Python."""

    paths: list[Path]

    @property
    def garak_setup(self) -> dict[str, GarakSetup]: ...

    def records(self) -> Iterator[InputRecord]: ...

    def prepare(self) -> None: ...

    def empty_reason(self) -> str: ...


@dataclass
class InputSet:
    """Several input files read as one stream of attempts, each by its registered format."""

    paths: list[Path]
    # Per file, what its format's pre-scan read (a garak report's setup and final rows).
    scans: dict[str, Any] = field(default_factory=dict)
    # Per file, its format (`format_of`).
    formats: dict[str, str] = field(default_factory=dict)

    @property
    def garak_setup(self) -> dict[str, GarakSetup]:
        """What the garak reports among the inputs say about their runs."""
        return {n: s for n, s in self.scans.items() if isinstance(s, GarakSetup)}

    def empty_reason(self) -> str:
        """Why the inputs hold no attempt at all (asked when they hold none)."""
        names = ", ".join(str(p) for p in self.paths)
        reasons = {_scan_empty_reason(self.scans.get(str(p))) for p in self.paths}
        if len(reasons) == 1 and None not in reasons:
            return f"{names}: {reasons.pop()}"
        return f"{names}: no attempts to judge (the input is empty)"

    def format_of(self, path: Path) -> str:
        """`detect_format(path)`, found once per run (it may read far into a long line)."""
        name = str(path)
        if name not in self.formats:
            self.formats[name] = detect_format(path)
        return self.formats[name]

    def records(self) -> Iterator[InputRecord]:
        for path in self.paths:
            fmt = FORMATS.get(self.format_of(path))
            if fmt.prescan is not None and fmt.read_scanned is not None:
                yield from fmt.read_scanned(path, self._scan(path, fmt))
            else:
                yield from fmt.read(path)

    def prepare(self) -> None:
        """Read ahead what the formats need before judging (garak reports' setup rows)."""
        for path in self.paths:
            fmt = FORMATS.get(self.format_of(path))
            if fmt.prescan is not None:
                self._scan(path, fmt)

    def _scan(self, path: Path, fmt: DocumentFormat) -> Any:
        name = str(path)
        if name not in self.scans:
            assert fmt.prescan is not None
            self.scans[name] = fmt.prescan(path)
        return self.scans[name]

    def repeated_uuids(self, path: Path) -> bool:
        """Whether a scanned garak report gives one uuid to several final rows (a merged
        report): their ids are numbered in file order, so its lines depend on each other."""
        scan = self.scans.get(str(path))
        return isinstance(scan, GarakSetup) and scan.repeated_uuids()


def _scan_empty_reason(scan: Any) -> str | None:
    reason = getattr(scan, "empty_reason", None)
    return reason() if reason is not None else None


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
                yield line_error(self.name, index, *problem)
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
