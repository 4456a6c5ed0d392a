"""Fixtures for the audit tests: a pre-filled HarmBench cache and a local raw-file server."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from raw_file_server import RawFileServer

from redjury.judges.config import DEFAULT_HARMBENCH_REVISION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))

from fault_server import FaultServer  # noqa: E402

# Not imported from tests/conftest.py: every conftest here is a module named `conftest`.
HARMBENCH_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "harmbench"
FILE_NAMES = ("text_behaviors_val_set.json", "harmbench_behaviors_text_all.csv")


@pytest.fixture
def harmbench_cache(tmp_path: Path) -> Path:
    """A calibration cache dir holding the pinned files, as a download would leave it."""
    cache = tmp_path / "calibration"
    root = cache / DEFAULT_HARMBENCH_REVISION
    root.mkdir(parents=True)
    for name in FILE_NAMES:
        shutil.copyfile(HARMBENCH_DATA / name, root / name)
    return cache


@pytest.fixture
def raw_server() -> Iterator[RawFileServer]:
    """Serves the pinned HarmBench files at /<revision>/<upstream path>."""
    from redjury.audit.datasets import BEHAVIOURS_PATH, VALIDATION_PATH

    files = {
        f"/{DEFAULT_HARMBENCH_REVISION}/{VALIDATION_PATH}": (
            HARMBENCH_DATA / FILE_NAMES[0]
        ).read_bytes(),
        f"/{DEFAULT_HARMBENCH_REVISION}/{BEHAVIOURS_PATH}": (
            HARMBENCH_DATA / FILE_NAMES[1]
        ).read_bytes(),
    }
    server = RawFileServer(files).start()
    yield server
    server.stop()


@pytest.fixture
def harmbench_data() -> Path:
    return HARMBENCH_DATA


@pytest.fixture
def judge_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv
