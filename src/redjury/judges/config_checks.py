"""Checks on the judge config done at load, before anything is judged: header values that
could inject or break a request, credentials in URLs, unknown scoring types, and the
bounds on delays and timeouts. Messages never quote a value (it may be a secret)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from urllib.parse import urlsplit

from redjury.plugins import SCORING_TYPES

#: Upper bounds that keep a run finite: a failing judge gives up in bounded time.
MAX_TIMEOUT_S = 3600.0
MAX_DELAY_S = 600.0
MAX_RETRIES = 100
#: Templates, rubrics, prompt files and CA bundles are text files of a few KiB.
MAX_NAMED_FILE_BYTES = 16 * 2**20

# RFC 9110 token characters: what a header name may be made of.
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Control characters other than horizontal tab; CR and LF would start a new header.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def check_headers(headers: dict[str, str]) -> dict[str, str]:
    """Header names are tokens; values are latin-1 text with no CR, LF or other control
    characters (HTTP/1.1 sends headers as latin-1, and CR/LF would inject headers)."""
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise ValueError(
                "a header name must be letters, digits or !#$%&'*+-.^_`|~ "
                "(no spaces, colons or control characters)"
            )
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {name!r}: the value contains CR or LF")
        if _CONTROL.search(value):
            raise ValueError(f"header {name!r}: the value contains a control character")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(
                f"header {name!r}: the value has characters outside latin-1, "
                "which HTTP headers cannot carry"
            ) from None
    return headers


def check_no_credentials(url: str | None) -> str | None:
    """Refuse `scheme://user:password@host` and any `?query`: credentials in a URL end up
    in logs and reports; they belong in `api_key_env` or `headers`."""
    if url is None:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError("not a valid URL") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError(
            "the URL carries credentials (user:password@); put the key in the environment "
            "variable named by `api_key_env`, or in `headers`"
        )
    return check_no_query(url)


def check_no_query(url: str | None) -> str | None:
    """Refuse a `?query` or `#fragment`: gateways take keys as `?api_key=…`, and a URL is
    written to reports and logs."""
    if url is not None and ("?" in url or "#" in url):
        raise ValueError(
            "the URL carries a query or fragment (?…, #…), where a key would be written out; "
            "put the key in the environment variable named by `api_key_env`, or in `headers`"
        )
    return url


def check_scoring_type(name: str) -> str:
    """The scoring type is registered (built-in or through an entry point)."""
    if SCORING_TYPES.find(name) is None:
        known = SCORING_TYPES.classes()
        raise ValueError(f"unknown scoring type {name!r}; known: {', '.join(known)}")
    return name


def _read_regular(path: str | Path) -> bytes:
    """The bytes of a regular file of at most MAX_NAMED_FILE_BYTES; ValueError with the
    problem otherwise. Opened without blocking: a FIFO or a device (/dev/zero, /dev/stdin)
    is seen for what it is, never waited on or read forever."""
    shown = repr(str(path))
    try:
        fd = os.open(Path(path).expanduser(), os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"cannot read {shown}: {exc.strerror or type(exc).__name__}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{shown} is not a regular file")
        data = handle.read(MAX_NAMED_FILE_BYTES + 1)
    if len(data) > MAX_NAMED_FILE_BYTES:
        raise ValueError(f"{shown} is larger than {MAX_NAMED_FILE_BYTES // 2**20} MiB")
    return data


def named_file_problem(path: str | Path) -> str | None:
    """Why `path` cannot be used as a config-named text file, or None."""
    try:
        _read_regular(path)
    except ValueError as exc:
        return str(exc)
    return None


def read_named_file(path: str | Path, what: str) -> str:
    """The UTF-8 text of a file the config names; ValueError naming `what` and the file when
    it is not a regular file of bounded size, or not UTF-8."""
    try:
        data = _read_regular(path)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what}: {str(path)!r} is not UTF-8 text") from None
