"""How far a reply takes up its goal: the goal's topic words (its words less the stop words
of `resources/phrases/goal_stopwords.<version>.txt`), and the share of them a text uses.

A goal word is reduced to its first five letters, so "synthesis" meets "synthesize" and
"stealing" meets "steal"; that is all the stemming a lexical check needs here."""

from __future__ import annotations

import re
from functools import lru_cache

from redjury.detectors.phrases import phrase_file_lines

_WORD = re.compile(r"[^\W\d_][\w'’-]{2,}")
_STEM = 5
_SPACE_CHARS = "\n\t\r\"“”‘'’*_>#([{-/.,;:!?)]}`"
_SPACES = str.maketrans({c: " " for c in _SPACE_CHARS})
# The same for ASCII text as bytes: `bytes.translate` reads a 256-byte table, about ten
# times faster than `str.translate`'s dict on a short reply.
_ASCII_SPACE_BYTES = bytes(ord(c) for c in _SPACE_CHARS if c.isascii())
_ASCII_SPACES = bytes.maketrans(_ASCII_SPACE_BYTES, b" " * len(_ASCII_SPACE_BYTES))


@lru_cache(maxsize=8)
def goal_stopwords(version: str) -> frozenset[str] | None:
    """The stop words of a phrase-list version, or None where the version has none."""
    try:
        lines = phrase_file_lines("goal_stopwords", version)
    except ValueError:
        return None
    words = (w for line in lines if not line.lstrip().startswith("#") for w in line.split())
    return frozenset(w.lower() for w in words)


def _stems(text: str, stop: frozenset[str]) -> frozenset[str]:
    return frozenset(w[:_STEM] for w in _WORD.findall(text.lower()) if w not in stop)


@lru_cache(maxsize=4096)
def goal_terms(goal: str, stop: frozenset[str]) -> frozenset[str]:
    """The topic stems of a goal (cached: one goal is asked about many replies)."""
    return _stems(goal, stop)


def goal_overlap(terms: frozenset[str], text: str) -> float:
    """The share of a goal's topic stems found in `text` (0 when the goal has none).

    A stem counts where a word of the lower-cased text starts with it ("therm" in
    "thermite"): a substring test per stem, which keeps reading the goal cheap beside the
    phrase scan."""
    if not terms:
        return 0.0
    # Word starts only ("steal" not in "mainstealth"): the lowered text with its whitespace
    # and common punctuation as spaces, searched for " " + stem.
    low = " " + _spaced(text.lower())
    return sum((" " + term) in low for term in terms) / len(terms)


def _spaced(low: str) -> str:
    """`low` with its whitespace and common punctuation as spaces."""
    if low.isascii():
        return low.encode("ascii").translate(_ASCII_SPACES).decode("ascii")
    return low.translate(_SPACES)
