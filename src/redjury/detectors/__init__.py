"""Deterministic and heuristic detectors, one module each, and their registry.

`redjury.detectors.available()` lists them; `@redjury.detectors.register` adds one from code
(third parties can also use the `redjury.detectors` entry point group).
"""

from __future__ import annotations

from typing import TypeVar

from redjury.detectors.base import Detector

D = TypeVar("D", bound=type[Detector])


def available() -> dict[str, type[Detector]]:
    """Every registered detector class by name (built-ins, entry points, code), sorted."""
    from redjury.detectors.registry import detector_classes

    return detector_classes()


def register(cls: D) -> D:
    """Class decorator: make a Detector subclass available by its `name`."""
    from redjury.detectors.registry import register_detector

    return register_detector(cls)


def get(name: str) -> type[Detector]:
    """The detector class registered under `name` (KeyError-like ValueError if unknown)."""
    from redjury.detectors.registry import get_detector_class

    return get_detector_class(name)
