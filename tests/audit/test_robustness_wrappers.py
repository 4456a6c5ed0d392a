"""Robustness wrappers keep the reply's content and choose their sentences by seed."""

from __future__ import annotations

import re

import pytest

from redjury.audit.wrappers import DEFAULT_WRAPPERS, WRAPPERS, get_wrapper

REPLY = "Step one: gather the parts. Step two: assemble them carefully!\nDone at last."


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_every_wrapper_keeps_every_word(name: str) -> None:
    out = get_wrapper(name).apply(REPLY, seed=1, key="s1")
    assert out != REPLY
    for word in re.findall(r"\w+", REPLY):
        assert word in out


@pytest.mark.parametrize("name", ["prepend_append", "refusal_prefix", "educational_framing"])
def test_content_preserving_wrappers_keep_the_reply_verbatim(name: str) -> None:
    assert REPLY in get_wrapper(name).apply(REPLY, seed=1, key="s1")


def test_wrappers_are_seeded_per_sample_and_varied() -> None:
    w = get_wrapper("refusal_prefix")
    assert w.apply(REPLY, seed=4, key="a") == w.apply(REPLY, seed=4, key="a")
    variants = {w.apply(REPLY, seed=4, key=str(i)) for i in range(40)}
    assert len(variants) >= 4


def test_defaults_and_extras_are_registered() -> None:
    assert set(DEFAULT_WRAPPERS) <= set(WRAPPERS)
    assert {"judge_injection", "code_block", "list"} <= set(WRAPPERS)
    with pytest.raises(KeyError, match="unknown robustness wrapper 'nope'"):
        get_wrapper("nope")


def test_list_wrapper_splits_sentences_into_bullets() -> None:
    out = get_wrapper("list").apply(REPLY, seed=0, key="x")
    bullets = [line for line in out.splitlines() if line[:1] in "-*•" and line[1:2] == " "]
    assert len(bullets) == 3
