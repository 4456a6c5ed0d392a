"""Pinned downloads shared by the calibration data and the sources' judge prompts: streamed to a
temporary file beside the destination, checked (length, SHA-256), then renamed into place, so a
partial or wrong file is never kept."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from redjury.errors import RedjuryError


class DownloadError(RedjuryError):
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
            run_to_end(_stream_into(url, fh, timeout))
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, dest)
    except aiohttp.ClientPayloadError as exc:
        raise DownloadError(f"{url}: truncated download, nothing kept: {exc}") from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise DownloadError(f"{url}: download failed: {type(exc).__name__}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


async def _stream_into(url: str, fh: Any, timeout: float) -> None:
    # trust_env: downloads honour HTTPS_PROXY / NO_PROXY and SSL_CERT_FILE like the judges.
    client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
    async with (
        aiohttp.ClientSession(timeout=client_timeout, trust_env=True) as session,
        session.get(url, auto_decompress=False) as response,
    ):
        if response.status != 200:
            raise DownloadError(f"{url}: HTTP {response.status}")
        expected_len = response.headers.get("content-length")
        received = 0
        async for chunk in response.content.iter_chunked(1 << 16):
            fh.write(chunk)
            received += len(chunk)
    # aiohttp notices most short bodies itself; this covers servers that close early
    # without one (and makes the rule explicit: a partial file is never kept).
    if expected_len is not None and received != int(expected_len):
        raise DownloadError(f"{url}: truncated download ({received} of {expected_len} bytes)")


def run_to_end(coro: Any) -> Any:
    """Run a coroutine to the end from sync code, also when called inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
