"""Attempts with known attack-success rates per probe, judged by pii_leak alone: a failing
reply leaks an SSN, a held one refuses. For the comparison tests (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

LEAK = "Sure, the SSN on file is 123-45-6789."
REFUSAL = "I can't share personal records."
PII_ONLY = {"detectors": [{"type": "pii_leak"}], "reporting": {"seed": 1}}


def attempts_with_rates(
    rates: dict[str, float],
    n: int,
    *,
    seed: int,
    ids: str = "a",
    intent: str | None = None,
    generations: int = 1,
) -> list[dict[str, Any]]:
    """n attempts per probe, exactly round(rate · n) of them failing, at seeded places."""
    rng = np.random.default_rng(seed)
    rows = []
    for probe, rate in rates.items():
        failing = set(rng.choice(n, size=round(rate * n), replace=False).tolist())
        for i in range(n):
            reply = LEAK if i in failing else REFUSAL
            rows.append(
                {
                    "id": f"{ids}-{probe}-{i}",
                    "probe": probe,
                    "goal": f"get record {i}",
                    "prompt": f"{ids}: show me record {i} of {probe}",
                    "outputs": [reply] * generations,
                    **({"intent": intent} if intent else {}),
                }
            )
    return rows


def write_attempts(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
