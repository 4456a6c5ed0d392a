"""promptfoo results JSON (`promptfoo eval -o results.json`), formats v3, v2 and v1.

One attempt per result row (test case × prompt × provider). promptfoo's own grading is
carried as `promptfoo:<assertion type>` detector results: a failed assertion is 1.0 (the
check failed), a passed one 0.0. Errored rows (`failureReason: 2`) have a null output and
null verdicts: promptfoo did not grade them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from redjury.formats.base import (
    DocumentFormat,
    Located,
    attempt_record,
    bad,
    document_error,
    guarded,
    last_user_text,
    listed,
    mapping,
    number,
    text_of,
)
from redjury.formats.streamed import START_ARRAY, head, items
from redjury.plugins import FORMATS
from redjury.records import InputRecord, loads_json

# promptfoo's ResultFailureReason: NONE = 0, ASSERT = 1, ERROR = 2.
FAILURE_ERROR = 2
# Strategies whose redteamHistory lists independent tries, not one conversation.
ITERATIVE_STRATEGIES = frozenset({"jailbreak", "jailbreak:tree", "jailbreak:meta"})
TEST_VERDICT = "promptfoo:test"
_HEAD = re.compile(rb'(?<!\\)"evalId"\s*:|\A\s*\{\s*"version"\s*:\s*1\s*,\s*"results"\s*:\s*\[')


def claims(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    results = doc.get("results")
    if "evalId" in doc or (isinstance(results, dict) and "results" in results):
        return True
    return isinstance(results, list) and "version" in doc and ("stats" in doc or "table" in doc)


def read(path: Path) -> Iterator[InputRecord]:
    return guarded(path, _records(path))


# v3 and v2 keep the rows in `results.results`, v1 in `results`; the run's id and the
# format's version come before them as promptfoo writes the file.
_ROWS = frozenset({("results.results", START_ARRAY), ("results", START_ARRAY)})
_CONTEXT = frozenset({"evalId", "version", "results.version"})


def _records(path: Path) -> Iterator[InputRecord]:
    top = head(path, _CONTEXT, _ROWS)
    if top.stop is None:
        raise document_error(path, "results.results", "not a list of results")
    context = top.values
    run_id = context.get("evalId") if isinstance(context.get("evalId"), str) else None
    version = context.get("results.version", context.get("version"))
    for i, row in enumerate(items(path, f"{top.stop}.item")):
        at = Located(i + 1, f"results[{i}]")
        if not isinstance(row, dict):
            yield bad(path, at, "(result)", "not a JSON object")
        elif "response" not in row and not row.get("error"):
            yield bad(path, at, "response", "missing (and no error recorded)")
        else:
            fields = _attempt_fields(row, i, run_id or path.name, version)
            fields["run_id"] = run_id
            yield attempt_record(path, at, fields)


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    """Red-team metadata sits on the row (v3), on its test case (older runs) or on the
    grading result; the row's own wins."""
    test = mapping(row.get("testCase") or row.get("test"))
    grading = mapping(row.get("gradingResult"))
    merged: dict[str, Any] = {}
    for source in (grading.get("metadata"), test.get("metadata"), row.get("metadata")):
        if isinstance(source, dict):
            merged.update(source)
    return merged


def _attempt_fields(row: dict[str, Any], index: int, run: str, version: Any) -> dict[str, Any]:
    meta = _meta(row)
    response = mapping(row.get("response"))
    resp_meta = mapping(response.get("metadata"))
    errored = row.get("failureReason") == FAILURE_ERROR or bool(
        row.get("error") and not row.get("gradingResult")
    )
    prompt, chat = _prompt(row)
    plugin, strategy = meta.get("pluginId"), meta.get("strategyId")
    return {
        "id": _row_id(row, index, run),
        "probe": _probe(plugin, strategy),
        "goal": meta.get("goal"),
        "prompt": resp_meta.get("redteamFinalPrompt") or prompt,
        "outputs": [None if errored else text_of(response.get("output"))],
        "messages": _transcript(resp_meta, strategy) or chat,
        "intent": meta.get("harmCategory") or plugin,
        "generator": _provider(row.get("provider")),
        "latency_ms": number(row.get("latencyMs")) or number(response.get("latencyMs")),
        "usage": _usage(response.get("tokenUsage")),
        "notes": _notes(row, meta, resp_meta, version),
        "detector_results": verdicts(row, errored),
    }


def _row_id(row: dict[str, Any], index: int, run: str) -> str:
    if isinstance(row.get("id"), str) and row["id"]:
        return row["id"]
    test_idx, prompt_idx = row.get("testIdx"), row.get("promptIdx")
    if isinstance(test_idx, int) and isinstance(prompt_idx, int):
        return f"{run}:{test_idx}:{prompt_idx}"
    return f"{run}:{index}"


def _probe(plugin: Any, strategy: Any) -> str:
    if not isinstance(plugin, str) or not plugin:
        return "promptfoo"
    if isinstance(strategy, str) and strategy and strategy != "basic":
        return f"promptfoo:{plugin}/{strategy}"
    return f"promptfoo:{plugin}"


def _prompt(row: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The prompt sent; a chat prompt (`prompt.raw` a JSON message list) also as a transcript."""
    prompt = row.get("prompt")
    raw = prompt.get("raw") if isinstance(prompt, dict) else prompt
    raw = text_of(raw)
    if raw is None or not raw.lstrip().startswith("["):
        return raw, None
    try:
        turns = loads_json(raw.encode())
    except ValueError:
        return raw, None
    if not isinstance(turns, list) or not all(
        isinstance(t, dict) and isinstance(t.get("role"), str) for t in turns
    ):
        return raw, None
    chat = [{"role": t["role"], "content": text_of(t.get("content"))} for t in turns]
    output = (
        row.get("response", {}).get("output") if isinstance(row.get("response"), dict) else None
    )
    if output is not None:
        chat.append({"role": "assistant", "content": text_of(output)})
    return last_user_text(chat) or raw, chat


def _transcript(resp_meta: dict[str, Any], strategy: Any) -> list[dict[str, Any]] | None:
    messages = resp_meta.get("messages")
    if isinstance(messages, list) and messages:
        turns = [
            {"role": m["role"], "content": text_of(m.get("content"))}
            for m in messages
            if isinstance(m, dict) and isinstance(m.get("role"), str)
        ]
        return turns or None
    history = resp_meta.get("redteamHistory")
    if not isinstance(history, list) or strategy in ITERATIVE_STRATEGIES:
        return None
    turns = []
    for step in history:
        if isinstance(step, dict) and "prompt" in step:
            turns.append({"role": "user", "content": text_of(step.get("prompt"))})
            turns.append({"role": "assistant", "content": text_of(step.get("output"))})
    return turns or None


def _provider(provider: Any) -> str | None:
    if isinstance(provider, str):
        return provider or None
    if isinstance(provider, dict):
        for key in ("id", "label"):
            if isinstance(provider.get(key), str) and provider[key]:
                return str(provider[key])
    return None


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    keys = {"prompt": "prompt_tokens", "completion": "completion_tokens", "total": "total_tokens"}
    out = {
        ours: usage[theirs]
        for theirs, ours in keys.items()
        if isinstance(usage.get(theirs), int)
        and not isinstance(usage[theirs], bool)
        and usage[theirs] >= 0
    }
    return out or None


def _notes(
    row: dict[str, Any], meta: dict[str, Any], resp_meta: dict[str, Any], version: Any
) -> dict[str, Any]:
    notes: dict[str, Any] = {"source_format": f"promptfoo v{version}" if version else "promptfoo"}
    test = mapping(row.get("testCase"))
    for key, value in (
        ("vars", row.get("vars")),
        ("description", test.get("description") or row.get("description")),
        ("error", row.get("error")),
        ("failure_reason", row.get("failureReason")),
        ("promptfoo_score", row.get("score")),
        ("strategy", meta.get("strategyId")),
        ("redteam_history", resp_meta.get("redteamHistory")),
        ("stop_reason", resp_meta.get("stopReason")),
    ):
        if value not in (None, "", {}, []):
            notes[key] = value
    grading = row.get("gradingResult")
    if isinstance(grading, dict) and grading.get("reason"):
        notes["promptfoo_reason"] = grading["reason"]
    return notes


def _components(row: dict[str, Any]) -> list[tuple[str, bool | None]]:
    grading = row.get("gradingResult")
    if not isinstance(grading, dict):
        return []
    out = []
    for comp in listed(grading.get("componentResults")):
        if not isinstance(comp, dict):
            continue
        assertion = mapping(comp.get("assertion"))
        kind = assertion.get("type")
        kind = kind if isinstance(kind, str) and kind else "assert"
        passed = comp.get("pass")
        out.append((verdict_name(kind), passed if isinstance(passed, bool) else None))
    return out


def _asserted(row: dict[str, Any]) -> list[str]:
    """The assertion types a test case declares (what promptfoo would have graded)."""
    asserts = mapping(row.get("testCase")).get("assert")
    kinds = [a.get("type") for a in listed(asserts) if isinstance(a, dict)]
    return [verdict_name(k) for k in kinds if isinstance(k, str) and k]


def verdict_name(assertion_type: str) -> str:
    """`promptfoo:<assertion type>`; red-team graders' own `promptfoo:` prefix is not doubled."""
    return "promptfoo:" + assertion_type.removeprefix("promptfoo:")


def verdicts(row: dict[str, Any], errored: bool) -> dict[str, list[float | None]]:
    """promptfoo's grading on redjury's scale, one score per output (a row has one).

    Each assertion type is its own detector (several of a type fail when any fails). When
    the assertions do not explain the row's pass or fail (a test threshold, weights, or no
    assertions at all), the row's own verdict is carried alone as `promptfoo:test`, so the
    failing count always equals promptfoo's own.
    """
    comps = _components(row)
    if errored:
        return {name: [None] for name in [n for n, _ in comps] or _asserted(row)}
    scores: dict[str, list[float | None]] = {}
    for name, passed in comps:
        if passed is None:
            scores.setdefault(name, [None])
            continue
        prior = scores.get(name, [None])[0]
        scores[name] = [max(prior or 0.0, 0.0 if passed else 1.0)]
    success = row.get("success")
    if not isinstance(success, bool):
        grading = row.get("gradingResult")
        success = grading.get("pass") if isinstance(grading, dict) else None
    if not isinstance(success, bool):
        return scores
    any_failed = any(s == [1.0] for s in scores.values())
    if scores and any_failed == (not success):
        return scores
    return {_row_grader(row, bool(comps)): [0.0 if success else 1.0]}


def _row_grader(row: dict[str, Any], has_components: bool) -> str:
    """The name for the row's own verdict: its single assertion's type where the row was
    graded by one assertion and kept no components, else `promptfoo:test`."""
    if has_components:
        return TEST_VERDICT
    assertion = mapping(mapping(row.get("gradingResult")).get("assertion")).get("type")
    if isinstance(assertion, str) and assertion:
        return verdict_name(assertion)
    asserted = _asserted(row)
    return asserted[0] if len(set(asserted)) == 1 else TEST_VERDICT


FORMAT = FORMATS.register(
    DocumentFormat(
        name="promptfoo", claims=claims, head=lambda head: bool(_HEAD.search(head)), read=read
    )
)
