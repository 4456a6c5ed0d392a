"""Terminal lines: names and messages from the input cannot drive the terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from redjury_testing import redjury, write_jsonl

from redjury.report.terminal import TerminalPrinter, escape_control, escape_name

EVIL_PROBE = "probe\x1b]0;owned\x07\x1b[2J\rname\u202eevil"
EVIL_DETECTOR = "det\x1b[31m\x9bred"


def _row() -> dict[str, object]:
    return {"probe": EVIL_PROBE, "detector": EVIL_DETECTOR, "passed": 1, "total_evaluated": 2}


@pytest.mark.parametrize("narrow", [False, True])
def test_probe_and_detector_names_are_printed_with_control_characters_escaped(
    narrow: bool,
) -> None:
    out = io.StringIO()
    printer = TerminalPrinter(out, narrow=narrow, verbose=1, colour=False)
    printer.eval_row(_row(), ["reply\x1b[8m hidden"])
    printer.message("resuming\x1b[2J\nsecond line")
    text = out.getvalue()
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert raw not in text, repr(raw)
    assert "probe\\x1b]0;owned\\x07\\x1b[2J\\rname\\u202eevil" in text
    assert "resuming\\x1b[2J\nsecond line" in text, "a message keeps its line breaks"


@pytest.mark.parametrize("probe_len", [1, 39, 40, 41, 60])
@pytest.mark.parametrize("detector_len", [1, 29, 30, 31, 50])
def test_a_probe_and_its_detector_never_run_together(probe_len: int, detector_len: int) -> None:
    probe, detector = "p" * probe_len, "d" * detector_len
    out = io.StringIO()
    row = {"probe": probe, "detector": detector, "passed": 1, "total_evaluated": 2}
    TerminalPrinter(out, colour=False).eval_row(row)
    head = out.getvalue().split(": FAIL", 1)[0]
    assert head.split() == [probe, detector]
    if probe_len < 40 or detector_len < 30:  # a space falls between them already
        assert len(head) == max(40, probe_len) + max(30, detector_len), "garak's columns"


def test_plain_names_are_printed_as_they_are() -> None:
    assert escape_control("dan.Dan_11_0 × intent") == "dan.Dan_11_0 × intent"


def test_an_error_message_prints_no_url_credentials_and_no_escapes(tmp_path: Path) -> None:
    """Refused at load or when the judge is built: the message shows neither."""
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "1", "probe": "p", "outputs": ["x"]}])
    cfg = tmp_path / "c.yaml"
    url = "ftp://user:hunter22@host/v1\x1b]0;title\x07"
    cfg.write_text(
        json.dumps({"evaluation": {"judges": [{"name": "j", "connection": {"base_url": url}}]}})
    )
    proc = redjury("run", src, "--config", cfg, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "hunter22" not in proc.stderr and "\x1b" not in proc.stderr
    assert "redjury: error:" in proc.stderr and "\x07" not in proc.stderr


def test_gate_lines_escape_probe_names(tmp_path: Path) -> None:
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "1", "probe": "p\x1b[2Jx", "outputs": ["card 4539148803436467"]}],
    )
    proc = redjury("run", src, "--out", tmp_path / "out", "--fail-on-asr", "0")
    assert proc.returncode == 4, proc.stderr
    assert "gate failed: p\\x1b[2Jx" in proc.stdout and "\x1b" not in proc.stdout


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("leak.sys\u200btem", "leak.sys\\u200btem"),
        ("leak.sys\ufefftem", "leak.sys\\ufefftem"),
        ("le\u0430k.system", "le\\u0430k.system"),  # Cyrillic а among Latin letters
        ("dan.\u0391ttack", "dan.\\u0391ttack"),  # Greek Alpha
        ("x\x1b[31m", "x\\x1b[31m"),
    ],
)
def test_invisible_and_look_alike_characters_in_a_name_print_escaped(
    name: str, printed: str
) -> None:
    assert escape_name(name) == printed


@pytest.mark.parametrize("name", ["leak.system", "промпт.утечка", "probe.日本語", "café.x"])
def test_a_name_in_one_script_prints_as_it_is(name: str) -> None:
    assert escape_name(name) == name


def test_two_probes_that_differ_in_a_look_alike_letter_print_differently() -> None:
    lines = []
    for probe in ("leak.system", "le\u0430k.system"):
        out = io.StringIO()
        row = {"probe": probe, "detector": "pii_leak", "passed": 1, "total_evaluated": 1}
        TerminalPrinter(out, colour=False).eval_row(row)
        lines.append(out.getvalue())
    assert lines[0] != lines[1] and "\\u0430" in lines[1]
