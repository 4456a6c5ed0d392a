"""A JSON document read as a stream with ijson: its records as they are parsed, a few
values of its head, and errors named by the line they broke on."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import ijson

from redjury.formats.base import DocumentError
from redjury.records import BOM, LineError

CHUNK = 1 << 16
# Deeper than any tool writes; ijson's memory grows with the square of the depth.
MAX_DEPTH = 512
# A \uD800-\uDBFF escape with no low half after it, or a low half with no high one before
# it (an even run of backslashes before either is text, not an escape).
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)(?:\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_HIGH_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_SPLIT_BYTES = 24  # a cut is made before any backslash this close to a chunk's end
_MARKS = bytes(b for b in range(256) if b not in b'[]{}"')  # all but brackets and quotes
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_SLICE = 256  # brackets counted at once; a slice that could pass the limit is walked


@dataclass
class _Nesting:
    """How deep the document nests, counted outside its strings: escapes are dropped
    (an escaped backslash, then an escaped quote), so every quote left opens or closes a
    string, and the text between is split off at C speed."""

    depth: int = 0
    in_string: bool = False
    backslash: bytes = b""  # a backslash ending the last chunk escapes the next byte

    def feed(self, chunk: bytes) -> int:
        """The deepest level reached in `chunk`."""
        data = (self.backslash + chunk).replace(b"\\\\", b"")
        self.backslash = b"\\" if data.endswith(b"\\") else b""
        marks = data.replace(b'\\"', b"").translate(None, _MARKS)
        parts = marks.split(b'"')
        brackets = b"".join(parts[1::2] if self.in_string else parts[0::2])
        self.in_string ^= len(parts) % 2 == 0
        deepest = self.depth
        for at in range(0, len(brackets), _SLICE):
            part = brackets[at : at + _SLICE]
            opens = part.count(b"[") + part.count(b"{")
            if self.depth + opens > MAX_DEPTH:
                steps = accumulate((_STEP[b] for b in part), initial=self.depth)
                deepest = max(deepest, *steps)
            self.depth += 2 * opens - len(part)
            deepest = max(deepest, self.depth)
        return deepest


@dataclass
class _Chunks:
    """The document's bytes as ijson is fed them: past a byte-order mark, a lone surrogate
    escape read as U+FFFD (as JavaScript writes a string cut inside an emoji), nesting
    checked, and lines counted."""

    path: Path
    line: int = 1
    nesting: _Nesting = field(default_factory=_Nesting)

    def __iter__(self) -> Iterator[bytes]:
        held = b""
        with self.path.open("rb") as fh:
            chunk = fh.read(CHUNK).removeprefix(BOM)
            while chunk:
                data = held + chunk if held else chunk
                chunk = fh.read(CHUNK)
                cut = _safe_cut(data) if chunk else len(data)
                held = data[cut:]
                if cut:
                    yield self._checked(data[:cut] if held else data)
            if held:
                yield self._checked(held)

    def _checked(self, data: bytes) -> bytes:
        if b"\\u" in data:
            data = _LONE_SURROGATE.sub(rb"\1\\ufffd", data)
        if self.nesting.feed(data) > MAX_DEPTH:
            reason = f"nested more than {MAX_DEPTH} levels deep"
            raise DocumentError(LineError(str(self.path), self.line, "(file)", reason))
        self.line += data.count(b"\n")
        return data


def _safe_cut(data: bytes) -> int:
    """Where to end a chunk so that no escape, run of backslashes or surrogate pair is cut
    in two: after its last newline (never inside a JSON string), else before the escapes
    near its end."""
    newline = data.rfind(b"\n")
    if newline >= 0:
        return newline + 1
    cut = data.find(b"\\", max(len(data) - _SPLIT_BYTES, 0))
    if cut < 0:
        return len(data)
    cut = len(data[:cut].rstrip(b"\\"))
    if cut >= 6 and _HIGH_ESCAPE.fullmatch(data, cut - 6, cut):
        cut = len(data[: cut - 6].rstrip(b"\\"))
    return cut or len(data)  # a chunk of backslashes alone is not JSON anyway


def _not_json(path: Path, line: int, exc: Exception) -> DocumentError:
    message = exc.args[0] if exc.args else exc
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    reason = str(message).strip().splitlines()[0] if str(message).strip() else "not JSON"
    return DocumentError(LineError(str(path), line, "(file)", f"not JSON: {reason}"))


class _Reader:
    """The checked chunks as the file object ijson reads, knowing which one it is at."""

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.chunks = _Chunks(path)
        self._chunks = iter(self.chunks)
        self.index = -1
        self.done = False
        # Past this many bytes the document reads as cut short (None: read it all).
        self.left = max_bytes

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson asks for nothing first, to learn bytes from text
            return b""
        data = None if self.left is not None and self.left <= 0 else next(self._chunks, None)
        if data is None:
            self.done = True
            return b""
        self.index += 1
        if self.left is not None:
            self.left -= len(data)
        return data


def _parsed(
    path: Path, parse: Callable[[_Reader], Iterator[Any]], max_bytes: int | None = None
) -> Iterator[Any]:
    """What ijson's `parse` gives for the document (its first `max_bytes`, when given); a
    syntax error is raised as a DocumentError naming the line it broke on."""
    reader = _Reader(path, max_bytes)
    try:
        yield from parse(reader)
    except ijson.JSONError as exc:
        line = reader.chunks.line if reader.done else _error_line(path, reader.index)
        raise _not_json(path, line, exc) from None


def _error_line(path: Path, bad_chunk: int) -> int:
    """The line a chunk's syntax error is on: the document parsed again to that chunk,
    then fed the chunk line by line (only once a document has failed)."""
    sink = ijson.sendable_list()
    parser = ijson.basic_parse_coro(sink)
    chunks = _Chunks(path)
    for index, data in enumerate(chunks):
        parts = [data] if index < bad_chunk else data.splitlines(keepends=True)
        line = chunks.line - data.count(b"\n")
        for part in parts:
            try:
                parser.send(part)
            except ijson.JSONError:
                return line
            sink.clear()
            line += part.count(b"\n")
        if index >= bad_chunk:
            break
    return chunks.line


def items(path: Path, prefix: str) -> Iterator[Any]:
    """Each value at `prefix` (`results.results.item`), built as it is parsed."""
    return _parsed(path, lambda f: ijson.items(f, prefix, use_float=True))


def kvitems(path: Path, prefix: str) -> Iterator[tuple[str, Any]]:
    """Each (key, value) of the object at `prefix`, built as it is parsed."""
    return _parsed(path, lambda f: ijson.kvitems(f, prefix, use_float=True))


def values_at(path: Path, prefixes: frozenset[str]) -> dict[str, Any]:
    """The first value at each of `prefixes` anywhere in the document, a whole pass each:
    for what a document may give after its records."""
    values: dict[str, Any] = {}
    for prefix in sorted(prefixes):
        for value in items(path, prefix):
            values[prefix] = value
            break
    return values


START_ARRAY, START_MAP = "start_array", "start_map"


@dataclass
class Head:
    """What precedes the records: the wanted values, and where the records start."""

    values: dict[str, Any] = field(default_factory=dict)
    stop: str | None = None  # the prefix the records start at, None when none was found
    stop_event: str | None = None


def head(path: Path, wanted: frozenset[str], stops: frozenset[tuple[str, str]]) -> Head:
    """The values at `wanted` prefixes, read until a (prefix, start event) of `stops`."""
    out = Head()
    building: dict[str, tuple[ijson.ObjectBuilder, int]] = {}
    for prefix, event, value in _parsed(path, lambda f: ijson.parse(f, use_float=True)):
        if (prefix, event) in stops:
            out.stop, out.stop_event = prefix, event
            return out
        _build(out.values, building, wanted, prefix, event, value)
    return out


def _build(
    values: dict[str, Any],
    building: dict[str, tuple[ijson.ObjectBuilder, int]],
    wanted: frozenset[str],
    prefix: str,
    event: str,
    value: Any,
) -> None:
    for name, (builder, depth) in list(building.items()):
        builder.event(event, value)
        depth += {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1}.get(event, 0)
        if depth == 0:
            values[name] = builder.value
            del building[name]
        else:
            building[name] = (builder, depth)
    if prefix not in wanted or event in ("map_key", "end_map", "end_array") or prefix in building:
        return
    if event in ("start_map", "start_array"):
        builder = ijson.ObjectBuilder()
        builder.event(event, value)
        building[prefix] = (builder, 1)
    else:
        values[prefix] = value


_STARTS = {START_MAP: dict, START_ARRAY: list}


class _Shape:
    """A document's shape built from its parse events (see `skeleton`)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.root: Any = None
        self.stack: list[Any] = []
        self.keys: list[Any] = []
        self.skipping = 0
        self.grew = False  # a value was added near the top: the shape may now be enough

    def add(self, event: str, value: Any) -> bool:
        """Take one parse event; True once the top-level value is complete."""
        if self.skipping:
            self.skipping += 1 if event in _STARTS else -1 if event.startswith("end_") else 0
            return False
        if event == "map_key":
            self.keys[-1] = value
            return False
        if event.startswith("end_"):
            self.stack.pop()
            self.keys.pop()
            return not self.stack
        parent = self.stack[-1] if self.stack else None
        if isinstance(parent, list) and parent:  # not the first item: skipped
            self.skipping = 1 if event in _STARTS else 0
            return False
        made = _STARTS[event]() if event in _STARTS else value
        if parent is None:
            self.root = made
        elif isinstance(parent, dict):
            parent[self.keys[-1]] = made
        else:
            parent.append(made)
        self.grew = len(self.stack) <= 2
        if event not in _STARTS:
            return parent is None
        if len(self.stack) >= self.depth:
            self.skipping = 1
        else:
            self.stack.append(made)
            self.keys.append(None)
        return False


def skeleton(
    path: Path,
    depth: int = 3,
    enough: Callable[[Any], bool] | None = None,
    max_bytes: int | None = None,
) -> Any:
    """The document's shape, enough to recognise it: objects with their keys, a list with
    its first item only, containers deeper than `depth` levels left empty. Read up to the
    end of the top-level value, or until `enough(shape so far)`; a DocumentError when the
    value does not end within `max_bytes` (when given)."""
    shape = _Shape(depth)
    parse = _parsed(path, lambda f: ijson.parse(f, use_float=True), max_bytes)
    for _, event, value in parse:
        if shape.add(event, value):
            break
        if shape.grew and enough is not None and enough(shape.root):
            break
        shape.grew = False
    return shape.root
