"""Reading the members of a zip archive within limits, Zstandard-compressed members included.

Newer inspect_ai `.eval` archives compress their entries with Zstandard (zip method 93),
which Python's zipfile reads only from 3.14 on; such a member is read raw from its local
header and decompressed with `zstandard`. Every member is decompressed as a stream and
counted as it goes, so an archive that inflates past its limits is refused early."""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, fields
from typing import IO, BinaryIO, cast

import zstandard

from redjury.errors import RedjuryError

# APPNOTE 4.4.5: 93 is Zstandard; 20 is its deprecated earlier number.
ZSTD_METHODS = frozenset({93, 20})
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_END = struct.Struct("<4s4H2LH")
_END_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
CHUNK = 1 << 20
MB = 1 << 20
# A member this small cannot be a bomb, whatever its ratio (a header of repeated keys).
RATIO_FLOOR = 16 * MB
# Per member of the central directory: its fixed 46 bytes and a name, extra and comment.
CENTRAL_BYTES_PER_MEMBER = 4096


class ArchiveError(RedjuryError, ValueError):
    """An archive or one of its members that cannot be read, or is over a limit."""

    def __init__(self, member: str, reason: str) -> None:
        super().__init__(f"{member}: {reason}")
        self.member = member
        self.reason = reason


@dataclass(frozen=True)
class ArchiveLimits:
    """What an archive may inflate to. The defaults fit every real `.eval` seen (members
    up to 0.7 MB, 3.8 MB in all, ratios up to 10x, 16 members) with wide margins."""

    member_mb: int = 256
    total_mb: int = 4096
    ratio: int = 100
    members: int = 100_000

    @classmethod
    def from_environment(cls) -> ArchiveLimits:
        """The defaults, each raised (or lowered) by its `REDJURY_EVAL_MAX_*` variable."""
        values: dict[str, int] = {}
        for f in fields(cls):
            name = env_name(f.name)
            raw = os.environ.get(name, "").strip()
            if not raw:
                continue
            if not raw.isdigit() or int(raw) < 1:
                raise ArchiveError(name, f"must be a whole number of at least 1, not {raw!r}")
            values[f.name] = int(raw)
        return cls(**values)


def env_name(limit: str) -> str:
    return "REDJURY_EVAL_MAX_" + limit.upper()


def open_archive(fh: BinaryIO, limits: ArchiveLimits) -> zipfile.ZipFile:
    """The archive, once its central directory is within the limits: no member named twice
    (a reader would see only one), none inflating past its limit or ratio, and in all no
    more than the total. Only declared sizes are read here; `read_member` holds to them."""
    count, central_bytes = _declared_directory(fh)
    if count > limits.members:
        raise ArchiveError("(archive)", _over(f"holds {count:,} members", limits, "members"))
    if central_bytes > CENTRAL_BYTES_PER_MEMBER * max(count, 1):
        raise ArchiveError("(archive)", f"damaged zip archive: a {central_bytes:,}-byte directory")
    try:
        archive = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise ArchiveError("(archive)", f"damaged zip archive: {exc}") from exc
    try:
        _check_members(archive.infolist(), limits)
    except ArchiveError:
        archive.close()
        raise
    return archive


def _check_members(infos: list[zipfile.ZipInfo], limits: ArchiveLimits) -> None:
    if len(infos) > limits.members:
        raise ArchiveError("(archive)", _over(f"holds {len(infos):,} members", limits, "members"))
    repeated = [name for name, n in Counter(i.filename for i in infos).items() if n > 1]
    if repeated:
        reason = "named twice in the archive; a reader would see only one of them"
        raise ArchiveError(repeated[0], reason)
    for info in infos:
        if info.file_size > limits.member_mb * MB:
            raise ArchiveError(info.filename, _over(_inflates(info.file_size), limits, "member_mb"))
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and ratio > limits.ratio:
            reason = (
                f"{_inflates(info.file_size)} from {info.compress_size:,} bytes ({ratio:,.0f}x)"
            )
            raise ArchiveError(info.filename, _over(reason, limits, "ratio"))
    total = sum(i.file_size for i in infos)
    if total > limits.total_mb * MB:
        raise ArchiveError(
            "(archive)", _over(f"members {_inflates(total)} in all", limits, "total_mb")
        )


def _inflates(size: int) -> str:
    return f"inflates to {size / MB:,.1f} MB"


def _over(what: str, limits: ArchiveLimits, limit: str) -> str:
    unit = {"member_mb": " MB per member", "total_mb": " MB in all", "ratio": "x"}.get(limit, "")
    return (
        f"{what}, over the limit of {getattr(limits, limit):,}{unit}"
        f" (raise it with {env_name(limit)})"
    )


def _declared_directory(fh: BinaryIO) -> tuple[int, int]:
    """(members, central directory bytes) as the end record declares them, read before
    zipfile builds an entry per member."""
    size = fh.seek(0, os.SEEK_END)
    start = max(0, size - _END.size - 0xFFFF)
    fh.seek(start)
    tail = fh.read()
    at = tail.rfind(_END_SIGNATURE)
    if at < 0 or len(tail) - at < _END.size:
        raise ArchiveError("(archive)", "damaged zip archive: no end record (cut short?)")
    _, _, _, _, count, central_bytes, _, _ = _END.unpack_from(tail, at)
    if count == 0xFFFF or central_bytes == 0xFFFFFFFF:
        return _declared_zip64(tail, at)
    return count, central_bytes


def _declared_zip64(tail: bytes, at: int) -> tuple[int, int]:
    """The zip64 end record: its locator sits just before the end record."""
    locator_at = at - _ZIP64_LOCATOR.size
    if locator_at < 0 or tail[locator_at : locator_at + 4] != b"PK\x06\x07":
        raise ArchiveError("(archive)", "damaged zip archive: zip64 end record missing")
    # The zip64 end record precedes the locator; zipfile reads its counts from there.
    end_at = locator_at - _ZIP64_END.size
    if end_at < 0 or tail[end_at : end_at + 4] != b"PK\x06\x06":
        raise ArchiveError("(archive)", "damaged zip archive: zip64 end record missing")
    fields64 = _ZIP64_END.unpack_from(tail, end_at)
    return fields64[-3], fields64[-2]


def read_member(archive: zipfile.ZipFile, name: str, limits: ArchiveLimits) -> bytearray:
    """The member's bytes, read as a stream and counted against its limit as they come;
    raises ArchiveError when it is damaged, cannot be read or inflates past its limit."""
    info = archive.getinfo(name)
    bound = min(info.file_size, limits.member_mb * MB)
    try:
        if info.compress_type in ZSTD_METHODS:
            return _read_zstd(archive, info, bound)
        with archive.open(info) as stream:
            return _read_counted(stream, name, bound)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise ArchiveError(name, f"damaged zip archive: {exc}") from exc
    except zstandard.ZstdError as exc:
        raise ArchiveError(name, f"damaged zip archive: zstd: {exc}") from exc


def _read_counted(stream: IO[bytes], name: str, bound: int) -> bytearray:
    data = bytearray()
    while chunk := stream.read(CHUNK):
        data += chunk
        if len(data) > bound:
            raise ArchiveError(name, f"damaged zip archive: inflates past {bound:,} bytes")
    return data


class _Region:
    """`length` bytes of a file from `start`: one member's compressed data."""

    def __init__(self, fh: IO[bytes], start: int, length: int) -> None:
        self.fh, self.at, self.left = fh, start, length

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        self.fh.seek(self.at)
        data = self.fh.read(size)
        self.at += len(data)
        self.left -= len(data)
        return data


def _read_zstd(archive: zipfile.ZipFile, info: zipfile.ZipInfo, bound: int) -> bytearray:
    fp = archive.fp
    if fp is None:
        raise ArchiveError(info.filename, "archive is closed")
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        raise ArchiveError(info.filename, "damaged zip archive: truncated local header")
    fields_ = _LOCAL_HEADER.unpack(header)
    if fields_[0] != _LOCAL_SIGNATURE:
        raise ArchiveError(info.filename, "damaged zip archive: bad local header signature")
    name_len, extra_len = fields_[-2], fields_[-1]
    start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    region = _Region(fp, start, info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], region), read_size=CHUNK)
    data = _read_counted(reader, info.filename, bound)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise ArchiveError(info.filename, "damaged zip archive: CRC check failed")
    return data
