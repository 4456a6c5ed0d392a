"""What the judges' calls cost: tokens per judge priced by `connection.price`, and what the
cache and the cascade saved (the cascade's saving estimated from the calls made)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Per judge: [calls made, their prompt tokens, completion tokens,
#:             cached answers, their prompt tokens, completion tokens].
Usage = list[int]

CASCADE_ESTIMATE_NOTE = (
    "cascade_saved is estimated: each saved call priced at the judge's mean tokens per call"
)
SHORT_CIRCUIT_NOTE = "; short_circuit_saved likewise"


def default_judge_ids(judges: list[tuple[str, str]]) -> list[str]:
    """`TYPE:NAME` per (scoring type, model name), with `#2`, `#3`… where still not unique."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for scoring_type, name in judges:
        base = f"{scoring_type}:{name}"
        n = seen.get(base, 0) + 1
        seen[base] = n
        ids.append(base if n == 1 else f"{base}#{n}")
    return ids


def judge_prices(evaluation: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """judge id → (input, output) price per million tokens, from a run header's
    `config.evaluation`; judges without a price are left out."""
    judges = [j for j in evaluation.get("judges") or () if isinstance(j, dict)]
    pairs = [
        (str((j.get("scoring") or {}).get("type", "harmbench")), str(j.get("name"))) for j in judges
    ]
    prices: dict[str, tuple[float, float]] = {}
    for judge, default_id in zip(judges, default_judge_ids(pairs), strict=True):
        connection = judge.get("connection") or {}
        price = connection.get("price")
        if isinstance(price, dict):
            prices[judge.get("id") or default_id] = priced(price, bool(connection.get("batch")))
    return prices


def priced(price: dict[str, Any], batch: bool) -> tuple[float, float]:
    """(input, output) per million tokens; through the batch API its own prices where
    given, else the plain ones (no discount is assumed)."""
    plain = (float(price.get("input") or 0.0), float(price.get("output") or 0.0))
    if not batch:
        return plain
    given = (price.get("batch_input"), price.get("batch_output"))
    return tuple(  # type: ignore[return-value]
        float(b) if b is not None else p for b, p in zip(given, plain, strict=True)
    )


def token_cost(prompt_tokens: int, completion_tokens: int, price: tuple[float, float]) -> float:
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def judge_cost(
    judge: str, usage: Usage, price: tuple[float, float], calls_saved: int, skipped: int = 0
) -> dict[str, Any]:
    """One judge's cost, cache saving and (estimated) cascade and short-circuit savings: each
    saved call at the mean tokens of the calls made (cached answers count: their calls were
    made once). `short_circuit_saved` only where the panel skipped this judge."""
    calls, prompt, completion, cached, cached_prompt, cached_completion = usage
    cost = token_cost(prompt, completion, price)
    cache_saved = token_cost(cached_prompt, cached_completion, price)
    made = calls + cached
    per_call = (cost + cache_saved) / made if made else None
    row = {
        "judge": judge,
        "calls": calls,
        "cost": round(cost, 6),
        "cache_saved": round(cache_saved, 6),
        "cascade_saved": round(per_call * calls_saved, 6) if per_call is not None else None,
    }
    if skipped:
        row["short_circuit_saved"] = round(per_call * skipped, 6) if per_call is not None else None
    return row


def cost_summary(
    usage: dict[str, Usage],
    prices: dict[str, tuple[float, float]],
    cascaded: int,
    skipped: Mapping[str, int] | None = None,
) -> dict[str, Any] | None:
    """Per priced judge and in total: cost, cache_saved, cascade_saved (each cascaded output
    spared every judge one call) and, where the panel short-circuited, short_circuit_saved
    (`skipped`: judge → outputs it was not asked about); None when no judge has a price."""
    skipped = skipped or {}
    rows = [
        judge_cost(judge, usage.get(judge, [0] * 6), price, cascaded, skipped.get(judge, 0))
        for judge, price in sorted(prices.items())
    ]
    if not rows:
        return None
    total = {
        "cost": round(sum(r["cost"] for r in rows), 6),
        "cache_saved": round(sum(r["cache_saved"] for r in rows), 6),
        "cascade_saved": _sum_known([r["cascade_saved"] for r in rows]),
    }
    if any("short_circuit_saved" in r for r in rows):
        total["short_circuit_saved"] = _sum_known([r.get("short_circuit_saved", 0.0) for r in rows])
    note = CASCADE_ESTIMATE_NOTE + (SHORT_CIRCUIT_NOTE if "short_circuit_saved" in total else "")
    return {"judges": rows, "total": total, "note": note}


def _sum_known(values: list[float | None]) -> float | None:
    # Unknown for a judge that made no call: the total is then unknown too.
    return None if None in values else round(sum(v for v in values if v is not None), 6)
