"""Property: for any file, each other tool's reader yields an attempt or a record error.

Files are arbitrary bytes, arbitrary JSON documents, and each tool's fixture with arbitrary
values in the fields of a record, read by that tool's reader and as the run detects them."""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from formats_testing import DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redjury_testing import checked_records

from redjury.formats import read_records
from redjury.inputs import InputSet, check_inputs
from redjury.records import InputRecord

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
READERS = ["promptfoo", "inspect_ai", "pyrit_memory", "pyrit_attacks", "azure_red_team"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["user", "assistant", "C", "true", "AttackOutcome.SUCCESS", "", "text"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def checked(records: list[InputRecord]) -> list[InputRecord]:
    return checked_records(records)


def read_each_way(data: bytes, name: str = "in.json") -> None:
    """The file read by every reader, and as the run reads it (detected and checked)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        for reader in READERS:
            checked(list(read_records(reader, path)))
        checked(list(InputSet([path]).records()))
        check_inputs(InputSet([path]))


@SETTINGS
@given(st.binary(max_size=200))
def test_any_bytes_give_attempts_or_record_errors(data: bytes) -> None:
    read_each_way(data)


@SETTINGS
@given(st.binary(max_size=200))
def test_any_bytes_after_a_zip_signature_give_attempts_or_record_errors(data: bytes) -> None:
    read_each_way(b"PK\x03\x04" + data, "log.eval")


@SETTINGS
@given(json_values)
def test_any_json_document_gives_attempts_or_record_errors(value: Any) -> None:
    read_each_way(json.dumps(value).encode())


def fixture(name: str) -> Any:
    return json.loads((DATA / name).read_text())


# Each fixture, the path to its first record, and the fields a reader reads from it.
SHAPES: list[tuple[str, list[Any], list[str]]] = [
    (
        "promptfoo_v3_redteam.json",
        ["results", "results", 0],
        ["id", "response", "prompt", "gradingResult", "success", "metadata", "testCase",
         "provider", "error", "failureReason", "latencyMs", "vars", "testIdx", "score"],
    ),
    (
        "inspect_log.json",
        ["samples", 0],
        ["id", "epoch", "input", "messages", "output", "scores", "score", "metadata",
         "target", "error", "model_usage", "total_time", "attachments"],
    ),
    (
        "pyrit_memory.json",
        [0],
        ["id", "conversation_id", "role", "original_value", "converted_value", "sequence",
         "scores", "converted_value_data_type", "response_error", "labels",
         "attack_identifier", "prompt_target_identifier", "targeted_harm_categories",
         "scorer_identifier", "score_value", "prompt_request_response_id"],
    ),
    (
        "pyrit_attacks.json",
        ["attack_results", 0],
        ["objective", "outcome", "success", "conversation", "messages", "response",
         "last_response", "objective_score", "score", "attack_identifier",
         "targeted_harm_categories", "execution_time_ms", "conversation_id", "labels"],
    ),
    (
        "azure_scan.json",
        ["attack_details", 0],
        ["conversation", "risk_category", "attack_technique", "attack_complexity",
         "attack_success", "objective", "risk_assessment"],
    ),
]  # fmt: skip


def with_changes(name: str, where: list[Any], changes: dict[str, Any]) -> Any:
    doc = fixture(name)
    record = doc
    for step in where:
        record = record[step]
    record.update(changes)
    return doc


@st.composite
def shaped_documents(draw: st.DrawFn) -> tuple[str, Any]:
    name, where, keys = draw(st.sampled_from(SHAPES))
    changes = draw(st.dictionaries(st.sampled_from(keys), json_values, max_size=4))
    return name, with_changes(name, where, changes)


@SETTINGS
@given(shaped_documents())
def test_any_field_values_in_a_record_give_attempts_or_record_errors(
    shaped: tuple[str, Any],
) -> None:
    _, doc = shaped
    read_each_way(json.dumps(doc).encode())


@SETTINGS
@given(st.sampled_from(SHAPES[1][2]).flatmap(lambda k: st.tuples(st.just(k), json_values)))
def test_any_field_values_in_an_eval_archive_sample_give_attempts_or_record_errors(
    change: tuple[str, Any],
) -> None:
    log = fixture("inspect_log.json")
    samples = log.pop("samples")
    samples[0][change[0]] = change[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.eval"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("header.json", json.dumps(log))
            for i, sample in enumerate(samples):
                z.writestr(f"samples/{i}_epoch_1.json", json.dumps(sample))
        records = checked(list(InputSet([path]).records()))
        assert len(records) == len(samples)


@pytest.mark.parametrize(
    ("name", "where", "changes"),
    [
        ("pyrit_memory.json", [0], {"scores": True}),
        ("pyrit_memory.json", [0], {"converted_value_data_type": []}),
        ("promptfoo_v3_redteam.json", ["results", "results", 0], {"gradingResult": {"componentResults": True}}),
        ("promptfoo_v3_redteam.json", ["results", "results", 0], {"testCase": {"assert": 5}}),
        ("inspect_log.json", ["eval"], {"scorers": True}),
    ],
)  # fmt: skip
def test_a_list_field_given_another_type_is_read_not_a_crash(
    name: str, where: list[Any], changes: dict[str, Any]
) -> None:
    # Found by the properties above: each was a TypeError before.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(json.dumps(with_changes(name, where, changes)))
        records = checked(list(InputSet([path]).records()))
    assert records and all(r.attempt is not None for r in records)
