"""Text as a matcher should read it (NFKC, so full-width digits are ASCII ones; invisible
characters dropped), with the way back from each of its spans to the span of the original."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Format characters (zero-width space and joiners, soft hyphen, BOM, bidi controls) and the
# other characters that show nothing: dropped, so "4111\u200b1111…" reads as one number.
_INVISIBLE = re.compile(r"[\u00ad\u034f\u115f\u1160\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]")  # fmt: skip
# A JSON string escape (`\uff14`), as a judge echoing a request body writes non-ASCII.
_ESCAPE = r"\\+u(?P<hex>[0-9a-fA-F]{4})"
# An email's "@" and "." written out, in brackets only: `bob(at)example(dot)com`,
# `bob [at] example [dot] com`. Bare words ("bob at example dot com") read as prose.
_SPELLED = r" ?[(\[] ?(?P<word>[aA][tT]|[dD][oO][tT]) ?[)\]] ?"
_SPELLED_AS = {"at": "@", "dot": "."}
_TOKENS = {
    (False, False): re.compile(r"[^\x00-\x7f]"),
    (True, False): re.compile(rf"{_ESCAPE}|[^\x00-\x7f]"),
    (False, True): re.compile(rf"{_SPELLED}|[^\x00-\x7f]"),
    (True, True): re.compile(rf"{_ESCAPE}|{_SPELLED}|[^\x00-\x7f]"),
}


@dataclass(frozen=True, slots=True)
class NormalisedText:
    """`text` read from `original`: character i of `text` came from `original[starts[i]:
    ends[i]]` (a decoded escape or a spelled-out "(at)" came from several characters)."""

    original: str
    text: str
    starts: list[int]
    ends: list[int]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of `original` that `text[start:end]` (end > start) was read from."""
        return self.starts[start], self.ends[end - 1]

    def original_spans(self, value: str) -> list[tuple[int, int]]:
        """Where each occurrence of `value` in `text` was read from in `original`."""
        spans = []
        at = self.text.find(value) if value else -1
        while at != -1:
            spans.append(self.original_span(at, at + len(value)))
            at = self.text.find(value, at + 1)
        return spans


def might_spell_at(text: str) -> bool:
    """A cheap test for "(at)" / "[at]" in an ASCII text: the closing brackets are few,
    and a regex over the whole text cost more than the rest of the PII scan."""
    for close in ")]":
        i = text.find(close)
        while i != -1:
            j = i - 2 if i > 0 and text[i - 1] == " " else i - 1
            if j >= 1 and text[j] in "tT" and text[j - 1] in "aA":
                return True
            i = text.find(close, i + 1)
    return False


def normalised(text: str, *, escapes: bool = False, spelled: bool = False) -> NormalisedText | None:
    """`text` as matchers read it, or None when that is `text` itself (the common case,
    decided without copying it). `escapes`: decode JSON `\\uXXXX` escapes; `spelled`: read
    a bracketed "(at)" / "(dot)" as "@" / "."."""
    if text.isascii():
        if not (escapes and "\\u" in text) and not (spelled and might_spell_at(text)):
            return None
    elif (
        unicodedata.is_normalized("NFKC", text)
        and _INVISIBLE.search(text) is None
        and not (escapes and "\\u" in text)
        and not (spelled and might_spell_at(text))
    ):
        return None
    return _read(text, _TOKENS[escapes, spelled])


def _read(text: str, tokens: re.Pattern[str]) -> NormalisedText:
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    done = 0
    for found in tokens.finditer(text):
        start, end = found.span()
        if start > done:  # ASCII in between, as it is
            parts.append(text[done:start])
            starts.extend(range(done, start))
            ends.extend(range(done + 1, start + 1))
        done = end
        if found.lastgroup == "word":
            read = _SPELLED_AS[found.group("word").lower()]
        else:
            char = chr(int(found.group("hex"), 16)) if found.lastgroup == "hex" else found.group()
            read = _read_char(char)
        parts.append(read)
        starts.extend([start] * len(read))
        ends.extend([end] * len(read))
    parts.append(text[done:])
    starts.extend(range(done, len(text)))
    ends.extend(range(done + 1, len(text) + 1))
    return NormalisedText(text, "".join(parts), starts, ends)


def _read_char(char: str) -> str:
    if _INVISIBLE.match(char) or unicodedata.category(char) == "Cf":
        return ""
    return unicodedata.normalize("NFKC", char)
