"""The detector registry: built-ins register with a decorator, third parties through the
`redjury.detectors` entry point group (R10)."""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points
from typing import TypeVar

from redjury.detectors.base import Detector

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

_REGISTRY: dict[str, type[Detector]] = {}
_loaded = False

D = TypeVar("D", bound=type[Detector])


def register_detector(cls: D) -> D:
    """Class decorator: make a detector available by its `name`."""
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"detector name {cls.name!r} is already registered by {existing!r}")
    _REGISTRY[cls.name] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            # A built-in module not written yet must not break the others.
            if exc.name != module:
                raise
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, Detector):
            register_detector(obj)


def detector_classes() -> dict[str, type[Detector]]:
    """Every registered detector class by name, sorted."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def get_detector_class(name: str) -> type[Detector]:
    classes = detector_classes()
    try:
        return classes[name]
    except KeyError:
        raise KeyError(f"unknown detector {name!r}; known: {', '.join(classes)}") from None
