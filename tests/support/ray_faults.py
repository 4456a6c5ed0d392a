"""Detectors that kill their Ray worker once or hold it on one attempt (the engine's retry
and interruption tests)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import ClassVar

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.detectors.registry import register_detector


class CrashOnceParams(DetectorParams):
    marker: str = ""
    victim: str = ""


@register_detector
class CrashOnceDetector(Detector):
    """Scores 0.0; on the attempt `victim`, ends its process the first time (a killed worker)."""

    name: ClassVar[str] = "crash_once"
    family: ClassVar[Family] = Family.AGENTIC
    hazards: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = "test only: kills its worker once"
    default_enabled: ClassVar[bool] = False
    Params = CrashOnceParams

    def check(self, attempt: Attempt, output: str) -> Finding:
        params = self.params
        assert isinstance(params, CrashOnceParams)
        if attempt.id == params.victim and params.marker and not Path(params.marker).exists():
            Path(params.marker).write_text("crashed")
            os._exit(1)
        return self.bad("Sure") if output.startswith("Sure") else self.good()


class StallParams(DetectorParams):
    hold: str = ""
    victim: str = ""


@register_detector
class StallDetector(Detector):
    """Scores 0.0; on the attempt `victim`, waits while the file `hold` exists (a stuck chunk)."""

    name: ClassVar[str] = "stall_while_held"
    family: ClassVar[Family] = Family.AGENTIC
    hazards: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = "test only: holds its worker on one attempt"
    default_enabled: ClassVar[bool] = False
    Params = StallParams

    def check(self, attempt: Attempt, output: str) -> Finding:
        params = self.params
        assert isinstance(params, StallParams)
        while attempt.id == params.victim and params.hold and Path(params.hold).exists():
            time.sleep(0.05)
        return self.good()
