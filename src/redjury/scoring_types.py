"""The registry of judge scoring types (a prompt template plus an answer parser each).

`available()` lists them; `@register` adds one from code (third parties can also use the
`redjury.scoring_types` entry point group).
"""

from __future__ import annotations

from typing import TypeVar

from redjury.judges.scoring.base import (
    ScoringType,
    get_scoring_type,
    register_scoring_type,
    scoring_types,
)

S = TypeVar("S", bound=type[ScoringType])


def available() -> dict[str, type[ScoringType]]:
    """Every registered scoring type by name, sorted."""
    return scoring_types()


def register(cls: S) -> S:
    """Class decorator: make a ScoringType subclass available by its `name`."""
    return register_scoring_type(cls)


def get(name: str) -> type[ScoringType]:
    """The scoring type registered under `name`."""
    return get_scoring_type(name)


__all__ = ["ScoringType", "available", "get", "register"]
