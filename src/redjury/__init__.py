"""redjury: judge what an LLM target said during red-team and quality runs.

The public API (everything else is private by convention):

- `evaluate` / `aevaluate`: judge attempts (objects, dicts or files) into `Results`;
- `detect` / `adetect`: score one reply inline; `judge_panel` builds a config's panel;
- `audit`: measure the judges against human labels;
- `write_html`, `print_summary`: the HTML report and the breakdowns of a run folder;
- `compare`: did a new run get safer than an earlier one (`Comparison`), and how sure are we;
- `Attempt`, `RunConfig`, `load_config`: the records and the configuration;
- `detectors`, `scoring_types`: the plugin registries, to list and register from code.
"""

__version__ = "0.1.0"

# The `audit` subpackage is imported first so that the `audit` function below keeps its
# name: a later `import redjury.audit.x` then finds the package loaded and leaves it be.
import redjury.audit as _audit_package  # noqa: E402, F401
from redjury import detectors, scoring_types  # noqa: E402
from redjury.api import (  # noqa: E402
    Detection,
    Detections,
    Results,
    adetect,
    aevaluate,
    detect,
    evaluate,
    judge_panel,
    print_summary,
    write_html,
)
from redjury.api import audit as audit  # noqa: E402
from redjury.api_compare import Comparison, compare  # noqa: E402
from redjury.attempts import Attempt, Turn, Usage  # noqa: E402
from redjury.config import ConfigError, RunConfig, load_config  # noqa: E402
from redjury.detectors.base import Detector, DetectorParams, Family, Finding, Verdict  # noqa: E402
from redjury.pipeline import RunError  # noqa: E402
from redjury.records import InputError

__all__ = [
    "Attempt",
    "Comparison",
    "ConfigError",
    "Detection",
    "Detections",
    "Detector",
    "DetectorParams",
    "Family",
    "Finding",
    "InputError",
    "Results",
    "RunConfig",
    "RunError",
    "Turn",
    "Usage",
    "Verdict",
    "__version__",
    "adetect",
    "aevaluate",
    "audit",
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
