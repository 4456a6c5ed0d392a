"""Property: for any line, the input reader yields an attempt or a line error, nothing else.

Lines are arbitrary bytes, arbitrary JSON, and attempt-shaped objects with arbitrary values
in their fields, read as redjury JSONL and as a garak report."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redjury_testing import checked_records

from redjury.formats.garak import GARAK_ROW_FIELDS, _read_lines, _scan_lines, garak_json_object
from redjury.formats.lines import json_object
from redjury.inputs import InputSet, check_inputs

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GARAK_SETUP = b'{"entry_type": "start_run setup", "plugins.target_name": "m"}\n'

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["user", "Assistant", "attempt", "2", "", "entry_type"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
REDJURY_KEYS = [
    "id", "probe", "goal", "prompt", "output", "outputs", "messages", "intent", "context",
    "latency_ms", "usage", "notes", "seq", "detector_results", "entry_type",
]  # fmt: skip
GARAK_KEYS = [
    "entry_type", "uuid", "seq", "status", "probe_classname", "prompt", "outputs",
    "detector_results", "notes", "goal", "intent", "run",
]  # fmt: skip
REDJURY_BASE = {"id": "a", "outputs": ["x"]}
GARAK_BASE = {"entry_type": "attempt", "uuid": "u", "status": 2, "outputs": [{"text": "x"}]}


def shaped(
    base: dict[str, Any], keys: list[str], ensure_ascii: bool = True
) -> st.SearchStrategy[bytes]:
    """A well-formed record with some fields replaced by arbitrary JSON."""
    changes = st.dictionaries(st.sampled_from(keys), json_values, max_size=4)
    return changes.map(lambda c: json.dumps({**base, **c}, ensure_ascii=ensure_ascii).encode())


def read(lines: list[bytes], garak: bool) -> list[Any]:
    """Every record the reader yields for a file of these lines (after a garak setup row)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        body = b"\n".join(lines) + b"\n"
        path.write_bytes(GARAK_SETUP + body if garak else body)
        records = list(InputSet([path]).records())
        check_inputs(InputSet([path]))
    return checked_records(records)


@SETTINGS
@given(st.lists(st.binary(max_size=80), min_size=1, max_size=4), st.booleans())
def test_any_bytes_give_an_attempt_or_a_line_error(lines: list[bytes], garak: bool) -> None:
    read(lines, garak)


@SETTINGS
@given(st.lists(json_values.map(lambda v: json.dumps(v).encode()), min_size=1, max_size=4))
def test_any_json_value_gives_an_attempt_or_a_line_error(lines: list[bytes]) -> None:
    read(lines, garak=False)
    read(lines, garak=True)


@SETTINGS
@given(shaped(REDJURY_BASE, REDJURY_KEYS))
def test_any_field_values_in_a_redjury_line_give_an_attempt_or_a_line_error(line: bytes) -> None:
    (rec,) = read([line], garak=False)
    if rec.attempt is not None:
        assert "entry_type" not in json.loads(line)


@SETTINGS
@given(shaped(GARAK_BASE, GARAK_KEYS))
def test_any_field_values_in_a_garak_row_give_an_attempt_or_a_line_error(line: bytes) -> None:
    records = read([line], garak=True)
    row = json.loads(line)
    if row.get("entry_type") == "attempt" and row.get("status") != 0:
        assert len(records) == 1, "an attempt row is read or reported, never skipped"


# Fields a garak row carries that redjury does not read: the fast parse only checks them.
SKIPPED_GARAK_KEYS = ["conversations", "probe_params", "targets", "reverse_translation_outputs"]


def _as_orjson_reads(value: Any) -> Any:
    """orjson reads an integer beyond 64 bits as a float; the fast parse keeps it exact."""
    if type(value) is int and not -(2**63) <= value < 2**64:
        return float(value)
    if isinstance(value, list):
        return [_as_orjson_reads(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_orjson_reads(v) for k, v in value.items()}
    return value


def _broken_utf8(line: bytes, cut: int) -> bytes:
    """The line with a byte that UTF-8 never has (or the start of a character cut short)
    put inside its last string: what a tool that cut text by bytes writes."""
    end = line.rfind(b'"')
    start = line.rfind(b'"', 0, end)
    if start < 0:
        return line
    at = start + 1 + cut % (end - start)
    return line[:at] + (b"\xff", b"\xe2\x80", b"\xed\xa0\x80")[cut % 3] + line[at:]


GARAK_LINES = shaped(GARAK_BASE, [*GARAK_ROW_FIELDS, *SKIPPED_GARAK_KEYS])
# garak writes its rows with `ensure_ascii=False`: replies in other scripts, unescaped.
GARAK_UNESCAPED = shaped(GARAK_BASE, [*GARAK_ROW_FIELDS, *SKIPPED_GARAK_KEYS], ensure_ascii=False)


@SETTINGS
@given(
    st.one_of(
        GARAK_LINES,
        GARAK_UNESCAPED,
        st.tuples(GARAK_UNESCAPED, st.integers(0, 999)).map(lambda t: _broken_utf8(*t)),
        st.binary(max_size=80),
        json_values.map(lambda v: json.dumps(v).encode()),
    )
)
def test_a_garak_line_reads_as_the_full_parse_reads_it(line: bytes) -> None:
    fast, fast_problem = garak_json_object(line)
    full, full_problem = json_object(line)
    if full is None:
        assert fast is None and fast_problem == full_problem
    else:
        assert fast_problem is None and fast is not None
        assert _as_orjson_reads(fast) == {k: v for k, v in full.items() if k in GARAK_ROW_FIELDS}


def test_a_garak_line_not_utf8_where_redjury_does_not_read_is_refused_as_any_other() -> None:
    """The fast parse skips `conversations` unbuilt; a broken byte there is still found."""
    row = {**GARAK_BASE, "outputs": [{"text": "d\u00e9j\u00e0 vu \u2014 ok"}]}
    good = json.dumps({**row, "conversations": [{"turns": ["caf\u00e9"]}]}, ensure_ascii=False)
    assert not good.isascii()
    fast, problem = garak_json_object(good.encode())
    assert problem is None and fast == {k: v for k, v in row.items() if k in GARAK_ROW_FIELDS}
    bad = good.encode().replace("caf\u00e9".encode(), b"caf\xe9")
    fast, problem = garak_json_object(bad)
    assert fast is None and problem is not None and problem == json_object(bad)[1]


@SETTINGS
@given(
    st.lists(
        st.one_of(
            shaped(GARAK_BASE, ["uuid", "seq", "status", "notes"]),
            st.binary(max_size=80),
            st.sampled_from([b'{"entry_type": "attempt", "uuid": "u", "seq": 1\n', b"\n", b""]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_the_mapped_pre_scan_sees_the_lines_a_line_by_line_read_sees(
    lines: list[bytes], final_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    read = [(h and h.groups(), b"" if h else raw) for h, raw in _read_lines(io.BytesIO(data))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.jsonl"
        path.write_bytes(data)
        scanned = [(h and h.groups(), raw) for h, raw in _scan_lines(path)]
    assert scanned == read
