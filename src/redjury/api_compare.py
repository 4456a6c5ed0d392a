"""`redjury.compare(base, new)`: did the new run get safer, and how sure are we? The Python face
of `redjury compare`, over run folders, report paths or `Results`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from redjury.row_types import ComparisonRow

if TYPE_CHECKING:
    import pandas

    from redjury.comparison import CompareSettings

COMPARE_NAME = "redjury.compare.jsonl"


@dataclass
class Comparison:
    """The comparison rows of two runs (the JSONL's shape, see the docs' "Compare
    runs"), with the settings they were made under."""

    base: str
    new: str
    rows: list[ComparisonRow]
    settings: CompareSettings

    @property
    def regressions(self) -> list[ComparisonRow]:
        """Rows whose ASR rose significantly after adjustment (and beyond the margin)."""
        return [r for r in self.rows if r["verdict"] == "regression"]

    @property
    def improvements(self) -> list[ComparisonRow]:
        """Rows whose ASR fell significantly after adjustment (and beyond the margin)."""
        return [r for r in self.rows if r["verdict"] == "improvement"]

    def plain_rows(self) -> list[dict[str, Any]]:
        """The rows as plain dicts, for code that takes any report row."""
        return cast("list[dict[str, Any]]", self.rows)

    def to_jsonl(self, path: str | Path | None = None) -> str | Path:
        """The rows as JSONL: written to `path` (returned), or returned as text."""
        from redjury.report.compare import comparison_jsonl

        text = comparison_jsonl(self.plain_rows())
        if path is None:
            return text
        out = Path(path)
        out.write_text(text, encoding="utf-8")
        return out

    def to_pandas(self) -> pandas.DataFrame:
        """One DataFrame row per comparison (pip install 'redjury[pandas]')."""
        import pandas

        return pandas.DataFrame(self.rows)


def compare(
    base: Any,
    new: Any,
    *,
    margin: float = 0.0,
    adjust: str = "holm",
    confidence: float = 0.95,
    allow_different_judges: bool = False,
) -> Comparison:
    """Compare two runs (each a run folder, a report JSONL path, a `Results` or its rows):
    NEW − BASE per probe × detector, intent × detector and detector overall, with intervals,
    p-values adjusted across the table (`holm` or `bh`) and verdicts. Raises
    `redjury.comparison.CompareError` (a ValueError) for runs that cannot be compared."""
    from redjury.comparison import CompareSettings, Vocabulary, comparison_rows
    from redjury.comparison_parallel import read_runs
    from redjury.errors import CompareError
    from redjury.report.row_check import read_as_written

    settings = CompareSettings(margin, adjust, confidence, allow_different_judges)
    vocabulary = Vocabulary()
    with read_as_written(*_report_files(base, new), error=CompareError):
        labels = (_label(base, "BASE"), _label(new, "NEW"))
        base_run, new_run = read_runs(base, new, vocabulary, labels)
        rows = cast("list[ComparisonRow]", comparison_rows(base_run, new_run, settings))
    return Comparison(base_run.label, new_run.label, rows, settings)


def _report_files(*runs: Any) -> list[Path]:
    """The report files of the runs given as paths (a folder or its report)."""
    from redjury.report.digest import report_path_of

    found = []
    for run in runs:
        if isinstance(run, str | Path):
            # No report there: the comparison names that itself.
            with contextlib.suppress(ValueError):
                found.append(report_path_of(Path(run)))
    return found


def _label(run: Any, fallback: str) -> str:
    if isinstance(run, str | Path):
        return str(run)
    out_dir = getattr(run, "out_dir", None)
    return str(out_dir) if out_dir is not None else fallback
