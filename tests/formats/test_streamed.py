"""JSON documents read as streams: records as parsed, errors by line, bounded nesting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from formats_testing import DATA, attempts, peak_rss_mb, records

from redjury.formats.streamed import MAX_DEPTH, items, skeleton

V3 = DATA / "promptfoo_v3_redteam.json"


def test_items_are_read_across_chunks_with_strings_that_hold_brackets_and_escapes(
    tmp_path: Path,
) -> None:
    rows = [{"i": i, "text": '[{"x\\' * 50 + "\\ud83d\\ude00 ]]}}" * 40} for i in range(400)]
    src = tmp_path / "rows.json"
    src.write_text(json.dumps({"rows": rows}))
    assert src.stat().st_size > 4 * (1 << 16)
    assert list(items(src, "rows.item")) == rows


def test_a_lone_surrogate_escape_is_read_as_a_replacement_character(tmp_path: Path) -> None:
    src = tmp_path / "cut.json"
    src.write_bytes(b'{"rows": ["a \\ud83d", "\\\\ud83d", "\\ude00 b", "\\ud83d\\ude00"]}')
    assert list(items(src, "rows.item")) == ["a \ufffd", "\\ud83d", "\ufffd b", "\U0001f600"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_nesting_deeper_than_the_limit_is_a_document_error(tmp_path: Path, depth: int) -> None:
    # ijson keeps a prefix per level: 30,000 levels took 2 GB before this limit.
    doc = json.loads(V3.read_text())
    src = tmp_path / "deep.json"
    text = json.dumps(doc)
    src.write_text(text.replace('"evalId"', '"x": ' + "[" * depth + "]" * depth + ', "evalId"', 1))
    (rec,) = records(src)
    assert rec.error is not None and rec.error.field == "(file)"
    assert f"nested more than {MAX_DEPTH} levels deep" in rec.error.reason


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    doc = json.loads(V3.read_text())
    doc["results"]["results"][0]["response"]["output"] = "[" * (MAX_DEPTH * 3) + '\\"['
    src = tmp_path / "brackets.json"
    src.write_text(json.dumps(doc))
    assert len(attempts(src)) == len(attempts(V3))


def test_a_document_whose_records_come_first_is_recognised_by_its_shape(tmp_path: Path) -> None:
    log = json.loads((DATA / "azure_scan.json").read_text())
    src = tmp_path / "scan.json"
    src.write_text(json.dumps({"padding": "x" * 100_000, **log}, indent=1))
    shape = skeleton(src)
    assert isinstance(shape, dict) and len(shape["attack_details"]) == 1
    read = [(a.id.split(":")[-1], a.outputs) for a in attempts(src).values()]
    expected = [
        (a.id.split(":")[-1], a.outputs) for a in attempts(DATA / "azure_scan.json").values()
    ]
    assert read == expected and len(read) == 3


def write_big_promptfoo(src: Path, rows: int) -> None:
    doc = json.loads(V3.read_text())
    template = doc["results"]["results"]
    with src.open("w") as out:
        out.write(json.dumps({"evalId": doc["evalId"]})[:-1] + ', "results": {"results": [')
        for i in range(rows):
            row = {**template[i % len(template)], "id": f"row-{i}"}
            out.write(("," if i else "") + json.dumps(row, indent=2))
        out.write('], "version": 3}}')


def test_memory_stays_flat_in_the_size_of_a_promptfoo_file(tmp_path: Path) -> None:
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    write_big_promptfoo(small, 500)
    write_big_promptfoo(big, 30_000)
    assert big.stat().st_size > 40 * small.stat().st_size
    read = (
        "from pathlib import Path; from redjury.inputs import InputSet; "
        "n = sum(r.attempt is not None for r in InputSet([Path({!r})]).records()); "
        "assert n == {}, n"
    )
    runs = [peak_rss_mb("-c", read.format(str(src), n)) for src, n in ((small, 500), (big, 30_000))]
    assert [code for code, _, _ in runs] == [0, 0], runs
    base, grown = runs[0][2], runs[1][2] - runs[0][2]
    assert grown < 20, (base, grown)
