"""Pinned downloads shared by the calibration data and the sources' judge prompts: streamed to a
temporary file beside the destination, checked (length, SHA-256), then renamed into place, so a
partial or wrong file is never kept."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx


class DownloadError(Exception):
    """A download that failed or did not match; the message says what and where."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_sha256(path: Path, expected: str | None, what: str, where: str) -> None:
    """Raise DownloadError when `path`'s SHA-256 is not `expected` (no check when None)."""
    if expected is None:
        return
    actual = sha256_of(path)
    if actual != expected:
        raise DownloadError(f"{what} ({where}): expected {expected}, got {actual}")


def download_pinned(
    url: str, dest: Path, timeout: float, check: Callable[[Path], None] | None = None
) -> None:
    """Stream `url` into a temporary file beside `dest`; `check` it (e.g. its SHA-256) and
    rename only once complete and checked, so a partial or wrong file is never kept."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            received = 0
            with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise DownloadError(f"{url}: HTTP {response.status_code}")
                expected_len = response.headers.get("content-length")
                for chunk in response.iter_raw():
                    fh.write(chunk)
                    received += len(chunk)
            # httpx notices most short bodies itself; this covers servers that close early
            # without one (and makes the rule explicit: a partial file is never kept).
            if expected_len is not None and received != int(expected_len):
                raise DownloadError(
                    f"{url}: truncated download ({received} of {expected_len} bytes)"
                )
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, dest)
    except httpx.RemoteProtocolError as exc:
        raise DownloadError(f"{url}: truncated download, nothing kept: {exc}") from exc
    except httpx.HTTPError as exc:
        raise DownloadError(f"{url}: download failed: {type(exc).__name__}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
