"""The house is one-way: every module of `redjury` sits on a declared layer and imports only
from its own layer or those below, and no modules import each other in a circle. Imports
inside functions and under `TYPE_CHECKING` count as much as those at the top."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Bottom to top. A module's layer is that of the longest pattern naming it: the module
# itself, or a package it is in (`redjury.stats.*`). See docs/architecture.md.
LAYERS: Sequence[tuple[str, Sequence[str]]] = (
    (
        "records and shared helpers",
        (
            "redjury.version",
            "redjury.errors",
            "redjury.attempts",
            "redjury.records",
            "redjury.plugins",
            "redjury.downloads",
            "redjury.interrupts",
            "redjury.config_yaml",
            "redjury.idstore",
            "redjury.row_types",
        ),
    ),
    (
        "readers, detectors, judges, statistics",
        (
            "redjury.formats.*",
            "redjury.inputs",
            "redjury.detectors.*",
            "redjury.judges.*",
            "redjury.stats.*",
            "redjury.redaction",
            "redjury.scoring_types",
            "redjury.config_files",
            "redjury.audit.datasets",
        ),
    ),
    (
        "counting: verdicts and tallies, rows returned, never serialised",
        ("redjury.evaluators", "redjury.rows", "redjury.audit.counting", "redjury.audit.metrics")
        + ("redjury.audit.wrappers",),
    ),
    # Above the verdict policies it names (a bad `evaluator.type` stops the config).
    ("the run's configuration", ("redjury.config", "redjury.config_decisive")),
    ("report writers", ("redjury.report.*", "redjury.comparison", "redjury.comparison_parallel")),
    (
        "the run's stages",
        ("redjury.pipeline", "redjury.stored_state", "redjury.dry_run")
        + ("redjury.audit.runner", "redjury.audit.command"),
    ),
    ("engines", ("redjury.engines.*",)),
    (
        "faces",
        ("redjury", "redjury.api", "redjury.api_compare", "redjury.cli", "redjury.docs")
        + ("redjury.pytest_plugin", "redjury.service.*", "redjury.integrations.*")
        + ("redjury.audit",),
    ),
)

Graph = Mapping[str, Mapping[str, int]]


def modules(src: Path) -> dict[str, Path]:
    """Every module under `src` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, package: list[str], known: Mapping[str, object]) -> Iterator[str]:
    """The modules an import statement reaches: `from m import x` reaches m.x where that
    is a module, else m; `from . import x` is resolved against `package`."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:  # `import a.b.function`: the module a.b
                name = name.rpartition(".")[0]
            yield name
    elif isinstance(node, ast.ImportFrom):
        base = package[: len(package) - node.level + 1] if node.level else []
        module = ".".join(base + ([node.module] if node.module else []))
        for alias in node.names:
            submodule = f"{module}.{alias.name}"
            yield submodule if submodule in known else module


def import_graph(src: Path, top: str = "redjury") -> dict[str, dict[str, int]]:
    """module → {module it imports: line of the first such import}, within `top`."""
    found = modules(src)
    graph: dict[str, dict[str, int]] = {name: {} for name in found if name.split(".")[0] == top}
    for name in graph:
        path = found[name]
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node, package, graph):
                if target in graph and target != name:
                    graph[name].setdefault(target, getattr(node, "lineno", 0))
    return graph


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> int | None:
    """The index of the layer whose longest pattern names `module`; None when none does."""
    best: tuple[int, int] | None = None
    for index, (_, patterns) in enumerate(layers):
        for pattern in patterns:
            stem = pattern.removesuffix(".*")
            named = module == stem or (pattern.endswith(".*") and module.startswith(stem + "."))
            if named and (best is None or len(stem) > best[0]):
                best = (len(stem), index)
    return None if best is None else best[1]


def circles(graph: Graph) -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def problems(graph: Graph, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> list[str]:
    """One line per import that breaks the house: a module on no layer, an arrow from a
    lower layer up to a higher one, an import in a circle."""
    lines = []
    for module in sorted(graph):
        mine = layer_of(module, layers)
        if mine is None:
            lines.append(f"{module}: on no layer (add it to LAYERS)")
            continue
        for target, line in sorted(graph[module].items()):
            theirs = layer_of(target, layers)
            if theirs is not None and theirs > mine:
                lines.append(
                    f"{module}:{line} imports {target}: up from {layers[mine][0]!r} "
                    f"to {layers[theirs][0]!r}"
                )
    for members in circles(graph):
        inside = set(members)
        arrows = [
            f"{m}:{line} imports {t}"
            for m in members
            for t, line in sorted(graph[m].items())
            if t in inside
        ]
        lines.append(f"import circle {' / '.join(members)}: {'; '.join(arrows)}")
    return lines


def test_the_package_imports_only_downward_and_in_no_circle() -> None:
    assert problems(import_graph(SRC)) == []


def test_every_pattern_in_the_table_names_a_module() -> None:
    graph = import_graph(SRC)
    for _, patterns in LAYERS:
        for pattern in patterns:
            stem = pattern.removesuffix(".*")
            assert stem in graph, f"LAYERS names {pattern!r}, which is no module"


# -- the checker itself --------------------------------------------------------------------

TOY_LAYERS = (("bottom", ("p.low",)), ("top", ("p.high", "p.side")))


def test_an_arrow_up_is_named_with_its_line() -> None:
    graph = {"p.low": {"p.high": 7}, "p.high": {}, "p.side": {}}
    assert problems(graph, TOY_LAYERS) == ["p.low:7 imports p.high: up from 'bottom' to 'top'"]


def test_a_circle_within_one_layer_is_named() -> None:
    graph = {"p.low": {}, "p.high": {"p.side": 3}, "p.side": {"p.high": 9}}
    assert problems(graph, TOY_LAYERS) == [
        "import circle p.high / p.side: p.high:3 imports p.side; p.side:9 imports p.high"
    ]


def test_a_module_on_no_layer_is_named() -> None:
    assert problems({"p.new": {}}, TOY_LAYERS) == ["p.new: on no layer (add it to LAYERS)"]


@pytest.mark.parametrize(
    ("module", "planted", "named"),
    [
        # A function-level import from the bottom to a face.
        ("attempts.py", "def _planted():\n    from redjury import cli\n", "redjury.cli"),
        # A relative import from a reader up to the pipeline.
        ("formats/base.py", "def _planted():\n    from .. import pipeline\n", "redjury.pipeline"),
        # Counting that serialises, imported only for the type checker: it counts too.
        (
            "evaluators.py",
            "if TYPE_CHECKING:\n    from redjury.report.jsonl import dumps_line\n",
            "redjury.report.jsonl",
        ),
    ],
)
def test_a_planted_import_up_is_caught(
    tmp_path: Path, module: str, planted: str, named: str
) -> None:
    shutil.copytree(SRC / "redjury", tmp_path / "redjury")
    target = tmp_path / "redjury" / module
    text = target.read_text(encoding="utf-8")
    target.write_text(f"{text}\n\n{planted}", encoding="utf-8")
    line = len(text.splitlines()) + 4  # two blank lines, then the def or the if
    dotted = "redjury." + module.removesuffix(".py").replace("/", ".")
    found = problems(import_graph(tmp_path))
    # The arrow up is named first; it may close a circle too (the face imports the bottom).
    assert found[0].startswith(f"{dotted}:{line} imports {named}: up from ")
    assert all(f.startswith("import circle") for f in found[1:])


def test_a_planted_circle_is_caught(tmp_path: Path) -> None:
    shutil.copytree(SRC / "redjury", tmp_path / "redjury")
    target = tmp_path / "redjury" / "records.py"
    # `attempts` is imported by `records`: importing back closes a circle on one layer.
    attempts = tmp_path / "redjury" / "attempts.py"
    attempts.write_text(
        attempts.read_text(encoding="utf-8") + "\nfrom redjury.records import BOM\n",
        encoding="utf-8",
    )
    assert "from redjury.attempts import" in target.read_text(encoding="utf-8")
    found = problems(import_graph(tmp_path))
    assert found and found[0].startswith("import circle redjury.attempts / redjury.records")
