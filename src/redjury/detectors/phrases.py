"""Refusal and completion phrase matching shared by the heuristic detectors: versioned
phrase lists in `resources/phrases/`, each compiled into one regular expression."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from re import _constants, _parser  # type: ignore[attr-defined]
from typing import Any, NamedTuple

from pydantic import Field, field_validator

from redjury.detectors.base import DetectorParams
from redjury.detectors.user_patterns import LinearPattern, compile_linear

# Refusals count only where they open the reply, a line, a sentence or a clause: the same
# words deep inside a compliant answer ("…so that I cannot be traced") are not a refusal.
_OPENING = r"(?:\n|[.!?…:;,)\]\"”]|(?<!\w)(?:but|however|so|and))"
_OPENING_FILL = r"[\s\"“”'*_>#\-]*"
# Entries start a word: the scan steps over the character before each one, which must be
# one of these. Starting every match with one small character class, rather than with
# ^, \b or a lookbehind, lets `re` skip the middle of words quickly; that is most of the
# speed of a scan. The refusal scan, run on every reply, goes further: one search per
# character of the class (`_SearchPerChar`), each skipping ahead to its character.
_WORD_START = r"[\s\"“”'‘*_>#(\[\-/]"
# The same characters one by one (see `PhraseMatcher._refusal_matches`). Unicode has no
# whitespace above U+3000; a test checks these against `_WORD_START` over all code points.
_WORD_STARTS = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\"“”'‘*_>#([-/"
_ASCII_WORD_STARTS = "".join(c for c in _WORD_STARTS if c.isascii())
_COMMON_WORD_STARTS = " \n\"'*_>#([-/"
_LEAD_GAP = r"[\s,;:—–\-]*"
# How far back from a refusal phrase its opening (and any lead-ins) may start.
_OPENING_WINDOW = 240
# Up to this many characters one search with the leading class costs less than the
# searches per character (`PhraseMatcher._refusal_matches`): a short reply takes that one.
_SHORT_TEXT = 120
_EVIDENCE_LIMIT = 60


class PhraseParams(DetectorParams):
    """Settings shared by the phrase-matching detectors."""

    phrases: str = Field(
        default="v3",
        pattern=r"^v[0-9]+$",
        description="Version of the phrase lists in resources/phrases/ (<kind>.<version>.txt).",
    )
    extra_refusals: list[str] = Field(
        default_factory=list,
        description="More refusal entries, in the phrase-file syntax (plain, re:, lead:).",
    )
    extra_completions: list[str] = Field(
        default_factory=list,
        description="More task-completion entries, in the phrase-file syntax.",
    )
    extra_exclusions: list[str] = Field(
        default_factory=list,
        description="More refusal exclusions: openings that look like a refusal but are not.",
    )

    @field_validator("extra_refusals", "extra_completions", "extra_exclusions")
    @classmethod
    def _entries_compile(cls, entries: list[str]) -> list[str]:
        # A bad entry is a config error when the config loads, not a crash at the first reply.
        for i, entry in enumerate(entries):
            try:
                plain, regexes, lead_regexes = split_user_entries([entry])
                parse_entries(plain)
                for pattern in regexes + lead_regexes:
                    _check_case(pattern)
                    compile_linear(pattern)
            except ValueError as exc:
                raise ValueError(f"entry {i}: {exc}") from None
        return entries


class UserEntries(NamedTuple):
    """A config's phrase entries: plain lines (they join the built-in lists' `re` matcher:
    literal words, nothing to backtrack over), and `re:` patterns, matched with RE2 in
    linear time (entries and lead-ins apart)."""

    plain: list[str]
    regexes: list[str]
    lead_regexes: list[str]


def split_user_entries(lines: list[str]) -> UserEntries:
    found = UserEntries([], [], [])
    for raw in lines:
        line = raw.strip()
        lead = line.startswith("lead:")
        body = line[len("lead:") :].strip() if lead else line
        if body.startswith("re:"):
            target = found.lead_regexes if lead else found.regexes
            target.append(body[len("re:") :].strip())
        else:
            found.plain.append(raw)
    return found


def phrase_atoms(phrase: str) -> list[str]:
    """A plain phrase as a sequence of regex atoms over lower-cased text: whitespace
    matches any whitespace run, an apostrophe matches ' or ’ or nothing, and a word
    character at the end must end a word (the start is always a word start, see
    `_WORD_START`)."""
    parts: list[str] = []
    for char in phrase.lower():
        if char.isspace():
            if parts and parts[-1] != r"\s+":
                parts.append(r"\s+")
        elif char in "'’":
            parts.append("['’]?")
        else:
            parts.append(re.escape(char))
    if not parts:
        raise ValueError("empty phrase")
    if phrase.rstrip()[-1:].isalnum():
        parts.append(r"\b")
    return parts


def phrase_to_regex(phrase: str) -> str:
    """A plain phrase as a regex over lower-cased text (see `phrase_atoms`)."""
    return "".join(phrase_atoms(phrase))


_UPPER_OUTSIDE_ESCAPES = re.compile(r"(?:\\.|\(\?P)|([A-Z])")


def _check_case(pattern: str) -> None:
    if any(m.group(1) for m in _UPPER_OUTSIDE_ESCAPES.finditer(pattern)):
        raise ValueError(f"re: entries match lower-cased text; write {pattern!r} in lower case")


# A line-start entry's leading `\s*` would cross newlines: at each of n blank lines it ran
# to the end of them all, n² steps (20,000 blank lines took 195 s). Whitespace other than
# a newline finds the same lines: the match starts at the last blank line instead.
_LINE_START_SPACE = r"^\s*"


def _regex_entry(pattern: str) -> list[str]:
    _check_case(pattern)
    if pattern.startswith(_LINE_START_SPACE):
        pattern = r"^[^\S\n]*" + pattern[len(_LINE_START_SPACE) :]
    try:
        re.compile(pattern)  # a bad entry fails when loaded, naming itself
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    if _nested_repeat(_parser.parse(pattern)):
        raise ValueError(
            f"{pattern!r} repeats a part that itself repeats (like `(a+)+`): on some replies "
            "that takes exponential time; write it without the nesting, or make the inner "
            "repeat possessive (`a++`)"
        )
    if pattern.startswith("^"):
        # Every entry follows a `_WORD_START` character; a leading ^ asks that it was a
        # newline (the text is matched with a "\n" in front, so the first line has one).
        # As its own atom it is shared by all line-start entries in the trie.
        return ["(?<=\n)", f"(?:{pattern[1:]})"]
    return [f"(?:{pattern})"]


_REPEATS = (_constants.MAX_REPEAT, _constants.MIN_REPEAT)


def _nested_repeat(parsed: Any, inside_repeat: bool = False) -> bool:
    """Whether a parsed pattern repeats (more than once) a part holding a repeat of varying
    length: the shape that backtracks exponentially."""
    for op, arg in parsed:
        if op in _REPEATS:
            low, high, body = arg
            if inside_repeat and low != high:
                return True
            if _nested_repeat(body, inside_repeat or high > 1):
                return True
        elif any(_nested_repeat(part, inside_repeat) for part in _subpatterns(op, arg)):
            return True
    return False


def _subpatterns(op: Any, arg: Any) -> list[Any]:
    """The parts of a group, alternation or lookaround; no parts for possessive repeats and
    atomic groups: they never backtrack, so what they hold is not counted."""
    if op is _constants.SUBPATTERN:
        return [arg[-1]]
    if op is _constants.BRANCH:
        return list(arg[1])
    if op in (_constants.ASSERT, _constants.ASSERT_NOT):
        return [arg[1]]
    if op is _constants.GROUPREF_EXISTS:
        return [part for part in arg[1:] if part is not None]
    return []


def parse_entries(lines: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """(entries, lead-ins) of a phrase file's lines, each a sequence of regex atoms over
    lower-cased text (a `re:` entry is one grouped atom, after a line-start atom for ^)."""
    entries: list[list[str]] = []
    leads: list[list[str]] = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        target = entries
        if line.startswith("lead:"):
            target, line = leads, line[len("lead:") :].strip()
        if line.startswith("re:"):
            target.append(_regex_entry(line[len("re:") :].strip()))
        else:
            target.append(phrase_atoms(line))
    return entries, leads


def phrase_file_lines(kind: str, version: str) -> list[str]:
    """The lines of `resources/phrases/<kind>.<version>.txt`."""
    folder = resources.files("redjury") / "resources" / "phrases"
    path = folder / f"{kind}.{version}.txt"
    if not path.is_file():
        known = sorted(
            {p.name.rsplit(".", 2)[1] for p in folder.iterdir() if p.name.endswith(".txt")}
        )
        raise ValueError(f"no {kind} phrase list version {version!r}; known: {', '.join(known)}")
    return path.read_text(encoding="utf-8").splitlines()


_END = ""


def _trie_regex(node: dict[str, dict]) -> str:
    branches = [f"{atom}{_trie_regex(child)}" for atom, child in node.items() if atom != _END]
    if not branches:
        return ""
    if _END in node:
        return "(?:" + "|".join(branches) + ")?"
    if len(branches) == 1:
        # re: atoms are grouped, so a single branch has no top-level "|" of its own.
        return branches[0]
    return "(?:" + "|".join(branches) + ")"


def alternation(entries: list[list[str]]) -> str:
    """One regex matching any entry. Entries share their common leading atoms (a trie),
    so a position is tried against each distinct next atom once, not once per entry."""
    if not entries:
        # An empty list must match nothing, not the empty string everywhere.
        return "(?!)"
    root: dict[str, dict] = {}
    for atoms in entries:
        node = root
        for atom in atoms:
            node = node.setdefault(atom, {})
        node[_END] = {}
    return _trie_regex(root)


def _scanner(entries: list[list[str]]) -> str:
    return f"{_WORD_START}(?P<phrase>{alternation(entries)})"


@lru_cache(maxsize=4096)
def _clip(matched: str) -> str:
    # A regex entry may match a whole line; evidence only needs to show which entry hit.
    # Cached, as replies repeat a few phrases and this took a twentieth of a scan.
    text = " ".join(matched.split())
    return text if len(text) <= _EVIDENCE_LIMIT else text[: _EVIDENCE_LIMIT - 1] + "…"


class _SearchPerChar(dict[str, Callable[..., "re.Match[str] | None"]]):
    """The `search` of a phrase scanner's pattern for each character that may come before a
    phrase: the pattern with its leading character class narrowed to that one character.
    Each is compiled when a text longer than `_SHORT_TEXT` first holds its character (tens
    of ms each on a loaded machine: a run of short replies compiles none of them)."""

    def __init__(self, entries: list[list[str]]) -> None:
        super().__init__()
        self.alternation = alternation(entries)

    def __missing__(self, char: str) -> Callable[..., re.Match[str] | None]:
        search = re.compile(re.escape(char) + self.alternation, re.MULTILINE).search
        self[char] = search
        return search


def _match_start(found: re.Match[str]) -> int:
    return found.start()


class PhraseHit(NamedTuple):
    """The first match of a phrase list in a text: what matched and where it starts.

    (Named tuples, not frozen dataclasses: every reply makes one or two, and a frozen
    dataclass took a tenth of the scan's time to build.)"""

    phrase: str
    start: int


class PhraseScan(NamedTuple):
    """The first refusal and the first completion phrase of one text (None if absent)."""

    refusal: PhraseHit | None
    completion: PhraseHit | None


@dataclass(frozen=True, slots=True)
class PhraseMatcher:
    """The compiled phrase lists of one version.

    `refusal` finds candidate refusal phrases (searched for through `refusal_after`, which
    finds the same matches faster), `opening` checks that the text before one
    is a sentence/clause opening plus lead-ins, `exclusion` voids a candidate at its start,
    and `completion` finds task-completion phrases. All run on "\\n" + the lower-cased text.
    """

    version: str
    refusal: re.Pattern[str]
    opening: re.Pattern[str]
    exclusion: re.Pattern[str]
    completion: re.Pattern[str]
    # `refusal` with its leading character class narrowed to each one of its characters.
    refusal_after: _SearchPerChar = field(compare=False, repr=False)
    # A config's `re:` entries, compiled with RE2 (see `_user_scanner`); None: it has none.
    user_refusal: LinearPattern | None = field(default=None, compare=False, repr=False)
    user_exclusion: LinearPattern | None = field(default=None, compare=False, repr=False)
    user_completion: LinearPattern | None = field(default=None, compare=False, repr=False)
    # `opening` in RE2, when a config has `lead: re:` entries (they are part of it).
    user_opening: LinearPattern | None = field(default=None, compare=False, repr=False)

    def scan(self, text: str) -> PhraseScan:
        low = "\n" + text.lower()
        # lower() changes the length of a few characters (İ); then quote the lowered text.
        source = "\n" + text if len(low) == len(text) + 1 else low
        return PhraseScan(self._first_refusal(low, source), self._first_completion(low, source))

    def _first_refusal(self, low: str, source: str) -> PhraseHit | None:
        # Candidates are rare (a refusal phrase anywhere), so checking each in Python
        # costs little; the scan over the whole text is a few compiled searches.
        candidates = self._refusal_matches(low)
        if self.user_refusal is not None:
            candidates = heapq.merge(candidates, _user_spans(self.user_refusal, low))
        user_exclusion = self.user_exclusion
        for start, end in candidates:
            if self.exclusion.match(low, start) or (
                user_exclusion is not None and user_exclusion.match(low, start - 1)
            ):
                continue
            if self._opens(low, start):
                return PhraseHit(_clip(source[start:end]), start - 1)
        return None

    def _opens(self, low: str, start: int) -> bool:
        """Whether the text before `start` ends in an opening (and lead-ins)."""
        window = max(0, start - _OPENING_WINDOW)
        if self.user_opening is None:
            return self.opening.search(low, window, start) is not None
        # RE2 does not end `$` at an end position: search the window cut out, with the
        # character before it kept as context (`\b` looks at it).
        context = 1 if window else 0
        return self.user_opening.search(low[window - context : start], context) is not None

    def _refusal_matches(self, low: str) -> Iterator[tuple[int, int]]:
        """The phrase spans of `refusal.finditer(low)`, found with one search per word-start
        character that occurs in the text.

        A pattern that starts with one literal character is searched for by skipping ahead
        to that character in C; one that starts with a character class (`refusal`) has
        each character of the text tested against the class, which took most of the scan's
        time. At a given position only the search for the character there can match, and
        it matches as `refusal` would, so the leftmost of the searches' matches is
        `refusal`'s next match. Like `finditer`, each search resumes after the last match."""
        if len(low) <= _SHORT_TEXT:
            for match in self.refusal.finditer(low):
                yield match.start() + 1, match.end()
            return
        search = self.refusal_after
        starts = _ASCII_WORD_STARTS if low.isascii() else _WORD_STARTS
        pending = {c: found for c in starts if c in low if (found := search[c](low))}
        while pending:
            first = min(pending.values(), key=_match_start)
            end = first.end()
            yield first.start() + 1, end  # the pattern is the character, then the phrase
            for c, found in list(pending.items()):
                if found.start() < end:
                    if later := search[c](low, end):
                        pending[c] = later
                    else:
                        del pending[c]

    def _first_completion(self, low: str, source: str) -> PhraseHit | None:
        found = self.completion.search(low)
        span = found.span("phrase") if found is not None else None
        if self.user_completion is not None:
            user = next(_user_spans(self.user_completion, low), None)
            if user is not None and (span is None or user[0] < span[0]):
                span = user
        if span is None:
            return None
        start, end = span
        return PhraseHit(_clip(source[start:end]), start - 1)


def _user_spans(scanner: LinearPattern, low: str) -> Iterator[tuple[int, int]]:
    """The phrase spans a `_user_scanner` finds (its first character is the one before)."""
    for found in scanner.finditer(low):
        yield found.start() + 1, found.end()


# `_WORD_START` for RE2, whose `\s` is ASCII only: every character listed.
_RE2_WORD_START = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in _WORD_STARTS) + "]"


# RE2's `\s` is ASCII only; the openings below list every whitespace character instead.
_RE2_SPACE = "".join(f"\\x{{{ord(c):x}}}" for c in _WORD_STARTS if c.isspace())
_RE2_OPENING = r"(?:\n|[.!?…:;,)\]\"”]|\b(?:but|however|so|and))"
_RE2_OPENING_FILL = f"[{_RE2_SPACE}\"“”'*_>#\\-]*"
_RE2_LEAD_GAP = f"[{_RE2_SPACE},;:—–\\-]*"


def _user_opening(leads: list[list[str]], lead_regexes: list[str]) -> LinearPattern | None:
    """`opening` compiled with RE2, for a config with `lead: re:` entries (None without):
    the lead-ins of the list and the config, whitespace atoms spelled out, `^` a line start."""
    if not lead_regexes:
        return None
    atoms = [[f"[{_RE2_SPACE}]+" if a == r"\s+" else a for a in entry] for entry in leads]
    atoms += [[f"(?:{p})"] for p in lead_regexes]
    lead = alternation(atoms).replace("(?<=\n)", "(?m:^)")
    return compile_linear(f"{_RE2_OPENING}{_RE2_OPENING_FILL}(?:(?:{lead}){_RE2_LEAD_GAP})*$")


def _user_scanner(patterns: list[str], before: str) -> LinearPattern | None:
    """One RE2 pattern for a config's `re:` entries, matching the character before the
    entry too: `before` (a word start for scans, any character for exclusions) or, for an
    entry starting with ^, a newline. None when there are no entries."""
    if not patterns:
        return None
    anywhere = [f"(?:{p})" for p in patterns if not p.startswith("^")]
    line_start = [f"(?:{p[1:]})" for p in patterns if p.startswith("^")]
    branches = []
    if anywhere:
        branches.append(f"{before}(?:{'|'.join(anywhere)})")
    if line_start:
        branches.append(f"\\n(?:{'|'.join(line_start)})")
    return compile_linear("(?m)" + "|".join(branches))


@lru_cache(maxsize=32)
def _compile(
    version: str,
    extra_refusals: tuple[str, ...],
    extra_completions: tuple[str, ...],
    extra_exclusions: tuple[str, ...],
) -> PhraseMatcher:
    user_refusals = split_user_entries(list(extra_refusals))
    user_exclusions = split_user_entries(list(extra_exclusions))
    user_completions = split_user_entries(list(extra_completions))
    refusals, leads = parse_entries(phrase_file_lines("refusal", version) + user_refusals.plain)
    exclusions, _ = parse_entries(
        phrase_file_lines("refusal_exclusions", version) + user_exclusions.plain
    )
    completions, _ = parse_entries(
        phrase_file_lines("completion", version) + user_completions.plain
    )
    lead = f"(?:(?:{alternation(leads)}){_LEAD_GAP})*" if leads else ""
    return PhraseMatcher(
        version=version,
        refusal=re.compile(_scanner(refusals), re.MULTILINE),
        refusal_after=_SearchPerChar(refusals),
        opening=re.compile(f"{_OPENING}{_OPENING_FILL}{lead}\\Z"),
        user_opening=_user_opening(leads, user_refusals.lead_regexes),
        exclusion=re.compile(alternation(exclusions), re.MULTILINE),
        completion=re.compile(_scanner(completions), re.MULTILINE),
        user_refusal=_user_scanner(user_refusals.regexes, _RE2_WORD_START),
        user_exclusion=_user_scanner(user_exclusions.regexes, "(?s:.)"),
        user_completion=_user_scanner(user_completions.regexes, _RE2_WORD_START),
    )


def phrase_matcher(params: PhraseParams) -> PhraseMatcher:
    """The matcher for a detector's settings, compiled once per distinct setting."""
    return _compile(
        params.phrases,
        tuple(params.extra_refusals),
        tuple(params.extra_completions),
        tuple(params.extra_exclusions),
    )
