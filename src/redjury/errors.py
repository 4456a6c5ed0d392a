"""The base of every error redjury raises on purpose, so that a caller can catch them all."""

from __future__ import annotations


class RedjuryError(Exception):
    """Raised by redjury for a problem it found and names (bad config, bad input, a failed
    run, an audit that cannot run); each subclass keeps its other base (ValueError, …)."""


class RunError(RedjuryError):
    """A run that cannot go on; `exit_code` says how the CLI should end."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class AuditError(RedjuryError):
    """An audit that cannot run (no judges, unknown wrapper, bad dataset)."""


class CompareError(RedjuryError, ValueError):
    """Runs that cannot be compared (unreadable, or judged differently): exit 2."""
