"""The detector registry: built-ins register with a decorator, third parties through the
`redjury.detectors` entry point group (R10)."""

from __future__ import annotations

from typing import TypeVar

from redjury.detectors.base import Detector
from redjury.plugins import Registry

ENTRY_POINT_GROUP = "redjury.detectors"
# Modules whose import registers the built-in detectors.
BUILTIN_MODULES = (
    "redjury.detectors.pii",
    "redjury.detectors.secrets",
    "redjury.detectors.injection",
    "redjury.detectors.refusal",
    "redjury.detectors.jailbreak",
    "redjury.detectors.guardrail",
    "redjury.detectors.budgets",
    "redjury.detectors.schema",
    "redjury.judges.panel",
    "redjury.judges.agentic",
)

# Built-in detector names and their modules, so a run imports only the detectors it names
# (a test checks this table against what the modules register).
BUILTIN_NAMES = {
    "pii_leak": "redjury.detectors.pii",
    "secret_exfiltration": "redjury.detectors.secrets",
    "prompt_injection": "redjury.detectors.injection",
    "refusal_consistency": "redjury.detectors.refusal",
    "jailbreak_heuristic": "redjury.detectors.jailbreak",
    "guardrail": "redjury.detectors.guardrail",
    "latency": "redjury.detectors.budgets",
    "cost": "redjury.detectors.budgets",
    "schema": "redjury.detectors.schema",
    "judge_panel": "redjury.judges.panel",
    "toxicity": "redjury.judges.agentic",
    "correctness": "redjury.judges.agentic",
    "summarization": "redjury.judges.agentic",
    "faithfulness": "redjury.judges.agentic",
    "hallucination": "redjury.judges.agentic",
}

# The built-ins a config without a `detectors` key runs (those with `default_enabled`; a
# test checks this against the classes).
DEFAULT_BUILTINS = ("jailbreak_heuristic", "pii_leak", "prompt_injection", "refusal_consistency")

_DETECTORS: Registry[type[Detector]] = Registry(
    "detector", Detector, BUILTIN_MODULES, ENTRY_POINT_GROUP, BUILTIN_NAMES
)
D = TypeVar("D", bound=type[Detector])


def register_detector(cls: D) -> D:
    """Class decorator: make a detector available by its `name`."""
    return _DETECTORS.register(cls)


def detector_classes() -> dict[str, type[Detector]]:
    """Every registered detector class by name, sorted."""
    return _DETECTORS.classes()


def get_detector_class(name: str) -> type[Detector]:
    return _DETECTORS.get(name)


def find_detector_class(name: str) -> type[Detector] | None:
    """The detector class called `name`, importing only its module when it is a built-in;
    None when no detector has that name."""
    return _DETECTORS.find(name)


def default_detector_classes() -> list[type[Detector]]:
    """The detectors a config without a `detectors` key runs, sorted by name: the built-ins
    of `DEFAULT_BUILTINS` and any plugin detector enabled by default. Imports those
    built-ins' modules and the plugins only (no judge, so no HTTP client)."""
    for name in DEFAULT_BUILTINS:
        _DETECTORS.get(name)
    _DETECTORS.load_plugins()
    return [cls for cls in _DETECTORS.registered().values() if cls.default_enabled]
