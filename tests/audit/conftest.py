"""Fixtures for the audit tests: HarmBench-shaped synthetic data (always there), the real
validation set (skips without it), and a local raw-file server."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from raw_file_server import RawFileServer

from redjury.judges.config import DEFAULT_HARMBENCH_REVISION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))

from fault_server import FaultServer  # noqa: E402
from redjury_testing import HARMBENCH_FILES, harmbench_dir  # noqa: E402

#: The revision the small synthetic set is stored under: not pinned, so no checksum applies.
SYNTHETIC_REVISION = "synthetic"


@dataclass(frozen=True)
class SyntheticHarmBench:
    """What was put into the synthetic files, for the tests to check the join against."""

    validation: bytes
    behaviours: bytes
    records: int
    joined: int
    positives: int
    contextual: int
    missing_ids: list[str]
    revision: str = SYNTHETIC_REVISION


def synthetic_harmbench() -> SyntheticHarmBench:
    """A small validation set and behaviours CSV in HarmBench's shape: 8 behaviours (3 of them
    contextual) with 5 generations each, plus one behaviour id the CSV lacks."""
    import csv
    import io
    import json

    behaviours = io.StringIO()
    writer = csv.writer(behaviours, lineterminator="\n")
    writer.writerow(
        [
            "Behavior",
            "FunctionalCategory",
            "SemanticCategory",
            "Tags",
            "ContextString",
            "BehaviorID",
        ]
    )
    validation: dict[str, list[dict[str, object]]] = {}
    positives = contextual = 0
    for b in range(8):
        context = f"  Context passage {b}, quoted.  " if b < 3 else ""
        functional = "contextual" if context else "standard"
        writer.writerow([f"Do harmful thing {b}", functional, "misc", "", context, f"beh_{b}"])
        items = []
        for g in range(5):
            votes = [int((b + g + k) % 3 == 0) for k in range(3)] if b % 2 else [g % 2] * 3
            label = sum(votes) >= 2
            positives += label
            contextual += bool(context)
            items.append(
                {
                    "test_case": f"case {b}.{g}",
                    "generation": f"{'Sure, here is how' if label else 'Sorry, I cannot'} ({b}.{g})",
                    **{f"human_{k}": v for k, v in enumerate(votes)},
                    "cls": "Yes" if label else "No",
                    "llama_guard": "Yes" if label else "No",
                    "mixtral": "unsure",
                    "PAIR_gpt-4-0613": "Rating: [[10]]" if label else "Rating: [[1]]",
                    "advbench": int(label),
                }
            )
        validation[f"beh_{b}"] = items
    validation["beh_without_row"] = [
        {"test_case": "x", "generation": "y", "human_0": 1, "human_1": 1, "human_2": 1}
    ] * 2
    return SyntheticHarmBench(
        validation=json.dumps(validation, indent=2).encode(),
        behaviours=behaviours.getvalue().encode(),
        records=42,
        joined=40,
        positives=positives,
        contextual=contextual,
        missing_ids=["beh_without_row"],
    )


@pytest.fixture
def synthetic() -> SyntheticHarmBench:
    return synthetic_harmbench()


def fill_cache(cache: Path, revision: str, validation: bytes, behaviours: bytes) -> Path:
    root = cache / revision
    root.mkdir(parents=True, exist_ok=True)
    (root / HARMBENCH_FILES[0]).write_bytes(validation)
    (root / HARMBENCH_FILES[1]).write_bytes(behaviours)
    return cache


@pytest.fixture
def synthetic_cache(tmp_path: Path, synthetic: SyntheticHarmBench) -> Path:
    """A calibration cache dir holding the synthetic set under SYNTHETIC_REVISION."""
    return fill_cache(
        tmp_path / "calibration", SYNTHETIC_REVISION, synthetic.validation, synthetic.behaviours
    )


@pytest.fixture
def harmbench_data() -> Path:
    """The real pinned validation set (skips without it)."""
    return harmbench_dir()


@pytest.fixture
def harmbench_cache(tmp_path: Path, harmbench_data: Path) -> Path:
    """A calibration cache dir holding the real pinned files, as a download would leave it."""
    cache = tmp_path / "calibration"
    root = cache / DEFAULT_HARMBENCH_REVISION
    root.mkdir(parents=True)
    for name in HARMBENCH_FILES:
        shutil.copyfile(harmbench_data / name, root / name)
    return cache


@pytest.fixture
def raw_server(synthetic: SyntheticHarmBench) -> Iterator[RawFileServer]:
    """Serves the synthetic files at /<revision>/<upstream path>, for the synthetic and the
    pinned revision (where their checksums do not match)."""
    from redjury.audit.datasets import BEHAVIOURS_PATH, VALIDATION_PATH

    files = {}
    for revision in (SYNTHETIC_REVISION, DEFAULT_HARMBENCH_REVISION):
        files[f"/{revision}/{VALIDATION_PATH}"] = synthetic.validation
        files[f"/{revision}/{BEHAVIOURS_PATH}"] = synthetic.behaviours
    server = RawFileServer(files).start()
    yield server
    server.stop()


@pytest.fixture
def judge_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv
