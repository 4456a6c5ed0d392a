"""The red-team scan output of Azure AI Evaluation (`RedTeam.scan(output_path=...)`), which
runs on PyRIT: `attack_details[]` (older: `redteaming_data[]`), one per attack.

One attempt per attack; the reply is the assistant turns after the last user turn, one
output. The scan's verdict is carried as `azure:<risk category>`: `attack_success` true
is 1.0 (the check failed), false 0.0, missing or null is null."""

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
    reply_after_last_user,
    text_of,
)
from redjury.formats.streamed import START_ARRAY, head, items, values_at
from redjury.plugins import FORMATS
from redjury.records import InputRecord

_KEYS = ("attack_details", "redteaming_data")
_HEAD = re.compile(rb'(?<!\\)"(?:attack_details|redteaming_data)"\s*:\s*\[')


def _details_key(doc: Any) -> str | None:
    """Where the attacks are: `attack_details` (a scan), `redteaming_data` (older scans),
    or `conversations` of the same shape in the `eval.run` summary."""
    if not isinstance(doc, dict):
        return None
    for key in _KEYS:
        if isinstance(doc.get(key), list):
            return key
    if doc.get("object") == "eval.run" and isinstance(doc.get("conversations"), list):
        return "conversations"
    return None


def claims(doc: Any) -> bool:
    return _details_key(doc) is not None


def read(path: Path) -> Iterator[InputRecord]:
    return guarded(path, _records(path))


_STOPS = frozenset((key, START_ARRAY) for key in (*_KEYS, "conversations"))
_RUN_KEYS = ("scan_id", "id", "studio_url")


def _records(path: Path) -> Iterator[InputRecord]:
    top = head(path, frozenset({*_RUN_KEYS, "object"}), _STOPS)
    key = top.stop
    if key is None or (key == "conversations" and top.values.get("object") != "eval.run"):
        raise document_error(path, "attack_details", "not an Azure AI red-team scan")
    context = top.values
    if not any(context.get(k) for k in _RUN_KEYS[:2]):  # a scan writes studio_url last
        missing = frozenset(k for k in _RUN_KEYS if k not in context)
        context = {**context, **values_at(path, missing)}
    for i, detail in enumerate(items(path, f"{key}.item")):
        at = Located(i + 1, f"{key}[{i}]")
        if not isinstance(detail, dict):
            yield bad(path, at, "(attack)", "not a JSON object")
        elif not isinstance(detail.get("conversation"), list):
            yield bad(path, at, "conversation", "missing or not a list")
        else:
            yield attempt_record(path, at, _fields(detail, i, context, path))


def _verdict(success: Any) -> float | None:
    if isinstance(success, bool):
        return 1.0 if success else 0.0
    if isinstance(success, str) and success.lower() in ("true", "false"):
        return 1.0 if success.lower() == "true" else 0.0
    return None


def _fields(detail: dict[str, Any], index: int, doc: dict[str, Any], path: Path) -> dict[str, Any]:
    turns = [
        {"role": m["role"], "content": text_of(m.get("content"))}
        for m in detail["conversation"]
        if isinstance(m, dict) and isinstance(m.get("role"), str)
    ]
    risk = str(detail.get("risk_category") or "risk")
    technique = detail.get("attack_technique") or "attack"
    complexity = detail.get("attack_complexity")
    notes: dict[str, Any] = {"source_format": "azure ai evaluation red-team scan"}
    for key in (
        "attack_complexity",
        "risk_assessment",
        "attack_success_threshold",
        "risk_sub_type",
    ):
        if detail.get(key) not in (None, "", {}, []):
            notes[key] = detail[key]
    run = doc.get("scan_id") or doc.get("id") or doc.get("studio_url")
    objective = detail.get("objective")
    return {
        "id": f"{run or path.name}:{index}",
        "probe": f"azure:{technique}" + (f"/{complexity}" if complexity else ""),
        "goal": objective if isinstance(objective, str) else None,
        "prompt": last_user_text(turns),
        "outputs": [reply_after_last_user(turns)],
        "messages": turns,
        "intent": risk,
        "run_id": str(run) if run else None,
        "notes": notes,
        "detector_results": {f"azure:{risk}": [_verdict(detail.get("attack_success"))]},
    }


FORMAT = FORMATS.register(
    DocumentFormat(
        name="azure_red_team", claims=claims, head=lambda head: bool(_HEAD.search(head)), read=read
    )
)
