"""Named plugin registries: built-ins register with a decorator, third parties through a
Python entry point group. A built-in asked for by name imports only its own module (a run
that names its detectors imports nothing else: no HTTP client, no JSON Schema library);
listing, an unknown name or a third-party name loads everything once, under a lock (the
first calls may come from several threads at once)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T", bound=type[Any])
C = TypeVar("C", bound=type[Any])


class Registry(Generic[T]):
    """Classes of one kind (detectors, scoring types) by their `name` attribute."""

    def __init__(
        self,
        kind: str,
        base: type[Any],
        builtin_modules: Sequence[str],
        group: str,
        builtin_names: Mapping[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.base = base
        self.builtin_modules = builtin_modules
        self.group = group
        # Built-in name → the module whose import registers it.
        self.builtin_names = dict(builtin_names or {})
        self._classes: dict[str, T] = {}
        self._loaded = False
        # Held while loading: another thread must not see `_loaded` before the classes.
        # Reentrant: a module being imported may itself look a class up.
        self._lock = threading.RLock()

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
        with self._lock:
            if self._loaded:
                return
            for module in self.builtin_modules:
                try:
                    import_module(module)
                except ModuleNotFoundError as exc:
                    # A missing optional built-in must not take the others down with it.
                    if exc.name != module:
                        raise
            self.load_plugins()
            # Set last: a thread that sees it finds every class registered.
            self._loaded = True

    def load_plugins(self) -> None:
        """Import the entry point group's classes (third parties), no other built-in."""
        with self._lock:
            for ep in entry_points(group=self.group):
                obj = ep.load()
                if isinstance(obj, type) and issubclass(obj, self.base):
                    self.register(obj)

    def registered(self) -> dict[str, T]:
        """The classes registered so far by name, sorted (no module imported)."""
        return dict(sorted(self._classes.items()))

    def classes(self) -> dict[str, T]:
        """Every registered class by name, sorted."""
        self._load()
        return dict(sorted(self._classes.items()))

    def find(self, name: str) -> T | None:
        """The class registered as `name`, importing as little as possible; None if unknown."""
        cls = self._classes.get(name)
        module = self.builtin_names.get(name)
        if cls is None and module is not None and not self._loaded:
            with self._lock:
                import_module(module)
            cls = self._classes.get(name)
        if cls is None and not self._loaded:
            self._load()
            cls = self._classes.get(name)
        return cls

    def get(self, name: str) -> T:
        cls = self.find(name)
        if cls is not None:
            return cls
        classes = self.classes()
        try:
            return classes[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(classes)}") from None
