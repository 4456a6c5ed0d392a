"""What `redjury run` does after judging: HTML, JUnit and the CI gates (exit code 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from redjury.config import ReportingSpec
from redjury.plugins import WRITERS
from redjury.report.digest import load_report
from redjury.report.html import write_html as write_html
from redjury.report.summary import print_summary as print_summary
from redjury.report.terminal import escape_control

EXIT_GATE = 4

__all__ = ["EXIT_GATE", "asr_gate_failures", "post_run", "print_summary", "write_html"]


def _rate_for(detector: str, limit: float | dict[str, float]) -> float | None:
    if isinstance(limit, dict):
        # A detector missing from the map is not gated unless "*" gives a default.
        return limit.get(detector, limit.get("*"))
    return limit


def asr_gate_failures(evals: list[dict[str, Any]], limit: float | dict[str, float]) -> list[str]:
    """One line per probe × detector whose attack-success rate exceeds its limit."""
    failures = []
    for row in evals:
        n, fails = row.get("total_evaluated", 0), row.get("fails", 0)
        rate_limit = _rate_for(str(row.get("detector")), limit)
        if not n or rate_limit is None:
            continue
        # fails / n > limit, compared without division so a rate exactly at the limit passes.
        if fails > rate_limit * n:
            failures.append(
                f"{row.get('probe')} × {row.get('detector')}: attack-success rate "
                f"{fails / n:.2%} ({fails}/{n}) exceeds {rate_limit:.2%}"
            )
    return failures


def post_run(out_dir: Path, reporting: ReportingSpec, echo: Callable[[str], None]) -> int:
    """Write the requested outputs and apply the gates; return 4 when a gate trips, else 0."""
    writers = [w for w in WRITERS.ordered() if getattr(reporting, w.name, None)]
    wanted = writers or reporting.fail_on_asr is not None
    if not wanted and reporting.fail_on_errors is None:
        return 0  # nothing asked for: do not read the report back
    data = load_report(out_dir, max((w.hits for w in writers), default=0))
    for writer in writers:
        echo(f"{writer.name}: {writer().write(data, getattr(reporting, writer.name))}")
    code = 0
    if reporting.fail_on_asr is not None:
        failures = asr_gate_failures(data.evals, reporting.fail_on_asr)
        for line in failures:
            echo(f"gate failed: {escape_control(line)}")
        if failures:
            code = EXIT_GATE
    if reporting.fail_on_errors is not None:
        errors = sum(int(row.get("errors", 0)) for row in data.evals)
        if errors > reporting.fail_on_errors:
            echo(
                f"gate failed: {errors} replies ended in judge errors "
                f"(more than --fail-on-errors {reporting.fail_on_errors})"
            )
            code = EXIT_GATE
    return code
