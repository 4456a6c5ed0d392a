"""Reading a config file's YAML in bounded time: UTF-8 only, aliases may not expand past
a fixed size or nest past a fixed depth, and errors give a position (file:line:column),
never a snippet of the text (it may hold a secret)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from redjury.errors import RedjuryError

#: Most values (scalars and collections, counted after alias expansion) a config may hold.
MAX_VALUES = 100_000
#: Largest config file read.
MAX_BYTES = 16 * 2**20
#: Deepest nesting of mappings and lists a config may have.
MAX_DEPTH = 100

Locate = Callable[[tuple[int | str, ...]], str]


class YamlConfigError(RedjuryError, ValueError):
    """The file is not a readable, bounded YAML document; the message starts with its
    position."""


def _where(path: Path, line: int, column: int) -> str:
    return f"{path}:{line + 1}:{column + 1}"


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        raise YamlConfigError(
            f"{_where(path, line, column)}: not UTF-8 text; save the file as UTF-8"
        ) from None


class _Frame:
    def __init__(self, is_mapping: bool) -> None:
        self.is_mapping = is_mapping
        self.at_key = True  # a mapping expects a key next
        self.key = "?"
        self.index = 0


def _syntax_error_path(text: str) -> str:
    """The key path at which parsing `text` fails: the events up to the error are replayed,
    keeping a stack of the mappings and lists they are in."""
    stack: list[_Frame] = []

    def done() -> None:
        if stack:
            top = stack[-1]
            if top.is_mapping:
                top.at_key = not top.at_key
            else:
                top.index += 1

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            top = stack[-1] if stack else None
            if isinstance(event, yaml.NodeEvent) and top and top.is_mapping and top.at_key:
                key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
                top.key = key if key.isprintable() else repr(key)
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append(_Frame(isinstance(event, yaml.MappingStartEvent)))
            elif isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
                done()
            elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                done()
    except (yaml.YAMLError, RecursionError):
        pass
    out = ""
    for frame in stack:
        if frame.is_mapping and frame.at_key:
            break
        out += (
            f"[{frame.index}]" if not frame.is_mapping else (f".{frame.key}" if out else frame.key)
        )
    return out


def _yaml_message(path: Path, exc: yaml.YAMLError, text: str) -> str:
    # str(exc) would quote the offending lines; only the position and the problem are kept.
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = _where(path, mark.line, mark.column) if mark else str(path)
        if not isinstance(exc, yaml.constructor.ConstructorError):
            key_path = _syntax_error_path(text)
            where += f": {key_path}" if key_path else ""
        context = exc.context
        if context and exc.context_mark and exc.problem_mark:
            start = exc.context_mark
            context += f" (from line {start.line + 1} column {start.column + 1})"
        about = "; ".join(part for part in (context, exc.problem) if part)
        return f"{where}: not valid YAML: {about or 'syntax error'}"
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position)
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1)
        return (
            f"{_where(path, line, column)}: not valid YAML: "
            f"control character #x{exc.character:02x} is not allowed"
        )
    return f"{path}: not valid YAML"


class _Loader(yaml.SafeLoader):
    """SafeLoader whose unreadable values (a 5,000-digit integer, the 13th month) are YAML
    errors at their position rather than bare ValueErrors."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"a value that cannot be read ({type(exc).__name__})", node.start_mark
            ) from None


class _Measure:
    """The expanded size and depth of a node graph, each node measured once, so a
    billion-laughs document costs the size of its text, not of its expansion."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sizes: dict[int, tuple[int, int]] = {}
        self.open: set[int] = set()

    def __call__(self, node: Node) -> tuple[int, int]:
        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in self.open:
            raise self.error(node, "an alias refers to the mapping or list that holds it")
        if isinstance(node, ScalarNode):
            return 1, 0
        self.open.add(key)
        children: list[Node] = []
        if isinstance(node, MappingNode):
            self.unique_keys(node)
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        size, depth = 1, 0
        for child in children:
            child_size, child_depth = self(child)
            size, depth = size + child_size, max(depth, child_depth + 1)
            if size > MAX_VALUES:
                raise self.error(node, f"aliases expand to more than {MAX_VALUES} values")
            if depth > MAX_DEPTH:
                raise self.error(node, f"nested deeper than {MAX_DEPTH} levels")
        self.open.discard(key)
        self.sizes[key] = size, depth
        return size, depth

    def unique_keys(self, node: MappingNode) -> None:
        # PyYAML keeps the last of two equal keys; a config whose second `headers:` silently
        # replaces the first is a mistake worth a word.
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    raise self.error(key, f"the key {key.value!r} appears twice in one mapping")
                seen.add(key.value)

    def error(self, node: Node, problem: str) -> YamlConfigError:
        mark = node.start_mark
        return YamlConfigError(f"{_where(self.path, mark.line, mark.column)}: {problem}")


def _child(node: Node, part: int | str) -> tuple[Node, Node] | None:
    """(the node to point at, the node to descend into) for one key-path step."""
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value == str(part):
                return key, value
    if isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return item, item
    return None


def locator(path: Path, root: Node | None) -> Locate:
    """A function giving `file:line:column` of the deepest node a key path reaches."""

    def locate(loc: tuple[int | str, ...]) -> str:
        if root is None:
            return str(path)
        point, node = root, root
        for part in loc:
            step = _child(node, part)
            if step is None:
                break
            point, node = step
        return _where(path, point.start_mark.line, point.start_mark.column)

    return locate


def read_yaml_config(path: Path) -> tuple[Any, Locate]:
    """The file's data and a locator for its key paths; YamlConfigError (a position and a
    problem) for a file that is unreadable, not UTF-8, not YAML, or expands past the bounds."""
    try:
        # Bounded: a pipe (`--config <(…)`) is fine, /dev/zero must not run forever.
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise YamlConfigError(
            f"{path}: cannot read: {exc.strerror or type(exc).__name__}"
        ) from None
    if len(raw) > MAX_BYTES:
        raise YamlConfigError(f"{path}: larger than {MAX_BYTES // 2**20} MiB; not a config file")
    text = _decode(path, raw)
    try:
        loader = _Loader(text)  # the reader checks every character here
    except yaml.YAMLError as exc:
        raise YamlConfigError(_yaml_message(path, exc, text)) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, locator(path, None)
        _Measure(path)(root)
        return loader.construct_document(root), locator(path, root)
    except yaml.YAMLError as exc:
        raise YamlConfigError(_yaml_message(path, exc, text)) from None
    except RecursionError:
        raise YamlConfigError(f"{path}: not valid YAML: nested too deeply") from None
    finally:
        loader.dispose()
