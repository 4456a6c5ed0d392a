"""Checks on what a judge server sends before any of it is used: token counts, first-token
logprobs and JSON answers with a repeated key. A failed check makes the vote abstain."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import orjson

from redjury.errors import RedjuryError

#: Token counts above this are not counts (and would not survive a float or SQLite's int64).
MAX_COUNT = 2**53
# Servers round logprobs: 0 may arrive a few ulps high, and a top-k's probabilities may sum
# a hair past 1. Anything beyond these is not rounding.
LOGPROB_TOLERANCE = 1e-6
PROBABILITY_SUM_TOLERANCE = 1e-3


class InvalidAnswer(RedjuryError, ValueError):
    """A judge's answer holds a value no honest server sends; the message names it."""


def _shown(token: str) -> str:
    return repr(token[:20] + ("…" if len(token) > 20 else ""))


def token_count(value: Any, what: str) -> int:
    """A usage count as an int: absent is 0; otherwise a whole number in 0..2^53."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidAnswer(f"{what} is not a number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InvalidAnswer(f"{what} is not a whole number")
    if not 0 <= value <= MAX_COUNT:
        raise InvalidAnswer(f"{what} is outside 0..2^53")
    return int(value)


def logprob(value: Any, token: str) -> float:
    """One logprob: a finite number ≤ 0 (rounding above 0 reads as 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidAnswer(f"the logprob of {_shown(token)} is not a number")
    try:
        number = float(value)
    except OverflowError:
        raise InvalidAnswer(f"the logprob of {_shown(token)} is not finite") from None
    if not math.isfinite(number):
        raise InvalidAnswer(f"the logprob of {_shown(token)} is not finite")
    if number > LOGPROB_TOLERANCE:
        raise InvalidAnswer(f"the logprob of {_shown(token)} is {number:.6g}, above 0")
    return min(number, 0.0)


def logprob_table(pairs: Iterable[tuple[Any, Any]]) -> dict[str, float]:
    """token → logprob of the first token's alternatives, each checked; a token listed twice
    or probabilities that add up past 1 mean the table is not a distribution."""
    table: dict[str, float] = {}
    for token, value in pairs:
        if not isinstance(token, str):
            raise InvalidAnswer("a logprob's token is not text")
        if token in table:
            raise InvalidAnswer(f"the token {_shown(token)} is listed twice among the logprobs")
        table[token] = logprob(value, token)
    total = math.fsum(math.exp(lp) for lp in table.values())
    if total > 1.0 + PROBABILITY_SUM_TOLERANCE:
        raise InvalidAnswer(f"the first token's probabilities add up to {total:.4f}, above 1")
    return table


class _RepeatedKey(RedjuryError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _RepeatedKey
    return dict(pairs)


def json_object_once(text: str) -> Any:
    """The JSON value of an answer; InvalidAnswer when an object repeats a key (JSON keeps
    only the last value, so `{"answer": "yes", "answer": "no"}` says both)."""
    data = orjson.loads(text)
    # A dropped repeat takes its quote characters with it; only then parse again, slowly.
    try:
        quotes = orjson.dumps(data).count(b'"')
    except orjson.JSONEncodeError:  # nested deeper than orjson writes
        quotes = -1
    if quotes == text.count('"') and "\\u0022" not in text:
        return data
    try:
        json.loads(text, object_pairs_hook=_unique_pairs)
    except _RepeatedKey:
        raise InvalidAnswer("unreadable JSON answer: it repeats a key") from None
    except (ValueError, RecursionError):
        pass
    return data
