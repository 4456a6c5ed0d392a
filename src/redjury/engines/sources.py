"""Inputs of a Ray run: the single-process files plus Parquet files or folders of them.

A Parquet row is an Attempt: one column per Attempt field (`id`, `probe`, `prompt`,
`outputs`, ...). Nested fields (`outputs`, `messages`, `context`, `usage`, `notes`,
`detector_results`) may be Parquet lists/structs/maps or JSON text; a null cell is a field
left out. Paths may be local or any URI pyarrow's filesystems read (`s3://`, `gs://`, ...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from redjury.formats.garak import GarakSetup
from redjury.formats.jsonl import redjury_record
from redjury.inputs import InputSet
from redjury.records import InputRecord, LineError

# Attempt fields that may come as JSON text in a Parquet column.
NESTED = ("outputs", "messages", "context", "usage", "notes", "detector_results")


def is_parquet(path: Path) -> bool:
    """A Parquet file, a folder (of Parquet files) or a URI (read by pyarrow)."""
    text = str(path)
    return text.endswith(".parquet") or "://" in text or path.is_dir()


def parquet_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A Parquet row as Attempt fields: nulls dropped, JSON text of nested fields decoded."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if key in NESTED and isinstance(value, str):
            # Text that is not JSON is left as it is: the Attempt validation names the field.
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(value)
        elif key in ("notes", "detector_results", "usage") and isinstance(value, list):
            value = dict(value)  # a Parquet map reads as (key, value) pairs
        out[key] = value
    return out


@dataclass
class ParquetSource:
    """Attempts from one Parquet file or folder; `line` is the row's place (1-based)."""

    path: str

    def records(self) -> Iterator[InputRecord]:
        import pyarrow.dataset as pads

        dataset = pads.dataset(self.path, format="parquet")
        index = 0
        for batch in dataset.to_batches():
            for row in batch.to_pylist():
                index += 1
                rec = redjury_record(self.path, index, parquet_fields(row))
                yield rec


@dataclass
class RaySources:
    """Every input of a Ray run read as one stream, in the order given."""

    paths: list[Path]

    def __post_init__(self) -> None:
        self._files = InputSet([p for p in self.paths if not is_parquet(p)])

    @property
    def garak_setup(self) -> dict[str, GarakSetup]:
        return self._files.garak_setup

    def records(self) -> Iterator[InputRecord]:
        for path in self.paths:
            if is_parquet(path):
                yield from ParquetSource(str(path)).records()
            else:
                yield from InputSet([path], self._files.scans).records()

    def prepare(self) -> None:
        self._files.prepare()

    def empty_reason(self) -> str:
        """Why the inputs hold no attempt at all (asked when they hold none)."""
        return (
            self._files.empty_reason()
            if self._files.paths
            else (f"{', '.join(map(str, self.paths))}: no attempts to judge (the input is empty)")
        )

    def missing(self) -> LineError | None:
        """The first local input that does not exist (URIs are left to pyarrow)."""
        for path in self.paths:
            if "://" not in str(path) and not path.exists():
                return LineError(str(path), 0, "(file)", "no such input file or folder")
        return None
