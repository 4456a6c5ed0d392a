"""Every extension point's registry, in one bottom module: detectors, scoring types, input
formats, judge providers, report writers and engines.

Built-ins register themselves when their module is imported, and each registry holds a
table of built-in name → module, so asking for one name imports only its module (a run that
names its detectors imports no HTTP client, no JSON Schema library). Third-party packages
add plugins through a Python entry point group (`redjury.detectors`, `redjury.formats`, …).
Listing, an unknown name or a third-party name loads everything once, under a lock (the
first calls may come from several threads at once). The registries sit below the config
and the implementations: config validation looks a name up here without importing what
implements it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")
C = TypeVar("C")

_read_lock = threading.Lock()
_installed: dict[str, tuple[EntryPoint, ...]] | None = None


def group_entry_points(group: str, *, again: bool = False) -> tuple[EntryPoint, ...]:
    """One entry point group of the installed distributions. Their metadata are read once
    per process for every group together: one read opens every distribution's metadata
    (about 35 ms with 170 installed, whatever the group), and a run asks for several groups.
    `again` reads them anew, for packages installed since."""
    global _installed
    with _read_lock:
        if _installed is None or again:
            every = entry_points()
            _installed = {name: tuple(every.select(group=name)) for name in every.groups}
        return _installed.get(group, ())


class Registry(Generic[T]):
    """Plugins of one kind by name. `base` ("module:Class") is what a plugin must be, a
    subclass or an instance of; it is imported only when an entry point is checked against
    it. A plugin's name is its `key` attribute (`name` unless said otherwise)."""

    def __init__(
        self,
        kind: str,
        base: str,
        group: str,
        builtin_names: Mapping[str, str],
        *,
        key: str = "name",
    ) -> None:
        self.kind = kind
        self.base = base
        self.group = group
        # Built-in name → the module whose import registers it, in the order they are tried
        # where order matters (format recognition: the most distinctive first).
        self.builtin_names = dict(builtin_names)
        self.key = key
        self._plugins: dict[str, T] = {}
        self._loaded = False
        self._scanned = False  # the entry point group was read (once per process)
        self._entry_names: frozenset[str] | None = None  # its names, read once too
        # Held while loading: another thread must not see `_loaded` before the plugins.
        # Reentrant: a module being imported may itself look a plugin up.
        self._lock = threading.RLock()

    @property
    def builtin_modules(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.builtin_names.values()))

    def register(self, plugin: C) -> C:
        """Decorator (or call): make `plugin` available by its name."""
        name = getattr(plugin, self.key)
        existing = self._plugins.get(name)
        if existing is not None and existing is not plugin:
            raise ValueError(f"{self.kind} name {name!r} is already registered by {existing!r}")
        self._plugins[name] = plugin  # type: ignore[assignment]
        return plugin

    def _base(self) -> type[Any]:
        module, _, attr = self.base.partition(":")
        base: type[Any] = getattr(import_module(module), attr)
        return base

    def _accepts(self, obj: Any) -> bool:
        base = self._base()
        return (isinstance(obj, type) and issubclass(obj, base)) or isinstance(obj, base)

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

    def load_plugins(self, *, again: bool = False) -> None:
        """Import the entry point group's classes (third parties), no other built-in. The
        group is read once per process (reading it opens every installed distribution's
        metadata: milliseconds, too much for each inline `redjury.detect`); `again` reads
        the installed packages anew, for those installed since."""
        with self._lock:
            if self._scanned and not again:
                return
            self._entry_names = None
            for ep in group_entry_points(self.group, again=again):
                obj = ep.load()
                if self._accepts(obj):
                    self.register(obj)
            self._scanned = True

    def registered(self) -> dict[str, T]:
        """The classes registered so far by name, sorted (no module imported)."""
        return dict(sorted(self._plugins.items()))

    def plugins(self) -> dict[str, T]:
        """Every registered plugin by name, sorted."""
        self._load()
        return dict(sorted(self._plugins.items()))

    # Detectors and scoring types are classes; the older name stays the usual one there.
    classes = plugins

    def ordered(self) -> list[T]:
        """Every plugin: the built-ins in their table's order, then the others by name."""
        self._load()
        first = [self._plugins[n] for n in self.builtin_names if n in self._plugins]
        rest = [p for n, p in sorted(self._plugins.items()) if n not in self.builtin_names]
        return first + rest

    def names(self) -> list[str]:
        """Every plugin's name without importing any: the built-in table's in its order, then
        what is registered already and the entry points' names, sorted."""
        if self._entry_names is None:
            self._entry_names = frozenset(ep.name for ep in group_entry_points(self.group))
        others = set(self._plugins) | self._entry_names
        return list(self.builtin_names) + sorted(others - set(self.builtin_names))

    def find(self, name: str) -> T | None:
        """The plugin registered as `name`, importing as little as possible; None if unknown."""
        plugin = self._plugins.get(name)
        module = self.builtin_names.get(name)
        if plugin is None and module is not None and not self._loaded:
            with self._lock:
                import_module(module)
            plugin = self._plugins.get(name)
        if plugin is None and not self._loaded:
            self._load()
            plugin = self._plugins.get(name)
        return plugin

    def get(self, name: str) -> T:
        plugin = self.find(name)
        if plugin is not None:
            return plugin
        known = self.plugins()
        try:
            return known[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(known)}") from None


DETECTORS: Registry[type[Any]] = Registry(
    "detector",
    "redjury.detectors.base:Detector",
    "redjury.detectors",
    {
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
    },
)

SCORING_TYPES: Registry[type[Any]] = Registry(
    "scoring type",
    "redjury.judges.scoring.base:ScoringType",
    # The group's name predates the others'; kept so published plugins keep working.
    "redjury.scoring_types",
    {
        "harmbench": "redjury.judges.scoring.harmbench",
        "scorer": "redjury.judges.scoring.scorer",
        "harmbench_variant": "redjury.judges.scoring.harmbench_variant",
        "jailbreakbench": "redjury.judges.scoring.jailbreakbench",
        "nuanced": "redjury.judges.scoring.nuanced",
        "on_topic": "redjury.judges.scoring.on_topic",
        "rag_outcome": "redjury.judges.scoring.rag_outcome",
        "strongreject": "redjury.judges.scoring.strongreject",
        "llamaguard": "redjury.judges.scoring.llamaguard",
    },
)

# Input formats recognised from their content. Order is recognition order: an Azure scan or a
# PyRIT file never carries inspect's `eval`. The JSONL formats come last: a file that no
# document format claims is garak's when its first JSON object has `entry_type`, else
# redjury's (the default).
FORMATS: Registry[Any] = Registry(
    "input format",
    "redjury.formats.base:DocumentFormat",
    "redjury.formats",
    {
        "azure_red_team": "redjury.formats.azure",
        "pyrit_attacks": "redjury.formats.pyrit",
        "pyrit_memory": "redjury.formats.pyrit",
        "inspect_ai": "redjury.formats.inspect_ai",
        "promptfoo": "redjury.formats.promptfoo",
        "garak": "redjury.formats.garak",
        "redjury": "redjury.formats.jsonl",
    },
)

# Judge providers (chat endpoints) by connection type, the `connection.type` a config names.
PROVIDERS: Registry[type[Any]] = Registry(
    "judge provider",
    "redjury.judges.providers:Provider",
    "redjury.providers",
    {
        "OPENAI": "redjury.judges.providers",
        "OLLAMA": "redjury.judges.providers",
        "AZURE_OPENAI": "redjury.judges.providers",
        "ANTHROPIC": "redjury.judges.providers",
        # An optional extra, slow to import: loaded only when a config names it.
        "LITELLM": "redjury.judges.litellm_provider",
    },
    key="connection_type",
)


# Files written from a finished run's report, each named by the `reporting` key asking for it.
WRITERS: Registry[type[Any]] = Registry(
    "report writer",
    "redjury.report.writer:ReportWriter",
    "redjury.writers",
    {"html": "redjury.report.html", "junit": "redjury.report.junit"},
)

# Where a run happens (`RunOptions.engine`): this machine, or a Ray cluster.
ENGINES: Registry[Any] = Registry(
    "engine",
    "redjury.engines.base:Engine",
    "redjury.engines",
    {"local": "redjury.engines.local", "ray": "redjury.engines.ray_engine"},
)
