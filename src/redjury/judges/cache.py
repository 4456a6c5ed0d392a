"""The persistent judge cache: SQLite, keyed by judge fingerprint + rendered input; no abstentions."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from redjury.errors import RunError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    key BLOB PRIMARY KEY,
    judge TEXT NOT NULL,
    raw TEXT NOT NULL,
    score REAL NOT NULL,
    label TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL
) WITHOUT ROWID
"""


def default_cache_path() -> Path:
    """$REDJURY_CACHE_DIR/judges.sqlite, else the user cache dir (~/.cache/redjury on Linux)."""
    root = os.environ.get("REDJURY_CACHE_DIR") or user_cache_dir("redjury")
    return Path(root) / "judges.sqlite"


class JudgeCacheError(RunError):
    """The cache file cannot be opened, read or written: one line naming it (exit 2)."""

    def __init__(self, path: Path, exc: BaseException) -> None:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in reason:
            reason = "not a judge cache (damaged, or another kind of file)"
        elif path.is_dir():
            reason = "is a folder, not a cache file"
        clear = f"remove it (rm '{path}'*) to start an empty cache, "
        if path.is_dir():
            clear = f"remove that folder (rm -r '{path}') to start an empty cache, "
        elif path.parent.exists() and not path.parent.is_dir():
            reason, clear = f"{path.parent} is a file, not a folder", ""
        super().__init__(
            f"judge cache {path}: {reason}; {clear}point REDJURY_CACHE_DIR at another "
            "folder, or run with --no-cache"
        )


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """SQLite's and the file system's errors about the cache as a `JudgeCacheError`."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise JudgeCacheError(path, exc) from None


@dataclass(frozen=True, slots=True)
class CachedJudgement:
    raw: str
    score: float
    label: str | None
    prompt_tokens: int
    completion_tokens: int


class JudgeCache:
    """Reads hit SQLite directly (a few µs); writes queue in memory and commit in batches,
    because one commit per judgement would cost more than the judgement's own client work."""

    def __init__(
        self, path: Path | str, *, batch_size: int = 256, max_delay_s: float = 1.0
    ) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._pending: dict[bytes, tuple[str, CachedJudgement]] = {}
        self._batch_size = batch_size
        self._max_delay_s = max_delay_s
        self._last_flush = time.monotonic()

    @property
    def _db(self) -> sqlite3.Connection:
        # Opened on first use (and again after close), so a panel outlives one run's close.
        if self._conn is None:
            with _naming(self.path):
                self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            # Several runs may share the cache; WAL lets them read while one writes.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

    def open(self) -> None:
        """Open the file now: a cache that cannot work stops the run before any judging."""
        assert self._db is not None

    def get(self, key: bytes) -> CachedJudgement | None:
        pending = self._pending.get(key)
        if pending is not None:
            return pending[1]
        with _naming(self.path):
            row = self._db.execute(
                "SELECT raw, score, label, prompt_tokens, completion_tokens FROM judgements "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        return CachedJudgement(*row) if row else None

    def put(self, key: bytes, judge: str, value: CachedJudgement) -> None:
        self._pending[key] = (judge, value)
        # A time bound too, so a killed run loses at most a second of judgements.
        if (
            len(self._pending) >= self._batch_size
            or time.monotonic() - self._last_flush > self._max_delay_s
        ):
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        rows = [
            (k, j, v.raw, v.score, v.label, v.prompt_tokens, v.completion_tokens)
            for k, (j, v) in self._pending.items()
        ]
        self._pending.clear()
        with _naming(self.path), self._db:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?, ?, ?)", rows
            )

    def __len__(self) -> int:
        self.flush()
        return int(self._db.execute("SELECT count(*) FROM judgements").fetchone()[0])

    def by_judge(self) -> dict[str, int]:
        """Stored answers per judge id."""
        self.flush()
        rows = self._db.execute("SELECT judge, count(*) FROM judgements GROUP BY judge")
        return {str(judge): int(n) for judge, n in rows}

    def clear(self) -> int:
        """Remove every stored answer; how many there were."""
        self._pending.clear()
        with self._db:
            return int(self._db.execute("DELETE FROM judgements").rowcount)

    def close(self) -> None:
        self.flush()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
