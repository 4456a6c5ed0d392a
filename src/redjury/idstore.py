"""The ids a run has seen, in memory that stays bounded however many attempts it reads.

The duplicate-id check and a resume's kept ids both need an exact set of ids (a resume's
with each kept row's content hash). Held as Python strings, that set grows by about 75 MB
per million ids; here the most recent ids (up to `SPILL_AT`) are held as they are, and
older ones go, each with its value, into a table of SQLite's private temporary database (a
file SQLite unlinks as it opens it, so nothing is left behind, even by a killed run). A Bloom filter of fixed size (`BLOOM_BITS`, 16 MiB,
made at the first spill) remembers the 64-bit hashes of the spilled ids.

A lookup asks the filter first: its "no" is certain. A "maybe" is confirmed in the table by
hash *and* id, so every answer is exact (two ids whose hashes collide are still told apart).
The filter's false positives cost only a table lookup: about 0.4 % of lookups at 10 million
ids, more past 50 million (slower, still exact). Memory: the recent ids (a few MB), the
filter and SQLite's page cache (`CACHE_KIB`), whatever the number of ids.

Stores made with `beside` share one filter and one table file (and its page cache), each
its own table, its ids' hashes salted apart in the filter: a resume's kept ids and the ids
it reads again hold one filter and one cache between them, not one each, so the second
set, filled last, adds nothing to what the first set already holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads at the first spill: a run forks its workers before that
    import numpy as np

# Recent ids held in memory before they are moved to the table.
SPILL_AT = 1 << 16
# The Bloom filter's size in bits (2**27: 16 MiB) and its number of probes per id.
BLOOM_BITS = 1 << 27
BLOOM_PROBES = 4
# SQLite's page cache for the table, in KiB.
CACHE_KIB = 8192
_U64 = (1 << 64) - 1
# A store's salt (XORed into its ids' hashes) is its number in the spill times this odd
# constant (2**63 / the golden ratio), kept below 2**63 so a salted hash fits in int64.
_SALT = 0x9E3779B97F4A7C15
_I63 = (1 << 63) - 1


class _Spill:
    """The filter and the table file that one store, or stores made `beside` it, share."""

    def __init__(self, bloom_bits: int) -> None:
        self.mask = bloom_bits - 1
        assert bloom_bits & self.mask == 0, "the filter's size is a power of two"
        # The stores open on it, and all that ever joined: a store's number (its table and
        # salt) is never one an open store has, even after another store closed.
        self.stores = 0
        self.joined = 0
        self.bloom: np.ndarray | None = None
        self.bits: memoryview | None = None
        self.db: sqlite3.Connection | None = None

    def join(self) -> int:
        """A new store's number in this spill (0 for the first)."""
        self.stores += 1
        self.joined += 1
        return self.joined - 1

    def open(self) -> None:
        import numpy as np

        # "": SQLite's private temporary database, in memory up to its page cache, then in a
        # file SQLite unlinks as it opens it: nothing is left behind, even by a killed run.
        db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self.db = db
        # Zero pages are mapped as they are first written: the filter fills as ids spill.
        self.bloom = np.zeros((self.mask + 1) >> 3, dtype=np.uint8)
        self.bits = memoryview(self.bloom.data)

    def leave(self) -> None:
        """A store is closed: the last one closes the table file and drops the filter."""
        self.stores -= 1
        if self.stores > 0:
            return
        if self.db is not None:
            self.db.close()
        self.db = self.bloom = self.bits = None


class IdStore:
    """An exact set of ids (each with an optional text value) in bounded memory."""

    # The 64-bit hash of an id (Python's own: the store lives in one process).
    hash_of = staticmethod(hash)

    def __init__(
        self, spill_at: int = SPILL_AT, bloom_bits: int = BLOOM_BITS, beside: IdStore | None = None
    ) -> None:
        self._recent: dict[str, str | None] = {}
        self._spill_at = spill_at
        self._shared: _Spill = _Spill(bloom_bits) if beside is None else beside._shared
        number = self._shared.join()
        self._mask = self._shared.mask
        self._salt = (number * _SALT) & _I63
        self._table = "ids" if number == 0 else f"ids{number}"
        self._made = False
        self._spilled = 0

    def beside(self) -> IdStore:
        """A new, empty store sharing this one's filter and table file (see the module)."""
        return type(self)(self._spill_at, self._mask + 1, beside=self)

    @property
    def _bits(self) -> memoryview | None:
        return self._shared.bits if self._made else None

    @property
    def _bloom(self) -> np.ndarray | None:
        return self._shared.bloom if self._made else None

    @property
    def _db(self) -> sqlite3.Connection | None:
        return self._shared.db if self._made else None

    def _hash(self, key: str) -> int:
        return self.hash_of(key) ^ self._salt

    def __len__(self) -> int:
        return len(self._recent) + self._spilled

    def __bool__(self) -> bool:
        return len(self) > 0

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and self.find(item)[0]

    def find(self, key: str) -> tuple[bool, str | None]:
        """(whether `key` is in the store, its value)."""
        recent = self._recent
        if key in recent:
            return True, recent[key]
        if self._bits is None or not self._maybe(self._hash(key)):
            return False, None
        return self._on_disk(key)

    def add(self, key: str, value: str | None = None) -> bool:
        """Add `key` (True), or leave the store as it is when `key` is in it (False)."""
        if self.find(key)[0]:
            return False
        self._recent[key] = value
        if len(self._recent) >= self._spill_at:
            self._spill()
        return True

    def isdisjoint(self, keys: Iterable[str]) -> bool:
        """True when none of `keys` is in the store."""
        keys = list(keys)
        recent = self._recent
        if any(k in recent for k in keys):
            return False
        if self._bloom is None or not keys:
            return True
        import numpy as np

        maybe = self._maybe_many(self._hashes(keys))
        return not any(self._on_disk(keys[i])[0] for i in np.flatnonzero(maybe))

    def add_new(self, keys: list[str]) -> bool:
        """Add every one of `keys` when all are distinct and none is in the store (True);
        otherwise add none (False)."""
        if len(set(keys)) != len(keys) or not self.isdisjoint(keys):
            return False
        self._recent.update(dict.fromkeys(keys))
        if len(self._recent) >= self._spill_at:
            self._spill()
        return True

    def close(self) -> None:
        """Drop the table (the store is empty afterwards, and no longer shares a spill)."""
        db = self._db
        if db is not None and self._shared.stores > 1:
            db.execute(f"DROP TABLE {self._table}")
        if self._shared.stores > 0:
            self._shared.leave()
        self._shared = _Spill(self._mask + 1)
        self._shared.join()
        self._made = False
        self._recent.clear()
        self._spilled = 0

    # -- the filter and the table ----------------------------------------------------------
    def _maybe(self, h: int) -> bool:
        """Whether the filter may hold hash `h` (its probes as `_probes_many` makes them)."""
        bits, mask = self._bits, self._mask
        assert bits is not None
        h &= _U64
        step = (h >> 32) | 1
        for _ in range(BLOOM_PROBES):
            i = h & mask
            if not bits[i >> 3] >> (i & 7) & 1:
                return False
            h += step
        return True

    def _probes_many(self, hashes: np.ndarray) -> np.ndarray:
        import numpy as np

        step = (hashes >> np.uint64(32)) | np.uint64(1)
        probes = np.arange(BLOOM_PROBES, dtype=np.uint64)[:, None]
        with np.errstate(over="ignore"):
            return (hashes[None, :] + probes * step[None, :]) & np.uint64(self._mask)

    def _maybe_many(self, hashes: np.ndarray) -> np.ndarray:
        import numpy as np

        assert self._bloom is not None
        idx = self._probes_many(hashes)
        found = (self._bloom[idx >> np.uint64(3)] >> (idx & np.uint64(7)).astype(np.uint8)) & 1
        return np.asarray(found.all(axis=0))

    def _hashes(self, keys: list[str]) -> np.ndarray:
        import numpy as np

        hashes = map(self._hash, keys)
        return np.fromiter(hashes, dtype=np.int64, count=len(keys)).view(np.uint64)

    def _on_disk(self, key: str) -> tuple[bool, str | None]:
        assert self._db is not None
        row = self._db.execute(
            f"SELECT value FROM {self._table} WHERE h = ? AND id = ?", (self._hash(key), key)
        ).fetchone()
        return (False, None) if row is None else (True, row[0])

    def _spill(self) -> None:
        """Move the recent ids to the table (sorted by hash: the inserts stay local)."""
        import numpy as np

        if not self._made:
            self._make()
        db, bloom = self._db, self._bloom
        assert db is not None and bloom is not None
        rows = sorted((self._hash(k), k, v) for k, v in self._recent.items())
        db.execute("BEGIN")
        db.executemany(f"INSERT INTO {self._table} VALUES (?, ?, ?)", rows)
        db.execute("COMMIT")
        hashes = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        idx = self._probes_many(hashes.view(np.uint64)).ravel()
        bits = np.left_shift(np.uint8(1), (idx & np.uint64(7)).astype(np.uint8))
        np.bitwise_or.at(bloom, idx >> np.uint64(3), bits)
        self._spilled += len(rows)
        self._recent = {}

    def _make(self) -> None:
        """This store's table (the shared file and filter opened first, if none has)."""
        if self._shared.db is None:
            self._shared.open()
        assert self._shared.db is not None
        self._shared.db.execute(
            f"CREATE TABLE {self._table} (h INTEGER, id TEXT, value TEXT, PRIMARY KEY (h, id)) "
            "WITHOUT ROWID"
        )
        self._made = True
