"""redjury: judge what an LLM target said during red-team and quality runs.

The public API (everything else is private by convention):

- `evaluate` / `aevaluate`: judge attempts (objects, dicts or files) into `Results`;
- `detect` / `adetect`: score one reply inline; `judge_panel` builds a config's panel;
- `audit_judges`: measure the judges against human labels (`redjury.audit` is the
  subpackage that does it);
- `write_html`, `print_summary`: the HTML report and the breakdowns of a run folder;
- `compare`: did a new run get safer than an earlier one (`Comparison`), and how sure are we;
- `RunOptions`: how a run goes (cache, preflight, engine, workers, ...), for `evaluate`;
- `Attempt`, `RunConfig`, `load_config`: the records and the configuration;
- `AttemptRow`, `EvalRow`, `HitlogRow`, ...: the rows `Results` returns, as TypedDicts;
- `detectors`, `scoring_types`: the plugin registries, to list and register from code;
- `RedjuryError`: the base of every error redjury raises, and the specific ones.
"""

from redjury import detectors, scoring_types
from redjury.api import (
    Detection,
    Detections,
    Results,
    adetect,
    aevaluate,
    audit_judges,
    detect,
    evaluate,
    judge_panel,
    print_summary,
    write_html,
)
from redjury.api_compare import Comparison, compare
from redjury.attempts import Attempt, Turn, Usage
from redjury.config import ConfigError, RunConfig, load_config
from redjury.detectors.base import Detector, DetectorParams, Family, Finding, Verdict
from redjury.errors import AuditError, CompareError, RedjuryError, RunError
from redjury.pipeline import RunInterrupted, RunOptions
from redjury.records import InputError
from redjury.row_types import (
    AttemptRow,
    ComparisonRow,
    CompletionRow,
    EvalRow,
    HitlogRow,
    InitRow,
    InputErrorRow,
    ProbeSummaryRow,
)
from redjury.version import __version__

__all__ = [
    "Attempt",
    "AttemptRow",
    "AuditError",
    "CompareError",
    "Comparison",
    "ComparisonRow",
    "CompletionRow",
    "ConfigError",
    "Detection",
    "Detections",
    "Detector",
    "DetectorParams",
    "EvalRow",
    "Family",
    "Finding",
    "HitlogRow",
    "InitRow",
    "InputError",
    "InputErrorRow",
    "ProbeSummaryRow",
    "RedjuryError",
    "Results",
    "RunConfig",
    "RunError",
    "RunInterrupted",
    "RunOptions",
    "Turn",
    "Usage",
    "Verdict",
    "__version__",
    "adetect",
    "aevaluate",
    "audit_judges",
    "compare",
    "detect",
    "detectors",
    "evaluate",
    "judge_panel",
    "load_config",
    "print_summary",
    "scoring_types",
    "write_html",
]
