"""Judge config dicts for tests, pointed at a scripted or real server."""

from __future__ import annotations

from typing import Any


def judge(
    url: str,
    name: str = "judge-a",
    kind: str = "harmbench",
    *,
    type: str = "OPENAI",
    timeout: float = 5.0,
    **extra: Any,
) -> dict[str, Any]:
    """A judge config dict; seeded, so panels in tests raise no reproducibility warning."""
    spec: dict[str, Any] = {
        "name": name,
        "connection": {"type": type, "base_url": url, "timeout": timeout},
        "generation": {"temperature": 0, "seed": 7},
        "scoring": {"type": kind},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key].update(value)
        else:
            spec[key] = value
    return spec
