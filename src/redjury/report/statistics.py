"""The statistics an eval row carries beyond garak's counts: intervals, hit@k, ratings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redjury.config import ReportingSpec
from redjury.evaluators import DetectorTally


def eval_statistics(
    reporting: ReportingSpec, seed: int
) -> Callable[[str, str, DetectorTally], dict[str, Any]]:
    """A function giving the extra eval-row fields for one probe × detector."""

    def fields(probe: str, detector: str, tally: DetectorTally) -> dict[str, Any]:
        return {}

    return fields
