"""What every detector is: a registered class that scores each output of an attempt (R2, R10)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from redjury.attempts import Attempt


class Family(enum.StrEnum):
    DETERMINISTIC = "deterministic"
    HEURISTIC = "heuristic"
    AGENTIC = "agentic"


class Verdict(enum.StrEnum):
    HELD = "HELD"
    BROKE_THROUGH = "BROKE_THROUGH"
    PASSED = "PASSED"
    FAILED = "FAILED"
    INCONCLUSIVE = "INCONCLUSIVE"


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector's judgement of one output.

    score: 1.0 = the attack succeeded / the check failed, 0.0 = held / passed, None = could
    not judge (then `reason` says why). `evidence` is already redacted and may be written.
    `sensitive` holds the raw values found (PII, markers) so writers can mask them in the
    outputs they store; it is never written itself. `details` is free-form, JSON-safe data a
    detector wants in the report (e.g. a judge panel's votes).
    """

    score: float | None
    verdict: Verdict
    evidence: tuple[str, ...] = ()
    reason: str | None = None
    sensitive: tuple[str, ...] = ()
    details: dict[str, Any] | None = field(default=None)


def mask(value: str) -> str:
    """Redact a sensitive value to its last four characters."""
    return "****" + value[-4:] if len(value) > 4 else "****"


class DetectorParams(BaseModel):
    """Settings of a detector in the config's `detectors` list; unknown keys are errors,
    and numbers are finite (a NaN budget would never trip)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


class Detector:
    """Base class. Subclasses set the class attributes and implement `check` (one output)
    or override `detect` (a whole attempt) or `adetect` (async, e.g. judges)."""

    name: ClassVar[str]
    family: ClassVar[Family]
    hazards: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    # Quality checks say PASSED/FAILED; red-team checks say HELD/BROKE_THROUGH.
    quality: ClassVar[bool] = False
    # True when the detector runs with no settings, so it is on by default without a config.
    default_enabled: ClassVar[bool] = True
    Params: ClassVar[type[DetectorParams]] = DetectorParams

    def __init__(self, params: DetectorParams | None = None) -> None:
        self.params = params if params is not None else self.Params()

    @classmethod
    def preflight(cls, params: DetectorParams) -> None:
        """Check what the settings name (files, imports) when the config loads, before
        anything is judged; raise ValueError naming the problem. Default: nothing to check."""

    # -- verdict helpers: score and label always agree ------------------------------
    def bad(self, *evidence: str, sensitive: Iterable[str] = (), **details: Any) -> Finding:
        """A finding that the attack succeeded (or the quality check failed): score 1.0."""
        return Finding(
            1.0,
            Verdict.FAILED if self.quality else Verdict.BROKE_THROUGH,
            tuple(evidence),
            None,
            tuple(sensitive),
            details or None,
        )

    def good(self, *evidence: str, sensitive: Iterable[str] = (), **details: Any) -> Finding:
        """A finding that the target held (or the quality check passed): score 0.0."""
        return Finding(
            0.0,
            Verdict.PASSED if self.quality else Verdict.HELD,
            tuple(evidence),
            None,
            tuple(sensitive),
            details or None,
        )

    def inconclusive(
        self, reason: str, *evidence: str, sensitive: Iterable[str] = (), **details: Any
    ) -> Finding:
        """A finding that this output could not be judged (score None), with the reason."""
        return Finding(
            None, Verdict.INCONCLUSIVE, tuple(evidence), reason, tuple(sensitive), details or None
        )

    # -- scoring ---------------------------------------------------------------------
    def check(self, attempt: Attempt, output: str) -> Finding:
        """Judge one non-null output."""
        raise NotImplementedError

    def detect(self, attempt: Attempt) -> list[Finding]:
        """One finding per output; a null output cannot be judged."""
        return [
            self.inconclusive("no output") if out is None else self.check(attempt, out)
            for out in attempt.outputs
        ]

    async def adetect(self, attempt: Attempt) -> list[Finding]:
        """One finding per output, awaiting what must be awaited (judges override this)."""
        return self.detect(attempt)

    def secrets(self) -> Iterable[str]:
        """Configured values that must never appear in any written file."""
        return ()

    def flush_cache(self) -> None:
        """Commit cached verdicts to disk (detectors with a judge cache); the detector stays
        usable."""

    async def aclose(self) -> None:
        """Release resources (HTTP clients) at the end of a run."""
