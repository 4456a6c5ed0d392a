"""Which judges and model-backed detectors failed: over the abstention limit, in words."""

from __future__ import annotations

from typing import Any

from redjury.report.judge_failures import judge_failures


def panel(unsafe: int, safe: int, abstained: int, first: str | None = "HTTP 500") -> dict[str, Any]:
    judge = {"judge": "h:a", "unsafe": unsafe, "safe": safe, "abstained": abstained}
    return {"judges": [{**judge, "first_abstention": first}]}


def test_judge_that_never_answered_is_named_with_reason_and_server() -> None:
    [failure] = judge_failures(panel(0, 0, 20), [], {}, {"h:a": "http://h:1/v1"}, 0.5)
    assert failure.line() == "judge h:a: every judge call failed: HTTP 500 from http://h:1/v1"


def test_rate_exactly_at_the_limit_passes_and_above_it_fails() -> None:
    assert judge_failures(panel(5, 5, 10), [], {}, {}, 0.5) == []
    [failure] = judge_failures(panel(5, 4, 11), [], {}, {}, 0.5)
    assert failure.line().startswith("judge h:a: no verdict on 11/20 calls (55%, more than")


def test_model_backed_detector_counts_its_inconclusive_outputs_over_all_probes() -> None:
    evals = [
        {"detector": "guardrail", "nones": 3, "total_processed": 3},
        {"detector": "guardrail", "nones": 1, "total_processed": 3},
        {"detector": "pii_leak", "nones": 6, "total_processed": 6},  # not model-backed
    ]
    reasons = {"guardrail": "guardrail raised GuardrailAbstained: HTTP 400"}
    [failure] = judge_failures(None, evals, reasons, {"guardrail": ""}, 0.5)
    assert (failure.abstained, failure.total) == (4, 6)
    assert failure.line().endswith("first: guardrail raised GuardrailAbstained: HTTP 400")


def test_a_reason_cannot_drive_the_terminal() -> None:
    [failure] = judge_failures(panel(0, 0, 2, "HTTP 500\x1b[2J"), [], {}, {}, 0.5)
    assert "\x1b" not in failure.line()


def test_detector_that_judged_nothing_says_so_with_its_reason() -> None:
    evals = [{"detector": "guardrail", "nones": 3, "total_processed": 3}]
    reasons = {"guardrail": "guardrail raised GuardrailAbstained: HTTP 400"}
    [failure] = judge_failures(None, evals, reasons, {"guardrail": "http://g:1/v1"}, 0.5)
    assert failure.line() == (
        "detector guardrail: no verdict on any of its 3 outputs: "
        "guardrail raised GuardrailAbstained: HTTP 400 from http://g:1/v1"
    )
