"""The detector registry (`redjury.plugins.DETECTORS`), as the detectors use it: built-ins
register with `@register_detector`, third parties through the `redjury.detectors` entry
point group (R10)."""

from __future__ import annotations

from typing import TypeVar

from redjury.detectors.base import Detector
from redjury.plugins import DETECTORS

ENTRY_POINT_GROUP = DETECTORS.group
# Built-in detector names and their modules, so a run imports only the detectors it names
# (a test checks this table against what the modules register).
BUILTIN_NAMES = DETECTORS.builtin_names
# Modules whose import registers the built-in detectors.
BUILTIN_MODULES = DETECTORS.builtin_modules

# The built-ins a config without a `detectors` key runs (those with `default_enabled`; a
# test checks this against the classes).
DEFAULT_BUILTINS = ("jailbreak_heuristic", "pii_leak", "prompt_injection", "refusal_consistency")
D = TypeVar("D", bound=type[Detector])


def register_detector(cls: D) -> D:
    """Class decorator: make a detector available by its `name`."""
    return DETECTORS.register(cls)


def detector_classes() -> dict[str, type[Detector]]:
    """Every registered detector class by name, sorted."""
    return DETECTORS.classes()


def get_detector_class(name: str) -> type[Detector]:
    return DETECTORS.get(name)


def find_detector_class(name: str) -> type[Detector] | None:
    """The detector class called `name`, importing only its module when it is a built-in;
    None when no detector has that name."""
    return DETECTORS.find(name)


def default_detector_classes() -> list[type[Detector]]:
    """The detectors a config without a `detectors` key runs, sorted by name: the built-ins
    of `DEFAULT_BUILTINS` and any plugin detector enabled by default. Imports those
    built-ins' modules and the plugins only (no judge, so no HTTP client)."""
    for name in DEFAULT_BUILTINS:
        DETECTORS.find(name)
    DETECTORS.load_plugins()
    return [cls for cls in DETECTORS.registered().values() if cls.default_enabled]
