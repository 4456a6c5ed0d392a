"""Shared test helpers: writing attempt files and running the real `redjury` command.

A module with its own name (not `conftest`): several test folders have a conftest.py,
and `from redjury_testing import` would pick whichever was imported last."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"


def write_jsonl(path: Path, rows: Iterable[dict[str, Any] | str]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def rows_of(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(path) if r.get("entry_type") == kind]


def redjury(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real command-line program in a subprocess."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "redjury.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=full_env,
        timeout=600,
    )
