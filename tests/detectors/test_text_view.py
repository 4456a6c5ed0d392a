"""Reading text through Unicode rewrites, with the way back to the original spans."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redjury.detectors.text_view import might_spell_at, normalised


def test_plain_text_needs_no_reading() -> None:
    assert normalised("card 4111 1111 1111 1111, mail a@b.co") is None
    assert normalised("héllo wörld, 日本語") is None
    assert normalised("x(y) [z]", spelled=True) is None


def test_full_width_and_styled_digits_read_as_ascii() -> None:
    view = normalised("n° ４１１１ and \U0001d7d2\U0001d7cf\U0001d7cf\U0001d7cf")
    assert view is not None and view.text == "n° 4111 and 4111"
    assert view.original_spans("4111") == [(3, 7), (12, 16)]


def test_invisible_characters_are_dropped_and_spans_cover_them() -> None:
    text = "4111\u200b1111\u2060x\ufeff"
    view = normalised(text)
    assert view is not None and view.text == "41111111x"
    [(start, end)] = view.original_spans("41111111")
    assert text[start:end] == "4111\u200b1111"


def test_bracketed_at_and_dot_read_as_an_email_only_when_asked() -> None:
    for text in ("bob(at)example(dot)com", "bob [at] example [DOT] com", "bob (AT) example.com"):
        view = normalised(text, spelled=True)
        assert view is not None and "bob@example" in view.text, text
        assert view.original_spans(view.text) == [(0, len(text))]
    assert normalised("bob(at)example(dot)com") is None
    # Bare words are prose: "meet me at home" is no email.
    assert normalised("write bob at example dot com", spelled=True) is None


def test_json_escapes_are_decoded_only_when_asked() -> None:
    text = 'said "\\uff14\\uff11" ok'
    assert normalised(text) is None
    view = normalised(text, escapes=True)
    assert view is not None and view.text == 'said "41" ok'
    assert view.original_spans("41") == [(6, 18)]


def test_might_spell_at_finds_the_brackets_cheaply() -> None:
    assert might_spell_at("a(at)b") and might_spell_at("a [at ] b") and might_spell_at("x(AT)")
    assert not might_spell_at("that is (fine) [ok]")


@given(st.text())
def test_every_read_span_maps_back_inside_the_original(text: str) -> None:
    view = normalised(text, escapes=True, spelled=True)
    if view is None:
        return
    assert len(view.starts) == len(view.ends) == len(view.text)
    for i in range(len(view.text)):
        start, end = view.original_span(i, i + 1)
        assert 0 <= start < end <= len(text)
    assert view.starts == sorted(view.starts)
