"""Every extension point is one registry of `redjury.plugins`: each built-in in its table
loads by name and says what it is, the table matches what the modules register, and a
third-party package adds a plugin through its entry point group without editing redjury."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from redjury import plugins
from redjury.plugins import Registry

REGISTRIES = {
    "detectors": plugins.DETECTORS,
    "scoring types": plugins.SCORING_TYPES,
    "input formats": plugins.FORMATS,
    "judge providers": plugins.PROVIDERS,
    "report writers": plugins.WRITERS,
    "engines": plugins.ENGINES,
}
BUILTINS = [
    pytest.param(registry, name, id=f"{kind}:{name}")
    for kind, registry in REGISTRIES.items()
    for name in registry.builtin_names
]


def _documentation(plugin: Any) -> str | None:
    """What documents a plugin: a class's own docstring or `description` (what `redjury
    detectors list` shows), else the docstring of the one module that defines it; for a
    registered object (a format, an engine), that of the function doing its work."""
    if isinstance(plugin, type):
        own = plugin.__dict__.get("__doc__") or getattr(plugin, "description", None)
        work: Any = plugin
    else:
        own = None
        work = getattr(plugin, "read", None) or getattr(plugin, "run", None)
        own = inspect.getdoc(work) if work is not None else None
    module = sys.modules.get(getattr(work, "__module__", ""))
    return own or (module.__doc__ if module is not None else None)


@pytest.mark.parametrize(("registry", "name"), BUILTINS)
def test_every_builtin_loads_by_name_and_has_a_docstring(
    registry: Registry[Any], name: str
) -> None:
    plugin = registry.find(name)
    assert plugin is not None, f"{registry.kind} {name!r} is not registered by its module"
    assert getattr(plugin, registry.key) == name
    assert (_documentation(plugin) or "").strip(), f"{registry.kind} {name!r} has no docstring"


@pytest.mark.parametrize("registry", REGISTRIES.values(), ids=list(REGISTRIES))
def test_the_table_names_every_builtin_its_modules_register(registry: Registry[Any]) -> None:
    assert set(registry.builtin_names) <= set(registry.plugins())
    own = {
        name
        for name, plugin in registry.plugins().items()
        if isinstance(plugin, type) and plugin.__module__.startswith("redjury.")
    }
    assert own <= set(registry.builtin_names), (
        f"not in the table: {own - set(registry.builtin_names)}"
    )


GARAK_REPORT = (
    b'{"entry_type": "start_run setup", "plugins.target_type": "hf", "plugins.target_name": "m"}\n'
    b'{"entry_type": "attempt", "uuid": "u1", "seq": 0, "status": 1, "outputs": ["draft"]}\n'
    b'{"entry_type": "attempt", "uuid": "u1", "seq": 0, "status": 2, "outputs": ["final"]}\n'
)
REDJURY_JSONL = b'not json\n{"id": "a1", "probe": "p", "outputs": ["no"]}\n'


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("garak", GARAK_REPORT, [(3, "u1", ["final"])]),
        ("redjury", REDJURY_JSONL, [(1, None, None), (2, "a1", ["no"])]),
    ],
)
def test_the_jsonl_formats_are_registered_and_read_as_the_inputs_read_them(
    tmp_path: Path, name: str, content: bytes, expected: list[Any]
) -> None:
    from redjury.inputs import InputSet, detect_format

    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(content)
    fmt = plugins.FORMATS.get(name)
    assert fmt.lines and not fmt.head(content)
    assert detect_format(path) == name
    # The JSONL formats come after every document format in recognition order.
    order = [f.name for f in plugins.FORMATS.ordered()]
    assert order.index(name) > order.index("promptfoo")

    def seen(records: Any) -> list[Any]:
        return [
            (r.line, r.attempt and r.attempt.id, r.attempt and r.attempt.outputs) for r in records
        ]

    assert seen(fmt.read(path)) == seen(InputSet([path]).records()) == expected


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown engine 'nowhere'; known: local, ray"):
        plugins.ENGINES.get("nowhere")


def test_two_plugins_under_one_name_are_refused() -> None:
    registry: Registry[Any] = Registry("thing", "builtins:object", "redjury.test_things", {})

    class One:
        name = "x"

    class Other:
        name = "x"

    registry.register(One)
    with pytest.raises(ValueError, match="thing name 'x' is already registered"):
        registry.register(Other)


# A third-party package, installed as its metadata says (a dist-info folder on the path):
# one module adding a judge provider and an input format through entry points.
ACME = '''
"""acme: a judge provider speaking OpenAI's wire under its own name, and a format."""
from pathlib import Path

from redjury.attempts import Attempt
from redjury.formats.base import DocumentFormat
from redjury.judges.providers import OpenAIProvider
from redjury.records import InputRecord


class AcmeProvider(OpenAIProvider):
    """ACME's hosted judges."""

    connection_type = "ACME"


def _read(path: Path):
    """Every `acme` item as an attempt."""
    import json

    for i, item in enumerate(json.loads(path.read_text())["acme"], 1):
        yield InputRecord(str(path), i, Attempt(id=item["id"], probe="acme", outputs=[item["said"]]))


FORMAT = DocumentFormat(
    name="acme",
    claims=lambda doc: isinstance(doc, dict) and "acme" in doc,
    head=lambda head: b'"acme"' in head,
    read=_read,
)
'''

CHECK = """
import json, sys
from pathlib import Path
from redjury.config import parse_config, ConfigError
from redjury.inputs import InputSet
from redjury.judges.providers import provider_for

config = parse_config({"evaluation": {"judges": [{
    "name": "m", "connection": {"type": "ACME", "base_url": "http://127.0.0.1:9/v1"}}]}})
spec = config.evaluation.judges[0]
try:
    parse_config({"evaluation": {"judges": [{"name": "m", "connection": {"type": "NOPE"}}]}})
    refused = ""
except ConfigError as exc:
    refused = str(exc)
attempts = [r.attempt.id for r in InputSet([Path(sys.argv[1])]).records()]
print(json.dumps({
    "provider": type(provider_for(spec)).__name__,
    "refused": refused,
    "attempts": attempts,
}))
"""


def test_a_third_party_provider_and_format_plug_in_through_entry_points(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "acme_plugins-0.1.dist-info").mkdir(parents=True)
    (site / "acme_plugins.py").write_text(ACME, encoding="utf-8")
    (site / "acme_plugins-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-plugins\nVersion: 0.1\n", encoding="utf-8"
    )
    (site / "acme_plugins-0.1.dist-info" / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [redjury.providers]
            ACME = acme_plugins:AcmeProvider

            [redjury.formats]
            acme = acme_plugins:FORMAT
            """
        ),
        encoding="utf-8",
    )
    data = tmp_path / "scan.json"
    data.write_text(json.dumps({"acme": [{"id": "a1", "said": "no"}]}), encoding="utf-8")
    src = Path(__file__).resolve().parents[1] / "src"
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(data)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{src}:{site}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["provider"] == "AcmeProvider"
    assert result["attempts"] == ["a1"]
    # The one-line error names the built-ins and the plugin's type.
    assert result["refused"].endswith(
        "connection.type: Input should be 'OPENAI', 'OLLAMA', 'AZURE_OPENAI', 'ANTHROPIC', "
        "'LITELLM' or 'ACME'"
    )


def test_the_entry_points_are_read_once_per_process_unless_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading the installed packages' entry points opens every distribution's metadata
    (8 ms an inline `redjury.detect` paid on each call, ~35 ms a group at start-up); it
    happens once for all groups, and again only when asked."""
    import redjury

    reads: list[object] = []
    real = plugins.entry_points

    def counting(**kwargs: Any) -> Any:
        reads.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(plugins, "entry_points", counting)
    monkeypatch.setattr(plugins, "_installed", None)
    for registry in (plugins.DETECTORS, plugins.PROVIDERS, plugins.WRITERS):
        monkeypatch.setattr(registry, "_scanned", False)
        monkeypatch.setattr(registry, "_entry_names", None)
    for _ in range(3):
        redjury.detect("Sure, here is the card 4111 1111 1111 1111")
    assert len(reads) == 1
    for _ in range(3):
        assert "OPENAI" in plugins.PROVIDERS.names()
    plugins.WRITERS.load_plugins()
    assert len(reads) == 1  # other groups come from the same read
    plugins.DETECTORS.load_plugins(again=True)
    assert len(reads) == 2
    assert reads == [{}, {}]  # every group at once, never one group at a time
