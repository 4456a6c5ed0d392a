"""What a report writer is: a file written from a finished run's report, named by the
`reporting` setting that asks for it (`html: true`, `junit: PATH`). Writers register in
`redjury.plugins.WRITERS`; a setting that names one only decides how results are shown,
so changing it never stops a rerun from resuming."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from redjury.report.digest import ReportData


class ReportWriter:
    """Writes one file from the run's report data; `write` returns the path written."""

    # The `reporting` key that asks for this file, and the writer's registry name.
    name: ClassVar[str] = ""
    # Failing outputs kept per probe × detector in the data it is given (0: none).
    hits: ClassVar[int] = 0
    # Whether the file lives in the run folder (the HTML report): a run judged in memory,
    # with no folder, skips such writers.
    needs_run_folder: ClassVar[bool] = False

    def write(self, data: ReportData, setting: Any) -> Path:
        """Write the file `setting` (the `reporting` value) asks for; the path written."""
        raise NotImplementedError
