"""Fixtures for the service tests: `redjury serve` processes stopped after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_process import ServeProcess


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """Start `redjury serve` (config dict, extra flags), wait until /health answers."""
    started: list[ServeProcess] = []

    def start(config: dict[str, Any] | None = None, *args: str, ready: bool = True) -> ServeProcess:
        proc = ServeProcess(tmp_path, config, list(args))
        started.append(proc)
        return proc.wait_ready() if ready else proc

    yield start
    for proc in started:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(timeout=60)
