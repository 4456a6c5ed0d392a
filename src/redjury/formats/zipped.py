"""Reading a member of a zip archive, Zstandard-compressed members included.

Newer inspect_ai `.eval` archives compress their entries with Zstandard (zip method 93),
which Python's zipfile reads only from 3.14 on; such a member is read raw from its local
header and decompressed with `zstandard`."""

from __future__ import annotations

import struct
import zipfile
import zlib

import zstandard

# APPNOTE 4.4.5: 93 is Zstandard; 20 is its deprecated earlier number.
ZSTD_METHODS = frozenset({93, 20})
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """The member's bytes; raises ValueError when it is damaged or cannot be read."""
    info = archive.getinfo(name)
    if info.compress_type not in ZSTD_METHODS:
        try:
            return archive.read(info)
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            raise ValueError(str(exc)) from exc
    return _read_zstd(archive, info)


def _read_zstd(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    fp = archive.fp
    if fp is None:
        raise ValueError("archive is closed")
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        raise ValueError("truncated local header")
    fields = _LOCAL_HEADER.unpack(header)
    if fields[0] != _LOCAL_SIGNATURE:
        raise ValueError("bad local header signature")
    name_len, extra_len = fields[-2], fields[-1]
    fp.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    compressed = fp.read(info.compress_size)
    try:
        data = zstandard.ZstdDecompressor().decompressobj().decompress(compressed)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from exc
    if zlib.crc32(data) != info.CRC:
        raise ValueError("CRC check failed")
    return data
