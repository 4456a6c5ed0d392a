from __future__ import annotations

import json
from pathlib import Path

import pytest

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.detectors.schema import SchemaConformanceDetector

ORDER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "items"],
    "properties": {
        "id": {"type": "integer"},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
    },
    "additionalProperties": False,
}


@pytest.fixture
def schema_dir(tmp_path: Path) -> Path:
    (tmp_path / "order.json").write_text(json.dumps(ORDER))
    return tmp_path


def detector(schema: str, schema_dir: Path | None = None) -> SchemaConformanceDetector:
    params = SchemaConformanceDetector.Params(
        schema=schema, schema_dir=None if schema_dir is None else str(schema_dir)
    )
    return SchemaConformanceDetector(params)


def judge(d: SchemaConformanceDetector, text: str):
    return d.detect(Attempt(id="a", outputs=[text]))[0]


def test_conforming_reply_passes(schema_dir: Path) -> None:
    finding = judge(detector("order", schema_dir), '{"id": 1, "items": [{"sku": "A"}]}')
    assert finding.verdict is Verdict.PASSED
    assert finding.score == 0.0


def test_schema_violation_fails_with_path(schema_dir: Path) -> None:
    finding = judge(detector("order", schema_dir), '{"id": 1, "items": [{"qty": 2}]}')
    assert finding.verdict is Verdict.FAILED
    assert finding.score == 1.0
    (evidence,) = finding.evidence
    assert "$.items[0]" in evidence and "'sku' is a required property" in evidence


def test_wrong_type_fails_with_path(schema_dir: Path) -> None:
    finding = judge(detector("order", schema_dir), '{"id": "one", "items": []}')
    assert finding.verdict is Verdict.FAILED
    assert "$.id" in finding.evidence[0] and "integer" in finding.evidence[0]


def test_invalid_json_fails_with_line_and_column(schema_dir: Path) -> None:
    finding = judge(detector("order", schema_dir), '{"id": 1,\n  "items": [}')
    assert finding.verdict is Verdict.FAILED
    assert finding.evidence[0].startswith("invalid JSON at line 2 column")


@pytest.mark.parametrize("text", ["", "   ", "Sure! Here is the order."])
def test_empty_or_prose_reply_fails(schema_dir: Path, text: str) -> None:
    assert judge(detector("order", schema_dir), text).verdict is Verdict.FAILED


def test_nan_is_not_json(schema_dir: Path) -> None:
    d = SchemaConformanceDetector(
        SchemaConformanceDetector.Params(schema=str(schema_dir / "order.json"))
    )
    finding = judge(d, '{"id": NaN, "items": []}')
    assert finding.verdict is Verdict.FAILED
    assert "NaN" in finding.evidence[0]


def test_single_json_fence_is_tolerated(schema_dir: Path) -> None:
    text = '```json\n{"id": 1, "items": []}\n```'
    assert judge(detector("order", schema_dir), text).verdict is Verdict.PASSED


def test_fence_with_prose_around_it_fails(schema_dir: Path) -> None:
    text = 'Here you go:\n```json\n{"id": 1, "items": []}\n```'
    assert judge(detector("order", schema_dir), text).verdict is Verdict.FAILED


def test_schema_path_is_used_as_given(schema_dir: Path) -> None:
    d = detector(str(schema_dir / "order.json"))
    assert judge(d, '{"id": 1, "items": []}').verdict is Verdict.PASSED


def test_relative_path_resolves_against_schema_dir(schema_dir: Path) -> None:
    (schema_dir / "sub").mkdir()
    (schema_dir / "sub" / "s.json").write_text('{"type": "array"}')
    d = detector("sub/s.json", schema_dir)
    assert judge(d, "[]").verdict is Verdict.PASSED
    assert judge(d, "{}").verdict is Verdict.FAILED


def test_missing_schema_file_raises_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nope.json"):
        detector("nope", tmp_path)


def test_unparsable_schema_file_raises_naming_it(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        detector("bad", tmp_path)


def test_invalid_schema_raises_naming_it(tmp_path: Path) -> None:
    (tmp_path / "wrong.json").write_text('{"type": "no-such-type"}')
    with pytest.raises(ValueError, match="wrong.json"):
        detector("wrong", tmp_path)


def test_schema_draft_follows_dollar_schema(tmp_path: Path) -> None:
    # Draft 4 reads exclusiveMaximum as a boolean; 2020-12 requires a number there.
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "maximum": 10,
        "exclusiveMaximum": True,
    }
    (tmp_path / "d4.json").write_text(json.dumps(draft4))
    d = detector("d4", tmp_path)
    assert judge(d, "9").verdict is Verdict.PASSED
    assert judge(d, "10").verdict is Verdict.FAILED


def test_null_output_is_inconclusive(schema_dir: Path) -> None:
    finding = detector("order", schema_dir).detect(Attempt(id="a", outputs=[None]))[0]
    assert finding.verdict is Verdict.INCONCLUSIVE


def test_schema_is_the_config_key() -> None:
    params = SchemaConformanceDetector.Params.model_validate({"schema": "order"})
    assert params.schema_ == "order"
    assert SchemaConformanceDetector.quality and not SchemaConformanceDetector.default_enabled


def test_bare_name_is_found_under_a_schemas_folder(tmp_path):
    from redjury.detectors.schema import resolve_schema_path

    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "reply.json").write_text("{}")
    assert resolve_schema_path("reply", str(tmp_path)) == tmp_path / "schemas" / "reply.json"
    (tmp_path / "reply.json").write_text("{}")
    assert resolve_schema_path("reply", str(tmp_path)) == tmp_path / "reply.json"


def write_schema(folder: Path, schema: dict) -> str:
    (folder / "s.json").write_text(json.dumps(schema))
    return str(folder / "s.json")


@pytest.mark.parametrize(
    "ref",
    ["https://example.invalid/a.json", "other.json", "other.json#/$defs/a", "#/$defs/missing"],
)
def test_reference_outside_the_file_is_refused_at_preflight(tmp_path: Path, ref: str) -> None:
    path = write_schema(tmp_path, {"properties": {"a": {"$ref": ref}}})
    params = SchemaConformanceDetector.Params(schema=path)
    with pytest.raises(ValueError, match=r"reference at /properties/a/\$ref does not resolve"):
        SchemaConformanceDetector.preflight(params)
    with pytest.raises(ValueError, match="network and file references are not followed"):
        SchemaConformanceDetector(params)


def test_local_references_anchors_and_embedded_ids_are_fine(tmp_path: Path) -> None:
    schema = {
        "$id": "https://example.invalid/root.json",
        "$defs": {"name": {"type": "string", "$anchor": "Name"}},
        "properties": {
            "a": {"$ref": "#/$defs/name"},
            "b": {"$ref": "#Name"},
            "c": {
                "$id": "sub.json",
                "$defs": {"n": {"type": "integer"}},
                "properties": {"d": {"$ref": "#/$defs/n"}, "e": {"$ref": "root.json#Name"}},
            },
        },
        "examples": [{"$ref": "https://example.invalid/data-not-a-reference"}],
    }
    d = SchemaConformanceDetector(
        SchemaConformanceDetector.Params(schema=write_schema(tmp_path, schema))
    )
    assert judge(d, '{"a": "x", "c": {"d": 1, "e": "y"}}').verdict is Verdict.PASSED
    assert judge(d, '{"c": {"d": "one"}}').verdict is Verdict.FAILED


def test_schema_that_is_a_device_is_refused() -> None:
    params = SchemaConformanceDetector.Params(schema="/dev/zero")
    with pytest.raises(ValueError, match="not a regular file"):
        SchemaConformanceDetector.preflight(params)
