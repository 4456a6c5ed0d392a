"""Regular expressions a config supplies, compiled with RE2: matched in time linear in the
text whatever the pattern, so no pattern can stall a run (issue: `(a|aa)+$` took 94 s)."""

from __future__ import annotations

import re
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is our one-line error, not a log on stderr
# The automaton's memory (RE2's default is 8 MiB; a pattern too big for it is refused).
_OPTIONS.max_mem = 64 << 20

LinearPattern = Any  # re2's compiled pattern: search/match/finditer like `re`


def compile_linear(pattern: str) -> LinearPattern:
    """`pattern` compiled with RE2; ValueError naming the pattern and what RE2 cannot
    express (backreferences, lookarounds, possessive repeats and atomic groups have no
    linear-time matching, so RE2 has none)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        try:
            re.compile(pattern)
        except re.error as syntax:
            raise ValueError(f"not a valid regular expression: {syntax}") from None
        raise ValueError(
            f"{pattern!r} cannot be matched in linear time ({reason}): patterns run on RE2, "
            "which has no backreferences, lookarounds, possessive repeats or atomic groups"
        ) from None
