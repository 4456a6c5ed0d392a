"""Why judges abstained, in a few causes a user can act on: the reason strings the engine and
the asking code write, sorted into transport error, timeout, HTTP status, unreadable answer."""

from __future__ import annotations

from collections.abc import Mapping

TRANSPORT, TIMEOUT, HTTP_STATUS, UNREADABLE, OTHER = (
    "transport error",
    "timeout",
    "HTTP status",
    "unreadable answer",
    "other",
)
CAUSES = (TRANSPORT, TIMEOUT, HTTP_STATUS, UNREADABLE, OTHER)

# Reason prefixes, as engine.py, litellm_provider.py and asking.py word them.
_PREFIXES = (
    ("timeout", TIMEOUT),
    ("HTTP ", HTTP_STATUS),
    ("connect failed", TRANSPORT),
    ("connection error", TRANSPORT),
    ("proxy connect failed", TRANSPORT),
    ("TLS failed", TRANSPORT),
    ("malformed response", UNREADABLE),
    ("unreadable", UNREADABLE),
    ("no logprobs", UNREADABLE),
)


def abstention_cause(reason: str | None) -> str:
    """The cause of one abstention; `other` for the rest (e.g. a template input was missing)."""
    text = reason or ""
    for prefix, cause in _PREFIXES:
        if text.startswith(prefix):
            return cause
    return OTHER


def describe_causes(counts: Mapping[str, int]) -> str:
    """`3 × timeout, 1 × HTTP status`, in CAUSES order; empty when nothing abstained (the
    count first: `HTTP status 20` read as a status code)."""
    return ", ".join(f"{counts[c]} × {c}" for c in CAUSES if counts.get(c))
