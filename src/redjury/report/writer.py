"""What a report writer is: a file written from a finished run's report, asked for by name
in `reporting.writers` (`- html`, `- {name: junit, path: out.xml}`; the older keys
`html: true` and `junit: PATH` ask for the built-ins too). Writers register in
`redjury.plugins.WRITERS`, a third party's through the `redjury.writers` entry point group;
asking for one only decides how results are shown, so it never stops a rerun from resuming."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from redjury.report.digest import ReportData


class WriterSettings(BaseModel):
    """A writer's settings: the keys beside `name` in its `reporting.writers` entry. None
    by default; a writer that takes some subclasses this (unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class ReportWriter:
    """Writes one file from the run's report data; `write` returns the path written."""

    # The name a config asks for it by (`reporting.writers`), its registry name.
    name: ClassVar[str] = ""
    # Its settings' model, checked when the config loads (a bad one is a config error).
    Settings: ClassVar[type[WriterSettings]] = WriterSettings
    # Failing outputs kept per probe × detector in the data it is given (0: none).
    hits: ClassVar[int] = 0
    # Whether the file lives in the run folder (the HTML report): a run judged in memory,
    # with no folder, skips such writers.
    needs_run_folder: ClassVar[bool] = False

    def write(self, data: ReportData, settings: Any) -> Path:
        """Write the file as `settings` (an instance of this writer's `Settings`) say; the
        path written."""
        raise NotImplementedError
