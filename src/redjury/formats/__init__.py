"""Every input format's reader: redjury's own JSONL, garak's report.jsonl, and other
red-team tools' records (promptfoo, inspect_ai, PyRIT, Azure AI Evaluation), recognised
from the content and read as redjury attempts.

Each format registers a `DocumentFormat`: how to recognise its parsed top level (for a
JSONL format, its first JSON object), the keys that give a pretty-printed document away
in its first bytes, and its reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from redjury.formats.base import ZIP_SIGNATURES, DocumentFormat
from redjury.plugins import FORMATS
from redjury.records import BOM, InputRecord, loads_json

HEAD_BYTES = 1 << 16
# A JSONL record longer than this is still read as one; a document is not parsed from it.
FIRST_LINE_BYTES = 1 << 24


# The format of a file that no other format claims.
DEFAULT_FORMAT = "redjury"


def _registry() -> list[DocumentFormat]:
    # Recognition order: the built-ins' table order (most distinctive first), then plugins.
    return [fmt for fmt in FORMATS.ordered() if not fmt.lines]


def line_format(first: dict[str, Any]) -> str:
    """The JSONL format whose records start with `first`, the default one tried last."""
    formats = [fmt for fmt in FORMATS.ordered() if fmt.lines]
    for fmt in sorted(formats, key=lambda fmt: fmt.name == DEFAULT_FORMAT):
        if fmt.claims(first):
            return fmt.name
    return DEFAULT_FORMAT


def classify(doc: Any) -> str | None:
    for fmt in _registry():
        if fmt.claims(doc):
            return fmt.name
    return None


def sniff(path: Path) -> str | None:
    """The tool whose records `path` holds, or None for JSONL (redjury's or garak's)."""
    try:
        with path.open("rb") as fh:
            if fh.read(4) in ZIP_SIGNATURES:
                # A damaged or cut archive too: its reader says so, where JSONL would not.
                return "inspect_ai"
            fh.seek(0)
            # The first line: a JSONL record, or all of a small document written on one line.
            first = fh.readline(FIRST_LINE_BYTES)
            # Longer than that: a JSONL record with a long reply, as a rule.
            long_line = len(first) >= FIRST_LINE_BYTES
            first = first.removeprefix(BOM)
            head = first + fh.read(HEAD_BYTES)
    except OSError:
        return None
    if head.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return classify(loads_json(first))
    except ValueError:
        pass
    # A document over several lines: its first keys usually give it away; else its shape.
    for fmt in _registry():
        if fmt.head(head[: 2 * HEAD_BYTES] if long_line else head):
            return fmt.name
    return _by_shape(path, FIRST_LINE_BYTES if long_line else None)


def _by_shape(path: Path, max_bytes: int | None) -> str | None:
    """The format that claims the document's shape, read as a stream (never held whole).
    After a long first line, only its first `max_bytes`: a document written on one line is
    recognised when its shape shows by then, and the parse goes no further (a JSONL record's
    shape is no document's, and a string of hundreds of megabytes is slow to stream)."""
    from redjury.formats.base import DocumentError
    from redjury.formats.streamed import skeleton

    try:
        found = skeleton(
            path, enough=lambda shape: classify(shape) is not None, max_bytes=max_bytes
        )
        return classify(found)
    except (DocumentError, OSError):
        return None


def read_records(name: str, path: Path) -> Iterator[InputRecord]:
    return FORMATS.get(name).read(path)
