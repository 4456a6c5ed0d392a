"""Recognising each tool's records from the content, with no flag."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from formats_testing import DATA, attempts

import redjury
from redjury import formats, inputs
from redjury.formats import streamed
from redjury.inputs import detect_format


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("promptfoo_v3_redteam.json", "promptfoo"),
        ("promptfoo_v2.json", "promptfoo"),
        ("promptfoo_v1.json", "promptfoo"),
        ("inspect_log.json", "inspect_ai"),
        ("pyrit_memory.json", "pyrit_memory"),
        ("pyrit_attacks.json", "pyrit_attacks"),
        ("pyrit_scenario.json", "pyrit_attacks"),
        ("azure_scan.json", "azure_red_team"),
    ],
)
def test_each_fixture_is_recognised_pretty_printed_or_on_one_line(
    name: str, fmt: str, tmp_path: Path
) -> None:
    assert detect_format(DATA / name) == fmt
    one_line = tmp_path / name
    one_line.write_text(json.dumps(json.loads((DATA / name).read_text())))
    assert detect_format(one_line) == fmt


def test_a_document_whose_first_bytes_say_nothing_is_recognised_by_parsing_it(
    tmp_path: Path,
) -> None:
    log = json.loads((DATA / "inspect_log.json").read_text())
    reordered = {"samples": log["samples"], "padding": "x" * 100_000}
    reordered.update({k: v for k, v in log.items() if k != "samples"})
    src = tmp_path / "log.json"
    src.write_text(json.dumps(reordered, indent=1))
    assert detect_format(src) == "inspect_ai"


def test_an_eval_archive_is_inspect_and_jsonl_stays_redjury_or_garak(tmp_path: Path) -> None:
    archive = tmp_path / "x.eval"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("header.json", "{}")
    assert detect_format(archive) == "inspect_ai"
    ours = tmp_path / "a.jsonl"
    ours.write_text('{"id": "a", "output": "hi", "results": []}\n{"id": "b"}\n')
    assert detect_format(ours) == "redjury"
    garak = tmp_path / "g.jsonl"
    garak.write_text('{"entry_type": "start_run setup"}\n')
    assert detect_format(garak) == "garak"


def test_a_tool_key_quoted_inside_a_string_does_not_decide_the_format(tmp_path: Path) -> None:
    doc = json.loads((DATA / "promptfoo_v2.json").read_text())
    doc["results"]["results"][0]["response"]["output"] = '{"attack_details": [1], "eval": {}}'
    src = tmp_path / "results.json"
    src.write_text(json.dumps({"config": {"note": "first"}, **doc}, indent=2))
    assert detect_format(src) == "promptfoo"


def test_a_document_written_with_a_byte_order_mark_is_recognised_and_read(tmp_path: Path) -> None:
    src = tmp_path / "scan.json"
    src.write_bytes(b"\xef\xbb\xbf" + (DATA / "azure_scan.json").read_bytes())
    assert detect_format(src) == "azure_red_team"
    assert len(attempts(src)) == 3


def test_a_jsonl_file_with_a_long_first_line_stays_redjury(tmp_path: Path) -> None:
    src = tmp_path / "long.jsonl"
    src.write_text(json.dumps({"id": "a", "output": "x" * 200_000}) + "\n" + '{"id": "b"}\n')
    assert detect_format(src) == "redjury"


def _bytes_streamed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each stream read of a document hands its parser, as they are read."""
    read: list[int] = []
    real = streamed._Reader.read

    def counting(self: Any, size: int = -1) -> bytes:
        data = real(self, size)
        read.append(len(data))
        return data

    monkeypatch.setattr(streamed._Reader, "read", counting)
    return read


def test_a_jsonl_line_longer_than_the_first_line_limit_is_not_streamed_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply of hundreds of megabytes took minutes to recognise, streamed whole (and
    three times); the shape is looked for in the first FIRST_LINE_BYTES past the line's."""
    monkeypatch.setattr(formats, "FIRST_LINE_BYTES", 4096)
    read = _bytes_streamed(monkeypatch)
    src = tmp_path / "long.jsonl"
    reply = "x" * (4 * streamed.CHUNK)
    src.write_text(json.dumps({"id": "a", "outputs": [reply]}) + "\n" + '{"id": "b"}\n')
    assert detect_format(src) == "redjury"
    assert 0 < sum(read) <= 4096 + streamed.CHUNK < src.stat().st_size


def test_a_one_line_document_longer_than_the_limit_is_recognised_by_its_first_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formats, "FIRST_LINE_BYTES", 4096)
    doc = json.loads((DATA / "promptfoo_v2.json").read_text())
    src = tmp_path / "results.json"
    src.write_text(json.dumps({**doc, "padding": "x" * (4 * streamed.CHUNK)}))
    assert detect_format(src) == "promptfoo"


def test_a_run_recognises_each_input_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    real = inputs.detect_format

    def counted(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(inputs, "detect_format", counted)
    src = tmp_path / "a.jsonl"
    src.write_text('{"id": "a", "outputs": ["hi"]}\n')
    redjury.evaluate([src], None, out=tmp_path / "out")
    assert calls == [src]
