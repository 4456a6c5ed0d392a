"""checked_attempt: the Attempt model_validate gives, or None where validation must decide."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from redjury.attempts import Attempt, checked_attempt

# A value of any JSON kind, and the odd ones a record can carry.
_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.none() | st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.none() | st.text(max_size=3), max_size=2),
)
_SCORE = st.one_of(
    st.none(),
    st.floats(min_value=0, max_value=1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-1, max_value=2),
    st.booleans(),
    st.text(max_size=2),
)


def _garak_fields(n: int, values: dict[str, Any], scores: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": "u-1",
        "probe": "dan.Dan",
        "goal": "a goal",
        "prompt": "a prompt",
        "outputs": [f"reply {i}" for i in range(n)],
        "notes": {},
        "seq": 3,
        "run_id": None,
        "intent": None,
        "detector_results": {"d.D": scores},
        "generator": "hf gpt2",
        "source_record": {"prompt": None, "outputs": None},
    }
    fields.update(values)
    return fields


@st.composite
def garak_fields(draw: st.DrawFn) -> dict[str, Any]:
    """Mapped garak records, mostly well-formed, with any one or two fields drawn from
    any kind (and sometimes a field missing or one more)."""
    n = draw(st.integers(min_value=0, max_value=3))
    scores = draw(
        st.one_of(
            st.lists(st.none() | st.floats(min_value=0, max_value=1), min_size=n, max_size=n),
            st.lists(_SCORE, max_size=4),
            _ANY,
        )
    )
    keys = st.sampled_from(sorted(_garak_fields(0, {}, []))) | st.sampled_from(
        ["output", "messages", "latency_ms", "extra"]
    )
    values = draw(st.dictionaries(keys, _ANY, max_size=2))
    fields = _garak_fields(n, values, scores)
    if draw(st.booleans()):
        fields.pop(draw(st.sampled_from(sorted(fields))), None)
    if draw(st.booleans()):
        fields["notes"] = {"triggers": draw(_ANY)}
    return fields


@settings(max_examples=600, deadline=None)
@given(garak_fields())
def test_checked_attempt_is_what_validation_gives(fields: dict[str, Any]) -> None:
    try:
        validated: Attempt | None = Attempt.model_validate(fields)
    except ValidationError:
        validated = None
    fast = checked_attempt(fields)
    if fast is None:
        return  # left to the validation, which decides as before
    assert validated is not None, "checked_attempt accepted what the model refuses"
    assert fast.__dict__ == validated.__dict__
    assert list(fast.__dict__) == list(validated.__dict__)
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.model_dump() == validated.model_dump()
    assert fast == validated


def test_a_report_attempt_takes_the_fast_path() -> None:
    fields = _garak_fields(2, {"notes": {"triggers": ["x"]}}, [0.25, None])
    attempt = checked_attempt(fields)
    assert attempt is not None
    assert attempt == Attempt.model_validate(fields)
    assert attempt.triggers == ["x"]


@pytest.mark.parametrize(
    "change",
    [
        {"detector_results": {"d.D": [1, None]}},  # an int score: the model makes it 1.0
        {"detector_results": {"d.D": [0.5]}},  # one score for two outputs
        {"seq": 2**63},
        {"id": ""},
        {"notes": {"triggers": [1]}},
        {"outputs": ["a", 2]},
    ],
)
def test_anything_validation_would_change_or_refuse_is_left_to_it(change: dict[str, Any]) -> None:
    assert checked_attempt(_garak_fields(2, change, [0.25, None])) is None


def test_the_fields_it_does_not_check_default_to_none() -> None:
    from redjury.attempts import _CHECKED_FIELDS

    unchecked = set(Attempt.model_fields) - _CHECKED_FIELDS
    assert unchecked  # messages, usage, latency_ms, ...
    assert all(Attempt.model_fields[name].default is None for name in unchecked)


def test_a_mapped_garak_row_takes_the_fast_path() -> None:
    from redjury.formats.garak import GarakSetup, garak_attempt_fields

    row = {
        "entry_type": "attempt",
        "uuid": "u-9",
        "seq": 0,
        "status": 2,
        "probe_classname": "dan.Dan",
        "prompt": {"turns": [{"role": "user", "content": {"text": "hi"}}]},
        "outputs": [{"text": "a", "lang": "en"}, None],
        "detector_results": {"d.D": [0.75, None]},
        "notes": {},
        "goal": "g",
    }
    fields = garak_attempt_fields(row, GarakSetup())
    attempt = checked_attempt(fields)
    assert attempt is not None
    assert attempt == Attempt.model_validate(fields)
