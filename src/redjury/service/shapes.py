"""The wire shapes the service speaks: redjury attempts, OpenAI moderations, promptfoo's
webhook assertion; each request read into attempts, each outcome written back."""

from __future__ import annotations

import os
from typing import Any

from redjury.attempts import Attempt, checked_attempt
from redjury.errors import RedjuryError
from redjury.formats.jsonl import redjury_record
from redjury.service.judging import AttemptOutcome


class RequestError(RedjuryError):
    """A request the service refuses: an HTTP status and the field at fault."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field
        self.message = message

    def body(self) -> dict[str, Any]:
        """OpenAI's error shape, which its clients read: message, type, param."""
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": str(self), "type": kind, "param": self.field}}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError(400, "(body)", "a JSON object")
    return body


def _batch(items: Any, name: str, max_batch: int) -> list[Any]:
    if not isinstance(items, list) or not items:
        raise RequestError(400, name, "a non-empty list")
    if len(items) > max_batch:
        raise RequestError(413, name, f"{len(items)} items; at most {max_batch} per request")
    return items


def judge_attempts(body: Any, max_batch: int) -> list[Attempt]:
    """`{"attempts": [...]}` in redjury's JSONL shape; a bad one names its index and field."""
    items = _batch(_object(body).get("attempts"), "attempts", max_batch)
    attempts: list[Attempt] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        record = redjury_record("attempts", index, item)
        if record.error is not None:
            raise RequestError(400, f"attempts[{index}].{record.error.field}", record.error.reason)
        assert record.attempt is not None
        if record.attempt.id in seen:
            raise RequestError(400, f"attempts[{index}].id", f"duplicate id {record.attempt.id!r}")
        seen.add(record.attempt.id)
        attempts.append(record.attempt)
    return attempts


def judge_response(outcomes: list[AttemptOutcome], detectors: list[str]) -> dict[str, Any]:
    """The report rows as a run writes them, and what each comes to under the verdict policy."""
    return {
        "detectors": detectors,
        "attempts": [o.row for o in outcomes],
        "outcomes": [
            {
                "id": o.row["id"],
                "flagged": o.flagged,
                "failed": sorted(o.failed),
                "abstained": o.abstained,
                "reasons": o.reasons,
            }
            for o in outcomes
        ],
    }


def moderation_attempts(body: Any, max_batch: int) -> list[Attempt]:
    """OpenAI's moderation request: `input` a string or a list of strings, one reply each."""
    data = _object(body)
    raw = data.get("input")
    texts = [raw] if isinstance(raw, str) else _batch(raw, "input", max_batch)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise RequestError(400, f"input[{index}]", "text only: a string")
    return [_reply_attempt(f"input-{i}", text) for i, text in enumerate(texts)]


def _reply_attempt(attempt_id: str, text: str) -> Attempt:
    """An attempt holding one reply, built without pydantic's validation (the fields are
    checked as `checked_attempt` checks a garak row's); validated the usual way otherwise."""
    fields = {**_REPLY_FIELDS, "id": attempt_id, "outputs": [text]}
    fields.update(notes={}, detector_results={})  # fresh: never shared between attempts
    return checked_attempt(fields) or Attempt(id=attempt_id, outputs=[text])


_REPLY_FIELDS: dict[str, Any] = dict.fromkeys(
    ("goal", "prompt", "seq", "run_id", "intent", "generator", "source_record")
) | {"probe": "default"}


def moderation_response(
    outcomes: list[AttemptOutcome], model: Any, detectors: list[str]
) -> dict[str, Any]:
    """OpenAI's moderation response; categories are redjury's detectors. A judge that
    abstained flags its category: an unjudged reply is never passed as safe."""
    return {
        "id": f"modr-{os.urandom(16).hex()}",
        "model": model if isinstance(model, str) and model else "redjury",
        "results": [_moderation_result(o, detectors) for o in outcomes],
    }


def _moderation_result(outcome: AttemptOutcome, detectors: list[str]) -> dict[str, Any]:
    scores = outcome.row.get("detector_results", {})
    flagged = {*outcome.failed, *outcome.abstained}
    return {
        "flagged": outcome.flagged,
        "categories": {name: name in flagged for name in detectors},
        "category_scores": {name: _max_score(scores.get(name, [])) for name in detectors},
        "redjury": {"verdicts": outcome.row.get("verdicts", {}), "reasons": outcome.reasons},
    }


def _max_score(scores: list[float | None]) -> float | None:
    judged = [s for s in scores if s is not None]
    return max(judged) if judged else None


def promptfoo_attempt(body: Any) -> Attempt:
    """promptfoo's webhook assertion: `output` (the target's reply) and `context` (prompt, vars)."""
    data = _object(body)
    output = data.get("output")
    if output is not None and not isinstance(output, str):
        raise RequestError(400, "output", "the target's reply as a string")
    context = data.get("context") or {}
    if not isinstance(context, dict):
        raise RequestError(400, "context", "a JSON object (prompt, vars)")
    variables = context.get("vars")
    if not isinstance(variables, dict):
        variables = {}
    prompt = context.get("prompt")
    goal = variables.get("goal")
    return Attempt(
        id="promptfoo",
        prompt=prompt if isinstance(prompt, str) else None,
        goal=goal if isinstance(goal, str) else None,
        outputs=[output],
    )


def promptfoo_response(outcome: AttemptOutcome) -> dict[str, Any]:
    """`pass` (no detector failed, no judge abstained), `score` (1 = safe), `reason`."""
    judged = [
        s for v in outcome.row.get("detector_results", {}).values() for s in v if s is not None
    ]
    score = 0.0 if outcome.abstained else 1.0 - max(judged, default=0.0)
    reason = "; ".join(outcome.reasons) if outcome.flagged else "redjury: no detector failed"
    return {"pass": not outcome.flagged, "score": round(score, 6), "reason": reason}
