"""Archive limits of the `.eval` reader: bombs, damaged and ambiguous archives."""

from __future__ import annotations

import json
import struct
import warnings
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from formats_testing import DATA, attempts, peak_rss_mb, records
from test_inspect_ai import eval_zip

from redjury.inputs import detect_format

LOG = DATA / "inspect_log.json"
MB = 1 << 20


@dataclass
class Member:
    """A member written by hand: its compressed bytes as chunks, with declared sizes."""

    name: str
    method: int
    crc: int
    size: int
    chunks: Iterable[bytes]


def write_zip(path: Path, members: list[Member]) -> Path:
    """A zip archive streamed to disk, member by member (sizes below 4 GiB: no zip64)."""
    central = bytearray()
    with path.open("wb") as out:
        for m in members:
            offset, raw_name = out.tell(), m.name.encode()
            out.write(b"\0" * (30 + len(raw_name)))  # the local header, once sizes are known
            packed = sum(out.write(chunk) for chunk in m.chunks)
            end = out.tell()
            sizes = (m.method, 0, 0x21, m.crc, packed, m.size, len(raw_name))
            out.seek(offset)
            out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, *sizes, 0) + raw_name)
            out.seek(end)
            central += struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, *sizes, 0, 0, 0, 0, 0, offset
            )
            central += raw_name
        start = out.tell()
        out.write(central)
        n = len(members)
        out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), start, 0))
    return path


def stored(name: str, data: bytes) -> Member:
    return Member(name, 0, zlib.crc32(data), len(data), [data])


def whitespace_bomb(name: str, size: int) -> Member:
    """A sample of valid JSON padded with `size` bytes of spaces, deflated one MiB at a
    time: after a full flush the deflater starts afresh, so each MiB packs to the same
    ~1 KB and is packed once, and the CRC is the only pass over all the bytes."""
    head, tail, pad = b'{"id": 1, "epoch": 1, "x": 1', b"}", b" " * MB
    blocks = size // MB
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(pad) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(pad) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    last = deflate.compress(tail) + deflate.flush()
    crc = zlib.crc32(head)
    for _ in range(blocks):
        crc = zlib.crc32(pad, crc)
    crc = zlib.crc32(tail, crc)
    chunks = [first, *([block] * blocks), last]
    return Member(name, zipfile.ZIP_DEFLATED, crc, len(head) + blocks * MB + len(tail), chunks)


def header_member() -> Member:
    log = json.loads(LOG.read_text())
    log.pop("samples")
    return stored("header.json", json.dumps(log).encode())


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "bomb.eval"
    members = [header_member(), whitespace_bomb("samples/1_epoch_1.json", 3000 * MB)]
    return write_zip(path, members)


def test_a_member_inflating_to_3_gb_is_refused_unread_in_little_memory(
    bomb: Path, tmp_path: Path
) -> None:
    assert bomb.stat().st_size < 4 * MB
    assert zipfile.ZipFile(bomb).getinfo("samples/1_epoch_1.json").file_size > 3000 * MB
    code, stderr, rss = peak_rss_mb("-m", "redjury.cli", "run", bomb, "--out", tmp_path / "out")
    assert code == 2, stderr
    assert f"{bomb}:1: samples/1_epoch_1.json: inflates to 3,000.0 MB" in stderr
    assert (
        "over the limit of 256 MB per member (raise it with REDJURY_EVAL_MAX_MEMBER_MB)" in stderr
    )
    assert rss < 200, rss


def test_a_raised_member_limit_still_refuses_the_bomb_by_its_ratio(
    bomb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDJURY_EVAL_MAX_MEMBER_MB", "8192")
    (rec,) = records(bomb)
    assert rec.error is not None and rec.error.field == "samples/1_epoch_1.json"
    assert "over the limit of 100x (raise it with REDJURY_EVAL_MAX_RATIO)" in rec.error.reason


def test_a_member_inflating_past_its_declared_size_is_damaged(tmp_path: Path) -> None:
    # zipfile reads no more than the size the directory declares; the CRC then fails.
    big = whitespace_bomb("samples/1_epoch_1.json", 2 * MB)
    big.size = 1000
    archive = write_zip(tmp_path / "lying.eval", [header_member(), big])
    (rec,) = records(archive)
    assert rec.error is not None and rec.error.where == "sample 1 epoch 1"
    assert "damaged zip archive" in rec.error.reason


def limits_env(monkeypatch: pytest.MonkeyPatch, **limits: str) -> None:
    for name, value in limits.items():
        monkeypatch.setenv(f"REDJURY_EVAL_MAX_{name.upper()}", value)


def test_member_count_and_total_limits_name_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = eval_zip(tmp_path / "log.eval", json.loads(LOG.read_text()))
    count = len(zipfile.ZipFile(archive).namelist())
    limits_env(monkeypatch, members=str(count - 1))
    (rec,) = records(archive)
    assert rec.error is not None and rec.error.field == "(archive)"
    assert rec.error.reason == (
        f"holds {count} members, over the limit of {count - 1} "
        "(raise it with REDJURY_EVAL_MAX_MEMBERS)"
    )
    limits_env(monkeypatch, members=str(count))
    assert len(attempts(archive)) == len(attempts(LOG))


def test_a_limit_that_is_not_a_number_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = eval_zip(tmp_path / "log.eval", json.loads(LOG.read_text()))
    limits_env(monkeypatch, total_mb="lots")
    (rec,) = records(archive)
    assert rec.error is not None and rec.error.field == "REDJURY_EVAL_MAX_TOTAL_MB"
    assert "a whole number" in rec.error.reason


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.999])
def test_a_cut_archive_is_a_damaged_zip_archive_not_jsonl(tmp_path: Path, keep: float) -> None:
    whole = eval_zip(tmp_path / "log.eval", json.loads(LOG.read_text())).read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(whole[: int(len(whole) * keep)])
    assert detect_format(cut) == "inspect_ai"
    (rec,) = records(cut)
    assert rec.error is not None and (rec.error.line, rec.error.field) == (1, "(archive)")
    assert rec.error.reason.startswith("damaged zip archive")


def test_a_member_named_twice_is_refused_not_read_as_one(tmp_path: Path) -> None:
    archive = eval_zip(tmp_path / "log.eval", json.loads(LOG.read_text()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate, and writes it
        with zipfile.ZipFile(archive, "a") as z:
            z.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1}))
    (rec,) = records(archive)
    assert rec.error is not None and rec.error.field == "samples/1_epoch_1.json"
    assert "named twice" in rec.error.reason


def test_a_zstandard_member_inflating_past_its_declared_size_is_refused(tmp_path: Path) -> None:
    import zstandard

    data = b'{"id": 1, "epoch": 1}' + b" " * (2 * MB)
    packed = zstandard.ZstdCompressor().compress(data)
    lying = Member("samples/1_epoch_1.json", 93, zlib.crc32(data), 1000, [packed])
    archive = write_zip(tmp_path / "zstd.eval", [header_member(), lying])
    (rec,) = records(archive)
    assert rec.error is not None and rec.error.where == "sample 1 epoch 1"
    assert "damaged zip archive: inflates past 1,000 bytes" in rec.error.reason
