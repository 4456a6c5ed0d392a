"""Masking secrets and found PII in everything redjury writes (last four characters kept)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redjury.detectors.base import mask

# Values shorter than this are not masked inside text: masking "a" everywhere would
# destroy the report and protect nothing.
MIN_SECRET_LENGTH = 4


class Redactor:
    """Replaces every occurrence of the given literal values inside strings of a JSON value.

    Plain `str.replace` per value, longest first: the sets are small (a few markers, the
    PII found in one attempt) and this beats compiling a regex per attempt.
    """

    __slots__ = ("values", "_masks")

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values: tuple[str, ...] = tuple(
            sorted({v for v in values if v and len(v) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        )
        self._masks = tuple(mask(v) for v in self.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def with_values(self, values: Iterable[str]) -> Redactor:
        extra = [v for v in values if v and len(v) >= MIN_SECRET_LENGTH and v not in self.values]
        if not extra:
            return self
        return Redactor([*self.values, *extra])

    def text(self, value: str) -> str:
        for secret, masked in zip(self.values, self._masks, strict=True):
            if secret in value:
                value = value.replace(secret, masked)
        return value

    def apply(self, value: Any) -> Any:
        """A copy of a JSON value with every string masked."""
        if not self.values:
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
