"""Masking secrets and found PII in everything redjury writes (last four characters kept)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from redjury.detectors.base import mask

# Values shorter than this are not masked inside text: masking "a" everywhere would
# destroy the report and protect nothing.
MIN_SECRET_LENGTH = 4


class Redactor:
    """Replaces every occurrence of the given literal values inside strings of a JSON value."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = sorted(
            {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}, key=len, reverse=True
        )
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in self.values)) if self.values else None
        )

    def __bool__(self) -> bool:
        return self._pattern is not None

    def with_values(self, values: Iterable[str]) -> Redactor:
        extra = [v for v in values if v and len(v) >= MIN_SECRET_LENGTH]
        if not extra:
            return self
        return Redactor([*self.values, *extra])

    def text(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(lambda m: mask(m.group(0)), value)

    def apply(self, value: Any) -> Any:
        """A copy of a JSON value with every string masked."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                self.text(k) if isinstance(k, str) else k: self.apply(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.apply(v) for v in value]
        return value
