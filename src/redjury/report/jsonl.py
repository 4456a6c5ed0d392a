"""The report and hitlog JSONL files: streamed, flushed, resumable."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

REPORT_NAME = "redjury.report.jsonl"
HITLOG_NAME = "redjury.hitlog.jsonl"


def dumps(row: dict[str, Any]) -> str:
    try:
        return orjson.dumps(row).decode()
    except TypeError:  # a value orjson does not know (or an int beyond 64 bits)
        return json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=str)


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Complete JSON rows of a JSONL file; a torn last line (a killed writer) is skipped."""
    with path.open("r", encoding="utf-8") as fh:
        for raw in fh:
            if not raw.endswith("\n"):
                return
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


def dumps_line(row: dict[str, Any]) -> bytes:
    """One JSONL line as UTF-8 bytes."""
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return (
            json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        ).encode()


def row_line(row: dict[str, Any]) -> bytes:
    """A row as one JSONL line; orjson's fast path, `dumps_line` for what it does not know."""
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return dumps_line(row)


class JsonlWriter:
    """Appends rows, flushing every `flush_every` rows (0: only when told), so a kill
    loses at most the rows written since the last flush.

    Lines are gathered and handed to the file in batches of `_BATCH` (one write call for
    many small lines), which changes nothing about what a flush has made durable.

    With `sync_every` (bytes), each time that much more has been written an fsync of the
    file so far starts in a thread: the disk takes the file while the run goes on, and the
    closing fsync waits only for the last stretch (~80 ms less at the end of a run that
    wrote 60 MB). What is durable when is unchanged: `close` still syncs the whole file."""

    _BATCH = 256

    def __init__(
        self, path: Path, mode: str = "a", flush_every: int = 1, sync_every: int = 0
    ) -> None:
        self.path = path
        self._fh: IO[bytes] = path.open(mode + "b")
        self._pending = 0
        self._flush_every = flush_every
        self._lines: list[bytes] = []
        self._syncing: threading.Thread | None = None
        self._sync_every = sync_every
        self._unsynced = 0
        self._behind: threading.Thread | None = None

    def write(self, row: dict[str, Any]) -> None:
        self.write_line(row_line(row))

    def write_line(self, line: bytes) -> None:
        """Append already-serialised JSONL lines (one or more, each with its newline)."""
        lines = self._lines
        lines.append(line)
        if len(lines) >= self._BATCH:
            self._write_batch()
        if self._flush_every:
            self._pending += 1
            if self._pending >= self._flush_every:
                self.flush()

    def write_block(self, lines: memoryview) -> None:
        """Append many already-serialised JSONL lines at once, written before this returns
        (the buffer may be reused as soon as it does)."""
        if self._lines:
            self._write_batch()
        self._fh.write(lines)
        self._written(len(lines))

    def _write_batch(self) -> None:
        # Taken off the list before the write: a Ctrl-C between the two loses the batch
        # (a resume judges it again) rather than have the closing flush write it twice.
        data = b"".join(self._lines)
        self._lines.clear()
        self._fh.write(data)
        self._written(len(data))

    def _written(self, size: int) -> None:
        if self._sync_every:
            self._unsynced += size
            if self._unsynced >= self._sync_every:
                self._sync_behind()

    def _sync_behind(self) -> None:
        """An fsync of everything written so far, in a thread; none while the last one is
        still out (the next write tries again)."""
        behind = self._behind
        if behind is not None and behind.is_alive():
            return
        self._unsynced = 0
        self._behind = self._fsync_in_thread("redjury-fsync-behind")

    def _fsync_in_thread(self, name: str) -> threading.Thread:
        """Flush, then put the file so far on disk in a thread while this one goes on
        (`os.fsync` lets go of the GIL)."""
        self.flush()
        thread = threading.Thread(target=os.fsync, args=(self._fh.fileno(),), name=name)
        thread.start()
        return thread

    def flush(self) -> None:
        if self._lines:
            self._write_batch()
        self._fh.flush()
        self._pending = 0

    def still_at_path(self) -> bool:
        """Whether the open file is still the one at `path` (not removed or replaced)."""
        if self._fh.closed:
            return self.path.exists()
        try:
            return os.path.samestat(os.fstat(self._fh.fileno()), os.stat(self.path))
        except OSError:
            return False

    def tell(self) -> int:
        """The file offset after every row written so far."""
        self.flush()
        return self._fh.tell()

    def truncate(self, offset: int) -> None:
        """Drop every row written after `offset` (a run that turned out to be refused)."""
        self.flush()
        self._fh.truncate(offset)
        self._fh.seek(offset)

    def sync_soon(self) -> None:
        """Start putting what is written so far on disk, in a thread, once. `close` waits
        for it, then syncs the rest: the end of a run computes its intervals while most of
        its files reach the disk."""
        if self._fh.closed or self._syncing is not None:
            return
        self._syncing = self._fsync_in_thread("redjury-fsync")

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            self.flush()
        finally:
            # The threads' fsyncs end before the file is closed under them.
            for thread in (self._syncing, self._behind):
                if thread is not None:
                    thread.join()
            self._syncing = self._behind = None
        os.fsync(self._fh.fileno())
        self._fh.close()


class MemoryWriter:
    """A row sink that keeps the rows in a list: a run judged from Python with no files."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write_line(self, line: bytes) -> None:
        """Append the rows of one or more JSONL lines (each ending with a newline)."""
        self.rows.extend(orjson.loads(one) for one in line.splitlines())

    def write_block(self, lines: memoryview) -> None:
        self.write_line(bytes(lines))

    def sync_soon(self) -> None:
        """Nothing to put on disk."""

    def write(self, row: dict[str, Any]) -> None:
        # The row as a file would give it back (string keys, JSON types), not shared with
        # the caller's objects.
        self.rows.append(orjson.loads(dumps_line(row)))

    def flush(self) -> None:
        return None  # nothing is buffered

    def tell(self) -> int:
        return len(self.rows)

    def truncate(self, offset: int) -> None:
        del self.rows[offset:]

    def close(self) -> None:
        return None  # nothing to release


RowSink = JsonlWriter | MemoryWriter
