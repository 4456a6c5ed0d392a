"""Named plugin registries: built-ins register with a decorator, third parties through a
Python entry point group, loaded once on first use."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T", bound=type[Any])
C = TypeVar("C", bound=type[Any])


class Registry(Generic[T]):
    """Classes of one kind (detectors, scoring types) by their `name` attribute."""

    def __init__(
        self, kind: str, base: type[Any], builtin_modules: Sequence[str], group: str
    ) -> None:
        self.kind = kind
        self.base = base
        self.builtin_modules = builtin_modules
        self.group = group
        self._classes: dict[str, T] = {}
        self._loaded = False

    def register(self, cls: C) -> C:
        """Class decorator: make `cls` available by its `name`."""
        existing = self._classes.get(cls.name)
        if existing is not None and existing is not cls:
            raise ValueError(f"{self.kind} name {cls.name!r} is already registered by {existing!r}")
        self._classes[cls.name] = cls  # type: ignore[assignment]
        return cls

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self.builtin_modules:
            try:
                import_module(module)
            except ModuleNotFoundError as exc:
                # A missing optional built-in must not take the others down with it.
                if exc.name != module:
                    raise
        for ep in entry_points(group=self.group):
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, self.base):
                self.register(obj)

    def classes(self) -> dict[str, T]:
        """Every registered class by name, sorted."""
        self._load()
        return dict(sorted(self._classes.items()))

    def get(self, name: str) -> T:
        classes = self.classes()
        try:
            return classes[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(classes)}") from None
