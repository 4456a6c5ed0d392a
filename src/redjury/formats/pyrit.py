"""PyRIT records: its memory export (`export_conversations`: a JSON list of message
pieces, each with its scores) and the attack / scenario results people write out.

Memory export: one attempt per conversation; every assistant turn is an output, and each
score sits on the turn it scored as `pyrit:<scorer class>` (a true_false score's True is
1.0, what the scorer looks for was found; a float_scale value stays as it is).
Attack results: one attempt per attack; the reply is one output and the attack's outcome
is its verdict (`AttackOutcome.SUCCESS` is 1.0, the check failed; FAILURE 0.0;
UNDETERMINED null), named after the objective scorer's class."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from redjury.formats.base import (
    DocumentFormat,
    Located,
    attempt_record,
    bad,
    class_name,
    document_error,
    guarded,
    last_user_text,
    listed,
    number,
    reply_after_last_user,
    text_of,
)
from redjury.formats.streamed import START_ARRAY, START_MAP, Head, head, items, kvitems
from redjury.plugins import FORMATS
from redjury.records import InputRecord

_MEMORY_HEAD = re.compile(rb'\A\s*\[\s*\{[^\[]*?"conversation_id"\s*:', re.S)
_ATTACKS_HEAD = re.compile(rb'(?<!\\)"attack_results"\s*:')
_PRINTED_PIECE = re.compile(r"\A\{.*?\}: (?:assistant|simulated_assistant): (.*)\Z", re.S)
_OUTCOMES = {"success": 1.0, "failure": 0.0, "undetermined": None, "error": None}
_ATTACK_KEYS = ("attack_type", "attack_strategy", "strategy", "attack")
_SCORE_KEYS = ("objective_score", "score", "last_score", "automated_objective_score")


def pyrit_value(score: dict[str, Any]) -> float | None:
    """A PyRIT score value on redjury's scale; None when it is neither true/false nor 0..1."""
    value = score.get("score_value")
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    text = str(value).strip().lower() if value is not None else ""
    if text in ("true", "false"):
        return 1.0 if text == "true" else 0.0
    if score.get("score_type") == "true_false":
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return v if 0.0 <= v <= 1.0 else None


def _scorer(score: dict[str, Any]) -> str:
    return "pyrit:" + (class_name(score.get("scorer_class_identifier")) or "scorer")


# -- memory export --------------------------------------------------------------------
def claims_memory(doc: Any) -> bool:
    """A list of message pieces, or of score rows alone (the ScoreEntries table)."""
    first = doc[0] if isinstance(doc, list) and doc else None
    if not isinstance(first, dict):
        return False
    piece = "conversation_id" in first and ("original_value" in first or "converted_value" in first)
    return piece or ("score_value" in first and "prompt_request_response_id" in first)


def read_memory(path: Path) -> Iterator[InputRecord]:
    return guarded(path, _memory_records(path))


def _memory_records(path: Path) -> Iterator[InputRecord]:
    """The pieces are read as a stream, but held until the end: a conversation's pieces
    may lie anywhere in the list."""
    conversations: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    loose_scores: dict[str, list[dict[str, Any]]] = {}
    stream = items(path, "item")
    first = next(stream, None)
    if not claims_memory([first]):
        raise document_error(path, "(file)", "not a PyRIT memory export")
    for i, item in enumerate(chain([first], stream)):
        at = Located(i + 1, f"[{i}]")
        if not isinstance(item, dict):
            yield bad(path, at, "(piece)", "not a JSON object")
        elif "score_value" in item and "role" not in item:
            loose_scores.setdefault(str(item.get("prompt_request_response_id")), []).append(item)
        elif not _is_key(item.get("conversation_id")):
            yield bad(path, at, "conversation_id", "missing or not a string")
        elif not isinstance(item.get("role"), str):
            yield bad(path, at, "role", "missing or not a string")
        else:
            conversations.setdefault(str(item["conversation_id"]), []).append((i, item))
    if loose_scores and not conversations:
        raise document_error(
            path,
            "prompt_request_response_id",
            "PyRIT scores without the conversations they score: export them in one file "
            "(export_conversations nests each piece's scores)",
        )
    for cid, pieces in conversations.items():
        if any(p.get("scorer_identifier") for _, p in pieces):
            continue  # a scorer's own exchange with its judge model, not an attack
        at = Located(pieces[0][0] + 1, f"conversation {cid}")
        yield attempt_record(path, at, _conversation_fields(cid, pieces, loose_scores))


def _is_key(value: Any) -> bool:
    return (isinstance(value, str) and bool(value)) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def _piece_text(piece: dict[str, Any]) -> str | None:
    if piece.get("response_error") not in (None, "none"):
        return None
    if piece.get("converted_value_data_type") not in ("text", None):  # any JSON value: no hash
        return None
    value = piece.get("converted_value", piece.get("original_value"))
    return text_of(value)


def _messages(pieces: list[tuple[int, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Pieces grouped into messages: same sequence and role (a message may be multi-part)."""
    ordered = sorted(pieces, key=lambda p: (number(p[1].get("sequence")) or 0.0, p[0]))
    groups: list[list[dict[str, Any]]] = []
    last_key: tuple[Any, Any] | None = None
    for _, piece in ordered:
        key = (piece.get("sequence"), piece.get("role"))
        if groups and key == last_key:
            groups[-1].append(piece)
        else:
            groups.append([piece])
        last_key = key
    return groups


def _group_text(group: list[dict[str, Any]]) -> str | None:
    texts = [t for t in (_piece_text(p) for p in group) if t]
    return "\n".join(texts) if texts else None


@dataclass
class _Conversation:
    """A conversation read in order: its transcript, the replies and the scores on each."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[str | None] = field(default_factory=list)
    scored: list[list[dict[str, Any]]] = field(default_factory=list)
    unplaced: int = 0  # scores on turns that are not replies (a scored prompt)

    def verdicts(self) -> dict[str, list[float | None]]:
        out: dict[str, list[float | None]] = {}
        for k, scores in enumerate(self.scored):
            for score in scores:
                out.setdefault(_scorer(score), [None] * len(self.outputs))[k] = pyrit_value(score)
        return out

    def goal(self) -> str | None:
        objectives = (s.get("objective") or s.get("task") for ss in self.scored for s in ss)
        return next((o for o in objectives if isinstance(o, str) and o), None)


def _read_conversation(
    groups: list[list[dict[str, Any]]], loose: dict[str, list[dict[str, Any]]]
) -> _Conversation:
    conv = _Conversation()
    for group in groups:
        role = str(group[0]["role"])
        text = _group_text(group)
        scores = [s for p in group for s in _piece_scores(p, loose)]
        shown = "assistant" if role == "simulated_assistant" else role
        conv.turns.append({"role": shown, "content": text})
        if role == "assistant":
            conv.outputs.append(text)
            conv.scored.append(scores)
        else:
            conv.unplaced += len(scores)
    return conv


def _memory_notes(
    cid: str, groups: list[list[dict[str, Any]]], conv: _Conversation
) -> dict[str, Any]:
    notes: dict[str, Any] = {"source_format": "pyrit memory export", "conversation_id": cid}
    if groups[0][0].get("labels"):
        notes["labels"] = groups[0][0]["labels"]
    if conv.unplaced:
        notes["scores_not_on_replies"] = conv.unplaced
    sent = [p for g in groups if g[0]["role"] == "user" for p in g]
    if sent and sent[-1].get("original_value") != sent[-1].get("converted_value"):
        notes["original_prompt"] = sent[-1].get("original_value")
    return notes


def _conversation_fields(
    cid: str, pieces: list[tuple[int, dict[str, Any]]], loose: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    groups = _messages(pieces)
    conv = _read_conversation(groups, loose)
    first = groups[0][0]
    attack = class_name(first.get("attack_identifier") or first.get("orchestrator_identifier"))
    harms = first.get("targeted_harm_categories")
    return {
        "id": cid,
        "probe": f"pyrit:{attack}" if attack else "pyrit",
        "goal": conv.goal(),
        "prompt": last_user_text(conv.turns),
        "outputs": conv.outputs or [None],
        "messages": conv.turns,
        "intent": harms[0] if isinstance(harms, list) and harms else None,
        "generator": _target_name(first.get("prompt_target_identifier")),
        "notes": _memory_notes(cid, groups, conv),
        "detector_results": conv.verdicts() if conv.outputs else {},
    }


def _piece_scores(
    piece: dict[str, Any], loose: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    nested = [s for s in listed(piece.get("scores")) if isinstance(s, dict)]
    return nested + loose.get(str(piece.get("id")), [])


def _target_name(identifier: Any) -> str | None:
    if isinstance(identifier, dict):
        for key in ("model_name", "deployment_name", "model"):
            if isinstance(identifier.get(key), str) and identifier[key]:
                return str(identifier[key])
    return class_name(identifier)


# -- attack and scenario results ----------------------------------------------------------
def claims_attacks(doc: Any) -> bool:
    if isinstance(doc, dict):
        return isinstance(doc.get("attack_results"), list | dict)
    first = doc[0] if isinstance(doc, list) and doc else None
    return (
        isinstance(first, dict)
        and "objective" in first
        and ("outcome" in first or any(k in first for k in _SCORE_KEYS))
    )


def read_attacks(path: Path) -> Iterator[InputRecord]:
    return guarded(path, _attack_records(path))


_ATTACK_HEAD = frozenset({"id", "scenario_id", "objective_target_identifier"})
_ATTACK_STOPS = frozenset(
    {("", START_ARRAY), ("attack_results", START_ARRAY), ("attack_results", START_MAP)}
)


def _attack_list(path: Path, top: Head) -> Iterator[tuple[str | None, Any]]:
    """(strategy, result) as they are parsed: a list of results, at the top or in
    `attack_results`, or a ScenarioResult's `{atomic attack name: [results]}`."""
    if top.stop_event == START_MAP:
        for name, results in kvitems(path, "attack_results"):
            for result in results if isinstance(results, list) else [results]:
                yield str(name), result
        return
    prefix = "item" if top.stop == "" else "attack_results.item"
    for result in items(path, prefix):
        yield None, result


def _attack_records(path: Path) -> Iterator[InputRecord]:
    top = head(path, _ATTACK_HEAD, _ATTACK_STOPS)
    if top.stop is None:
        raise document_error(path, "attack_results", "not a list of PyRIT attack results")
    context = top.values if top.stop else {}
    results = _attack_list(path, top)
    if top.stop == "":  # a bare list: its first item says whether it holds attack results
        first = next(results, None)
        if first is None or not claims_attacks([first[1]]):
            raise document_error(path, "attack_results", "not a list of PyRIT attack results")
        results = chain([first], results)
    for i, (strategy, result) in enumerate(results):
        at = Located(i + 1, f"attack_results[{i}]")
        if not isinstance(result, dict):
            yield bad(path, at, "(attack)", "not a JSON object")
        elif not isinstance(result.get("objective"), str):
            yield bad(path, at, "objective", "missing or not a string")
        else:
            yield attempt_record(path, at, _attack_fields(result, strategy, i, context, path))


def _conversation(result: dict[str, Any]) -> list[dict[str, Any]] | None:
    raw = result.get("conversation") or result.get("messages")
    if not isinstance(raw, list):
        return None
    turns = []
    for m in raw:
        if isinstance(m, dict) and isinstance(m.get("role"), str):
            content = m.get("content", m.get("converted_value", m.get("original_value")))
            turns.append({"role": m["role"], "content": text_of(content)})
    return turns or None


def _response_text(value: Any) -> str | None:
    if isinstance(value, list):  # the pieces of a multi-part response
        texts = [t for t in (_response_text(v) for v in value) if t]
        return "\n".join(texts) if texts else None
    if isinstance(value, dict):
        for key in ("converted_value", "original_value", "content", "text"):
            if key in value:
                return text_of(value[key])
        return None
    if isinstance(value, str):
        # `str(MessagePiece)` as `json.dump(..., default=str)` writes it: "<target>: role: text"
        printed = _PRINTED_PIECE.match(value)
        return printed.group(1) if printed else value
    return text_of(value)


def _score_of(value: Any) -> dict[str, Any] | None:
    """A score as a dict; `str(Score)` ("Scorer: category: value") is read back into one."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.count(": ") >= 2:
        scorer, rest = value.split(": ", 1)
        return {"score_value": rest.rsplit(": ", 1)[1], "scorer_class_identifier": scorer}
    return None


def outcome_value(outcome: Any) -> tuple[bool, float | None]:
    """(whether an outcome was given, its verdict): SUCCESS 1.0, FAILURE 0.0, else None."""
    if isinstance(outcome, bool):
        return True, 1.0 if outcome else 0.0
    if not isinstance(outcome, str) or not outcome:
        return False, None
    return True, _OUTCOMES.get(outcome.rsplit(".", 1)[-1].strip().lower())


def attack_verdict(result: dict[str, Any]) -> tuple[str, float | None, dict[str, Any] | None]:
    """(detector name, verdict, the objective score): the outcome decides; without one, the
    objective score's value. Named after the objective scorer's class when it is known."""
    score = next((s for k in _SCORE_KEYS if (s := _score_of(result.get(k))) is not None), None)
    given, verdict = outcome_value(result.get("outcome", result.get("success")))
    if not given and score is not None:
        verdict = pyrit_value(score)
    named = score is not None and class_name(score.get("scorer_class_identifier"))
    return (_scorer(score) if score and named else "pyrit:objective"), verdict, score


def _reply(result: dict[str, Any], turns: list[dict[str, Any]] | None) -> str | None:
    response = next((result[k] for k in ("response", "last_response") if k in result), None)
    reply = _response_text(response) if response is not None else None
    return reply if reply is not None or not turns else reply_after_last_user(turns)


def _attack_notes(result: dict[str, Any], score: dict[str, Any] | None) -> dict[str, Any]:
    notes: dict[str, Any] = {"source_format": "pyrit attack results"}
    for key in ("outcome", "outcome_reason", "executed_turns", "labels"):
        if result.get(key) not in (None, "", {}, []):
            notes[key] = result[key]
    if score is not None and score.get("score_rationale"):
        notes["score_rationale"] = score["score_rationale"]
    return notes


def _attack_fields(
    result: dict[str, Any], strategy: str | None, index: int, context: dict[str, Any], path: Path
) -> dict[str, Any]:
    turns = _conversation(result)
    name, verdict, score = attack_verdict(result)
    attack = strategy or class_name(result.get("attack_identifier"))
    attack = attack or next(
        (result[k] for k in _ATTACK_KEYS if isinstance(result.get(k), str) and result[k]), None
    )
    harms = result.get("targeted_harm_categories")
    run = context.get("id") or context.get("scenario_id")
    target = result.get("objective_target_identifier") or context.get("objective_target_identifier")
    return {
        "id": result.get("conversation_id") or f"{run or path.name}:{index}",
        "probe": f"pyrit:{attack}" if attack else "pyrit",
        "goal": result["objective"],
        "prompt": (turns and last_user_text(turns)) or text_of(result.get("prompt")),
        "outputs": [_reply(result, turns)],
        "messages": turns,
        "intent": harms[0] if isinstance(harms, list) and harms else None,
        "generator": _target_name(target),
        "run_id": str(run) if run else None,
        "latency_ms": number(result.get("execution_time_ms")),
        "notes": _attack_notes(result, score),
        "detector_results": {name: [verdict]},
    }


MEMORY = FORMATS.register(
    DocumentFormat(
        name="pyrit_memory",
        claims=claims_memory,
        head=lambda head: bool(_MEMORY_HEAD.search(head)) and b'_value"' in head,
        read=read_memory,
    )
)
ATTACKS = FORMATS.register(
    DocumentFormat(
        name="pyrit_attacks",
        claims=claims_attacks,
        head=lambda head: bool(_ATTACKS_HEAD.search(head)),
        read=read_attacks,
    )
)
