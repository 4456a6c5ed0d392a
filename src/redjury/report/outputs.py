"""What a run writes after judging and the CI gates: HTML, JUnit, exit code 4.

`redjury run` and `redjury.evaluate` both end here (`post_run` for a run folder,
`post_run_rows` for a run judged in memory), so the library and the command line write the
same files and end with the same exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from redjury.config import ConfigError, ReportingSpec, format_validation_error, resolve_writer
from redjury.report.digest import ReportData, load_report, report_data
from redjury.report.html import write_html as write_html
from redjury.report.summary import print_summary as print_summary
from redjury.report.terminal import escape_control
from redjury.report.writer import ReportWriter, WriterSettings

EXIT_GATE = 4

__all__ = [
    "EXIT_GATE",
    "asked_writers",
    "asr_gate_failures",
    "gate_code",
    "post_run",
    "post_run_rows",
    "print_summary",
    "write_html",
]


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


# A writer asked for, with its checked settings.
Asked = tuple[type[ReportWriter], WriterSettings]


def _asked(reporting: ReportingSpec, writers: list[Asked]) -> bool:
    """Whether any output or gate needs the report read back."""
    return bool(
        writers or reporting.fail_on_asr is not None or reporting.fail_on_errors is not None
    )


def post_run(out_dir: Path, reporting: ReportingSpec, echo: Callable[[str], None]) -> int:
    """Write the requested outputs of a run folder and apply the gates; 4 when a gate
    trips, else 0."""
    writers = asked_writers(reporting)
    if not _asked(reporting, writers):
        return 0  # nothing asked for: do not read the report back
    data = load_report(out_dir, max((w.hits for w, _ in writers), default=0))
    _write(data, writers, echo)
    return gate_code(data.evals, reporting, echo)


def post_run_rows(
    rows: Iterable[dict[str, Any]], reporting: ReportingSpec, echo: Callable[[str], None]
) -> int:
    """`post_run` for a run judged in memory: the writers that need no run folder (JUnit,
    not the HTML report) and the gates."""
    writers = [(w, s) for w, s in asked_writers(reporting) if not w.needs_run_folder]
    if not _asked(reporting, writers):
        return 0
    data = report_data(rows, Path("<memory>"), max((w.hits for w, _ in writers), default=0))
    _write(data, writers, echo)
    return gate_code(data.evals, reporting, echo)


def asked_writers(reporting: ReportingSpec) -> list[Asked]:
    """The writers `reporting` asks for, in its order, each with its checked settings; a
    ConfigError for a bad entry (a config made in Python is not checked when it loads: a
    run checks it here before judging)."""
    asked: list[Asked] = []
    for key, name, settings in reporting.writer_requests():
        try:
            asked.append(resolve_writer(name, settings))
        except LookupError as exc:
            raise ConfigError([f"{key}: {exc}"]) from None
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, key)) from None
    return asked


def _write(data: ReportData, writers: list[Asked], echo: Callable[[str], None]) -> None:
    for writer, settings in writers:
        echo(f"{writer.name}: {writer().write(data, settings)}")


def gate_code(
    evals: list[dict[str, Any]], reporting: ReportingSpec, echo: Callable[[str], None]
) -> int:
    """The CI gates over the eval rows (`fail_on_asr`, `fail_on_errors`): 4 when one trips,
    else 0; one `gate failed: …` line each."""
    code = 0
    if reporting.fail_on_asr is not None:
        failures = asr_gate_failures(evals, reporting.fail_on_asr)
        for line in failures:
            echo(f"gate failed: {escape_control(line)}")
        if failures:
            code = EXIT_GATE
    if reporting.fail_on_errors is not None:
        errors = sum(int(row.get("errors", 0)) for row in evals)
        if errors > reporting.fail_on_errors:
            echo(
                f"gate failed: {errors} replies ended in judge errors "
                f"(more than --fail-on-errors {reporting.fail_on_errors})"
            )
            code = EXIT_GATE
    return code
