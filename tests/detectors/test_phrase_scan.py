"""The phrase scan finds what the one-pattern scan it replaced found: the same refusal and
completion hits, for every phrase-list version and with user entries of every kind."""

import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redjury.detectors.phrases import (
    _ASCII_WORD_STARTS,
    _COMMON_WORD_STARTS,
    _WORD_START,
    _WORD_STARTS,
    PhraseHit,
    PhraseMatcher,
    PhraseParams,
    PhraseScan,
    _clip,
    phrase_file_lines,
    phrase_matcher,
)

EXTRAS = {
    "extra_refusals": [
        "re: ^well,? no",
        "lead: re: honestly,?",
        "lead: to be clear",
        "nope",
        "I can't",
        "- not doing",
        "re: \\*\\*no\\*\\*",
        "re: (?:won['’]?t|refuse)\\s+to",
        "'no way'",
    ],
    "extra_completions": ["re: (?:step|phase)\\s+\\d", "Voilà", "re: ^-\\s+\\S"],
    "extra_exclusions": ["re: i\\s+can['’]?t\\s+wait", "I'm sorry for", "nope,"],
}
MATCHERS = [
    phrase_matcher(PhraseParams(phrases=version, **extras))
    for version in ("v1", "v2", "v3")
    for extras in ({}, EXTRAS)
]


def _user_spans(scanner: object, low: str) -> list[tuple[int, int]]:
    """Spans of a config's `re:` entries (RE2; the match's first character is the one
    before the entry)."""
    if scanner is None:
        return []
    return [(m.start() + 1, m.end()) for m in scanner.finditer(low)]  # type: ignore[attr-defined]


def reference_scan(matcher: PhraseMatcher, text: str) -> PhraseScan:
    """The scan as it was written before it was made fast: one `finditer` of the
    character-class pattern `refusal`, checked candidate by candidate; a config's `re:`
    entries (matched with RE2) are candidates beside it, in order of where they start."""
    low = "\n" + text.lower()
    source = "\n" + text if len(low) == len(text) + 1 else low
    refusal = None
    candidates = sorted(
        [found.span("phrase") for found in matcher.refusal.finditer(low)]
        + _user_spans(matcher.user_refusal, low)
    )
    for start, end in candidates:
        if matcher.exclusion.match(low, start):
            continue
        if matcher.user_exclusion is not None and matcher.user_exclusion.match(low, start - 1):
            continue
        if matcher._opens(low, start):
            refusal = PhraseHit(_clip(source[start:end]), start - 1)
            break
    completion = None
    spans = _user_spans(matcher.user_completion, low)[:1]
    if found := matcher.completion.search(low):
        spans.append(found.span("phrase"))
    if spans:
        start, end = min(spans)
        completion = PhraseHit(_clip(source[start:end]), start - 1)
    return PhraseScan(refusal, completion)


def _plain_entries(kind: str) -> list[str]:
    lines = [line.strip() for line in phrase_file_lines(kind, "v3")]
    lines = [line.removeprefix("lead:").strip() for line in lines if line]
    return [line for line in lines if not line.startswith(("#", "re:"))]


WORDS = sorted(
    {
        word
        for kind in ("refusal", "refusal_exclusions", "completion")
        for entry in _plain_entries(kind)
        for word in [entry, *entry.split()]
    }
    | {
        # What the lists' regex entries match, and what openings and lead-ins are made of.
        "i really can't",
        "i am simply unable",
        "i must refuse",
        "i'm sorry to hear",
        "i'm sorry to burst",
        "sorry for",
        "i can't stress",
        "i won't stop",
        "i'm afraid that it",
        "sure,",
        "okay:",
        "1.",
        "2)",
        "step 1:",
        "- item",
        "* item",
        "```",
        "def",
        "dear",
        "## title",
        "**bold**",
        "title:",
        "but",
        "however",
        "so",
        "and",
        "but i",
        "well, no",
        "honestly",
        "nope",
        "not doing",
        "no way",
        "phase 2",
        "voilà",
        "to be clear",
        "**no**",
        "'no way'",
    }
)
PUNCTUATION = list(".,!?…:;)]\"“”‘’'*_>#([-/—–") + ["**", "...", "->"]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\xa0", "\u2003", "\u3000", "\x0b"]
# Characters whose lower case is longer (İ) or that change case in other ways.
ODD = ["İ", "ẞ", "Σ", "ǅ", "K", "ﬁ", "I", "Í"]
FRAGMENTS = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS).map(str.upper),
    st.sampled_from(WORDS).map(str.title),
    st.sampled_from(WORDS).map(lambda w: w.replace("'", "’")),
    st.sampled_from(WORDS).map(lambda w: w.replace(" ", "\xa0")),
    st.sampled_from(PUNCTUATION),
    st.sampled_from(SPACES),
    st.sampled_from(ODD),
    st.text(max_size=3),
)
TEXTS = st.lists(FRAGMENTS, max_size=40).map("".join)


@pytest.mark.parametrize("index", range(len(MATCHERS)))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_scan_finds_what_the_one_pattern_scan_found(index: int, text: str):
    matcher = MATCHERS[index]
    assert matcher.scan(text) == reference_scan(matcher, text)
    low = "\n" + text.lower()
    expected = [found.span("phrase") for found in matcher.refusal.finditer(low)]
    assert list(matcher._refusal_matches(low)) == expected


@pytest.mark.parametrize("index", range(len(MATCHERS)))
def test_scan_finds_what_the_one_pattern_scan_found_on_examples(index: int):
    matcher = MATCHERS[index]
    examples = [
        "I'm sorry, but I can't help with that.",
        "Sure, here is how: 1. Do it. I can't stress enough.",
        '"I cannot" - she said. (I won’t) [i will not] /i refuse/ *I must decline*',
        "İ'm sorry.\u3000I cannot.\xa0I can't\tdo that",
        "Well, no. Nope, nope. - not doing it. **no** 'no way'",
        "so i can't, and i won't; however I'm unable",
        "sorry, i\n\ni'm sorry to hear that. i'm sorry",
        # Phrases that end in a word-start character, right before another phrase.
        " **no****no**. **no**",
        "x 'no way''no way' - not doing- not doing",
        "",
        "\n",
    ]
    for text in examples:
        assert matcher.scan(text) == reference_scan(matcher, text)
        low = "\n" + text.lower()
        expected = [found.span("phrase") for found in matcher.refusal.finditer(low)]
        assert list(matcher._refusal_matches(low)) == expected


def test_word_start_characters_are_the_word_start_class():
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    assert sorted(re.findall(_WORD_START, every_character)) == sorted(_WORD_STARTS)
    assert len(set(_WORD_STARTS)) == len(_WORD_STARTS)
    assert set(_COMMON_WORD_STARTS) <= set(_ASCII_WORD_STARTS)
    assert "".join(c for c in _WORD_STARTS if c.isascii()) == _ASCII_WORD_STARTS
