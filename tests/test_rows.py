"""The attempt → report row step: which fields a row carries, in which order, and what
its redactor masks."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from redjury.attempts import Attempt
from redjury.detectors.base import Finding, Verdict
from redjury.redaction import Redactor
from redjury.rows import ROW_FIELDS, AttemptScorer, content_hash

_TEXT = st.text(max_size=6)
_OPTIONAL = {
    "goal": st.none() | _TEXT,
    "prompt": st.none() | _TEXT,
    "outputs": st.lists(st.none() | _TEXT, max_size=3),
    "messages": st.none()
    | st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant"]), "content": st.none() | _TEXT}
        ),
        max_size=2,
    ),
    "intent": st.none() | _TEXT,
    "context": st.none() | st.lists(_TEXT, max_size=2),
    "latency_ms": st.none() | st.floats(0, 1e6),
    "usage": st.none() | st.fixed_dictionaries({}, optional={"prompt_tokens": st.integers(0, 9)}),
    "notes": st.just({}) | st.fixed_dictionaries({"triggers": st.lists(_TEXT, max_size=2)}),
    "run_id": st.none() | _TEXT,
    "seq": st.none() | st.integers(0, 2**40),
    "source_record": st.none() | st.just({}) | st.fixed_dictionaries({"uuid": _TEXT}),
}


@st.composite
def _attempts(draw: st.DrawFn) -> Attempt:
    chosen = draw(st.sets(st.sampled_from(sorted(_OPTIONAL))))
    values = {key: draw(_OPTIONAL[key]) for key in sorted(chosen)}
    record = {"id": "a1", "probe": "p.P", **values}
    # One score per output (a transcript's assistant turns are outputs too).
    n = len(Attempt.model_validate(record).outputs)
    scores = draw(st.lists(st.none() | st.floats(0, 1), min_size=n, max_size=n))
    return Attempt.model_validate({**record, "detector_results": {"d.D": scores}})


def _expected_row(attempt: Attempt) -> dict[str, Any]:
    """The row as the model's own dump gives it: every set field (not None, not an
    empty dict) in the model's order, the hash of what was judged, then the given scores."""
    dumped = attempt.model_dump()
    row: dict[str, Any] = {"entry_type": "attempt", "status": 2, "id": "a1", "probe": "p.P"}
    for key in ROW_FIELDS:
        value = getattr(attempt, key)
        if value is None or value == {}:
            continue
        row[key] = dumped[key]
        if key == "usage":
            row[key] = attempt.usage.model_dump(exclude_none=True)  # type: ignore[union-attr]
    row["content_hash"] = content_hash(attempt)
    row["detector_results"] = dumped["detector_results"]
    row["verdicts"] = {}
    return row


@settings(max_examples=300, deadline=None)
@given(_attempts(), st.booleans())
def test_a_row_holds_every_set_field_in_the_models_order(attempt: Attempt, redact: bool) -> None:
    row = AttemptScorer([], Redactor(), Redactor(), redact).row(attempt, {})
    want = _expected_row(attempt)
    assert row == want
    assert list(row) == list(want)


class _Finds:
    """A detector that finds the given value in every output."""

    name = "finds"

    def __init__(self, value: str) -> None:
        self.value = value

    def detect(self, attempt: Attempt) -> list[Finding]:
        return [
            Finding(1.0, Verdict.BROKE_THROUGH, evidence=("****",), sensitive=(self.value,))
            for _ in attempt.outputs
        ]


def _scored(scorer: AttemptScorer, attempt: Attempt, findings: bool) -> dict[str, Any]:
    found = {"finds": _Finds("4111111111111111").detect(attempt)} if findings else {}
    return scorer.row(attempt, found)


def test_the_redactor_masks_markers_and_found_values_only_when_redacting() -> None:
    attempt = Attempt(
        id="a",
        prompt="key sk-ALWAYS-123 and CANARY-42",
        outputs=["card 4111111111111111 and CANARY-42 and sk-ALWAYS-123"],
    )
    markers, always = Redactor(["CANARY-42"]), Redactor(["sk-ALWAYS-123"])
    for redact in (True, False):
        scorer = AttemptScorer([], markers, always, redact)
        for findings in (False, True):
            text = _scored(scorer, attempt, findings)["outputs"][0]
            assert "sk-ALWAYS-123" not in text  # always masked
            assert ("CANARY-42" in text) is not redact
            assert ("4111111111111111" in text) is not (redact and findings)


def test_a_row_with_nothing_to_mask_shares_the_attempts_values() -> None:
    attempt = Attempt(id="a", outputs=["x"], notes={"triggers": ["t"]})
    row = AttemptScorer([], Redactor(), Redactor(), True).row(attempt, {})
    assert row["outputs"] is attempt.outputs and row["notes"] is attempt.notes


@settings(max_examples=200, deadline=None)
@given(_attempts(), _attempts())
def test_the_content_hash_tells_apart_attempts_whose_rows_differ(a: Attempt, b: Attempt) -> None:
    """Two attempts get the same content hash exactly when their rows, given scores
    included, are the same: a resumed run never keeps a verdict for changed replies."""
    scorer = AttemptScorer([], Redactor(), Redactor(), False)
    row_a, row_b = scorer.row(a, {}), scorer.row(b, {})
    same_hash = row_a.pop("content_hash") == row_b.pop("content_hash")
    assert same_hash == (row_a == row_b)


def test_a_changed_reply_or_given_score_changes_the_content_hash() -> None:
    base = {"id": "a", "outputs": ["I can't help with that."]}
    first = content_hash(Attempt.model_validate(base))
    assert first == content_hash(Attempt.model_validate(dict(base)))
    leak = {**base, "outputs": ["Card 4539 1488 0343 6467"]}
    assert content_hash(Attempt.model_validate(leak)) != first
    scored = {**base, "detector_results": {"d.D": [0.0]}}
    assert content_hash(Attempt.model_validate(scored)) != first
