"""Checks on the judge config done at load, before anything is judged: header values that
could inject or break a request, credentials in URLs, unknown scoring types, and the
bounds on delays and timeouts. Messages never quote a value (it may be a secret)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: Upper bounds that keep a run finite: a failing judge gives up in bounded time.
MAX_TIMEOUT_S = 3600.0
MAX_DELAY_S = 600.0
MAX_RETRIES = 100

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
    """Refuse `scheme://user:password@host`: credentials in a URL end up in logs and
    reports; they belong in `api_key_env` or `headers`."""
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
    return url


def check_scoring_type(name: str) -> str:
    """The scoring type is registered (built-in or through an entry point)."""
    from redjury.judges.scoring import scoring_types

    known = scoring_types()
    if name not in known:
        raise ValueError(f"unknown scoring type {name!r}; known: {', '.join(known)}")
    return name
