"""JSON-schema conformance: the reply parses as JSON and validates against a schema file
(R9)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import exceptions as jsonschema_errors
from jsonschema._utils import extras_msg
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from pydantic import ConfigDict, Field
from referencing import Registry, Specification
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.detectors.registry import register_detector
from redjury.detectors.user_patterns import LinearPattern, compile_linear

# A reply that is one fenced block and nothing else: ```json\n...\n``` (or plain ```).
_FENCED = re.compile(r"\A\s*```(?:json)?[ \t]*\r?\n(.*?)\r?\n?```\s*\Z", re.DOTALL | re.IGNORECASE)
_EVIDENCE_CHARS = 300


class SchemaParams(DetectorParams):
    schema_: str = Field(
        alias="schema",
        min_length=1,
        description=(
            "JSON Schema file: a path (relative paths resolve against `schema_dir`), or a "
            "bare name looked up as `<schema_dir>/<name>.json`, then `<schema_dir>/schemas/<name>.json`."
        ),
    )
    schema_dir: str | None = Field(
        default=None,
        description="Directory that schema names and relative paths resolve against; "
        "default the current directory.",
    )

    # `schema` would shadow BaseModel.schema(); the alias keeps the config key.
    model_config = ConfigDict(populate_by_name=True)


def resolve_schema_path(schema: str, schema_dir: str | None) -> Path:
    """Where the schema file is: a bare name (no suffix, no directory) gets `.json` and is
    looked up as `<schema_dir>/<name>.json`, then `<schema_dir>/schemas/<name>.json` (the
    seed's `resources/schemas/<name>.json` layout)."""
    path = Path(schema).expanduser()
    bare = path.suffix == "" and len(path.parts) == 1
    if bare:
        path = path.with_name(path.name + ".json")
    if not path.is_absolute() and schema_dir is not None:
        base = Path(schema_dir).expanduser()
        if bare and not (base / path).exists() and (base / "schemas" / path).exists():
            return base / "schemas" / path
        path = base / path
    return path


_ROOT_URI = "urn:redjury:schema"
# Keywords whose values are data, not subschemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _references(
    node: Any, pointer: str, resolver: Any, spec: Specification[Any]
) -> Iterator[tuple[str, str, Any]]:
    """(JSON pointer, reference, resolver at that point's base URI) for every `$ref` and
    `$dynamicRef` in a schema."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _references(item, f"{pointer}/{i}", resolver, spec)
        return
    if not isinstance(node, dict):
        return
    if pointer and isinstance(spec.id_of(node), str):
        resolver = resolver.in_subresource(spec.create_resource(node))
    for keyword in ("$ref", "$dynamicRef"):
        if isinstance(node.get(keyword), str):
            yield f"{pointer}/{keyword}", node[keyword], resolver
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            yield from _references(value, f"{pointer}/{key}", resolver, spec)


def check_local_references(schema: Any, path: Path) -> None:
    """Every reference resolves inside the schema file: network and file references are
    refused (they would be fetched, or fail, at the first reply)."""
    if not isinstance(schema, dict):
        return
    spec = specification_with(str(schema.get("$schema", "")), default=DRAFT202012)
    resource = spec.create_resource(schema)
    root = resource.id() or _ROOT_URI
    resolver = Registry().with_resource(root, resource).crawl().resolver(root)
    for pointer, ref, here in _references(schema, "", resolver, spec):
        try:
            here.lookup(ref)
        except Unresolvable:
            raise ValueError(
                f"JSON Schema {str(path)!r}: the reference at {pointer or '/'} does not resolve "
                "inside the file; network and file references are not followed (put the "
                "definition under $defs and refer to it as #/$defs/NAME)"
            ) from None


def load_schema(path: Path) -> tuple[Any, type[Validator]]:
    """The schema at `path` and its validator class; ValueError naming the file when it
    cannot be read, is not JSON, is not a valid schema, refers outside itself or holds a
    pattern RE2 cannot match in linear time."""
    schema = _read_schema(path)
    cls: type[Validator] = validator_for(schema)
    try:
        cls.check_schema(schema)
        check_local_references(schema, path)
        for pointer, pattern in _patterns(schema, ""):
            try:
                _linear(pattern)
            except ValueError as exc:
                raise ValueError(f"JSON Schema {str(path)!r}: at {pointer}: {exc}") from None
    except jsonschema_errors.SchemaError as exc:
        raise ValueError(f"invalid JSON Schema {str(path)!r}: {exc.message}") from exc
    except RecursionError:
        raise ValueError(f"JSON Schema {str(path)!r} is nested too deeply") from None
    return schema, extend(cls, _LINEAR_KEYWORDS)


def _patterns(node: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """(JSON pointer, pattern) for every `pattern` and `patternProperties` key of a schema."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _patterns(item, f"{pointer}/{i}")
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("pattern"), str):
        yield f"{pointer}/pattern", node["pattern"]
    if isinstance(node.get("patternProperties"), dict):
        for key in node["patternProperties"]:
            yield f"{pointer}/patternProperties/{key}", key
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            yield from _patterns(value, f"{pointer}/{key}")


# -- the schema's patterns, matched with RE2 (jsonschema's own keywords use `re`, where
# `^(a+)+$` took over 90 s on a 35-character reply) ---------------------------------------
@lru_cache(maxsize=1024)
def _linear(pattern: str) -> LinearPattern:
    return compile_linear(pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _linear(pattern).search(instance):
        yield jsonschema_errors.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _linear(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: dict[str, Any], schema: Any) -> list[str]:
    properties = schema.get("properties", {})
    patterns = [_linear(p) for p in schema.get("patternProperties", {})]
    return [
        key
        for key in instance
        if key not in properties and not any(p.search(key) for p in patterns)
    ]


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield jsonschema_errors.ValidationError(
                f"{joined} {verb} not match any of the regexes: {patterns}"
            )
        else:
            listed, verb = extras_msg(sorted(extras, key=str))
            yield jsonschema_errors.ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


_LINEAR_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


def _read_schema(path: Path) -> Any:
    if path.exists() and not path.is_file():
        # A folder, a FIFO or a device (/dev/zero) would fail late, block or never end.
        raise ValueError(f"JSON Schema {str(path)!r} is not a regular file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read JSON Schema {str(path)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError:
        raise ValueError(f"JSON Schema {str(path)!r} is not UTF-8 text") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"JSON Schema {str(path)!r} is not valid JSON: {exc.msg} "
            f"at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError:
        raise ValueError(f"JSON Schema {str(path)!r} is nested too deeply") from None
    if not isinstance(schema, dict | bool):
        raise ValueError(f"JSON Schema {str(path)!r} must be an object or a boolean")
    return schema


def _shorten(text: str) -> str:
    return text if len(text) <= _EVIDENCE_CHARS else text[:_EVIDENCE_CHARS] + "…"


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON does not.
    raise ValueError(f"{name} is not valid JSON")


@register_detector
class SchemaConformanceDetector(Detector):
    """PASSED when the reply parses as JSON and validates against the schema; FAILED with
    the parse error (line and column) or the first validation error (its JSON path and
    message) otherwise. A reply that is exactly one ```json fenced block is judged by the
    block's content, since chat models wrap JSON that way even when asked not to.

    The schema is loaded and checked once; its `$schema` picks the draft (default the
    latest). A missing, unreadable or invalid schema file raises ValueError naming it.
    """

    name = "schema"
    family = Family.DETERMINISTIC
    description = "The reply is JSON that validates against the configured JSON Schema."
    quality = True
    default_enabled = False
    Params = SchemaParams
    params: SchemaParams

    def __init__(self, params: DetectorParams | None = None) -> None:
        super().__init__(params)
        self.schema_path = resolve_schema_path(self.params.schema_, self.params.schema_dir)
        self.schema, cls = load_schema(self.schema_path)
        self.validator = cls(self.schema)

    @classmethod
    def preflight(cls, params: DetectorParams) -> None:
        assert isinstance(params, SchemaParams)
        load_schema(resolve_schema_path(params.schema_, params.schema_dir))

    def check(self, attempt: Attempt, output: str) -> Finding:
        fenced = _FENCED.match(output)
        text = fenced.group(1) if fenced else output
        try:
            document = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            return self.bad(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
        except ValueError as exc:
            return self.bad(f"invalid JSON: {exc}")
        error = jsonschema_errors.best_match(self.validator.iter_errors(document))
        if error is None:
            return self.good()
        return self.bad(_shorten(f"schema violation at {error.json_path}: {error.message}"))
