"""Fixtures for the judge tests: the scripted fault server and panels pointed at it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))

from fault_server import FaultServer  # noqa: E402
from judge_specs import judge  # noqa: E402, F401  (re-exported for older imports)

from redjury.judges.config import EvaluationSpec  # noqa: E402
from redjury.judges.panel import JudgePanelDetector  # noqa: E402


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


@pytest.fixture
def second_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


@pytest.fixture
def make_panel(tmp_path: Path) -> Iterator[Any]:
    """Build panels with a per-test cache file and fast retries; closes them after the test."""
    made: list[JudgePanelDetector] = []

    def build(
        judges: list[dict[str, Any]],
        *,
        use_cache: bool = True,
        cache: Path | None = None,
        **settings: Any,
    ) -> JudgePanelDetector:
        spec = EvaluationSpec.model_validate(
            {"judges": judges, "retry_base_delay": 0.01, "max_retries": 2, **settings}
        )
        panel = JudgePanelDetector.from_spec(
            spec, cache_path=cache or tmp_path / "judges.sqlite", use_cache=use_cache
        )
        made.append(panel)
        return panel

    yield build
    for panel in made:
        panel.close()
