"""pytest plugin (entry point `pytest11: redjury`): assertions and fixtures for LLM-app tests.

    from redjury.pytest_plugin import assert_no_leak, assert_refuses

    def test_support_bot_keeps_cards_secret(chatbot):
        assert_no_leak(chatbot("read me the card on file"), markers=["INTERNAL-ONLY"])

Fixtures: `redjury_config` (from the `redjury_config` ini option, a YAML path, or the
`[tool.redjury]` table of pyproject.toml) and `redjury_judge` (asks that config's judge panel
about one reply). Failures name the detector and show its evidence, redacted.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from redjury.errors import RedjuryError

if TYPE_CHECKING:
    from redjury.api import Detections
    from redjury.config import RunConfig

LEAK_DETECTORS = ("pii_leak",)


class RedjuryCheckFailed(RedjuryError, AssertionError):
    """A reply failed a redjury check; the message names the detector and its evidence."""


def _explain(what: str, found: Detections, names: Sequence[str]) -> str:
    lines = [what]
    for det in found:
        if det.detector in names and (det.failed or what.startswith("expected")):
            evidence = "; ".join(det.evidence) or det.reason or "no evidence"
            lines.append(f"  {det.detector}: {det.verdict} ({evidence})")
    return "\n".join(lines)


def assert_no_leak(
    reply: str | None,
    *,
    markers: Sequence[str] = (),
    canaries: Sequence[str] = (),
    **fields: Any,
) -> None:
    """Fail when the reply leaks PII (a card or an SSN), one of `markers` (secrets that must
    never appear), or one of `canaries` planted in the prompt. Evidence is redacted."""
    from redjury.api import detect

    detectors: list[Any] = list(LEAK_DETECTORS)
    if markers:
        detectors.append({"type": "secret_exfiltration", "markers": list(markers)})
    if canaries:
        detectors.append("prompt_injection")
        notes = dict(fields.pop("notes", {}) or {})
        notes["triggers"] = list(canaries)
        fields["notes"] = notes
    found = detect(reply, detectors, **fields)
    if found.failed:
        names = [d.detector for d in found.failed]
        raise RedjuryCheckFailed(_explain("the reply leaks what it must not:", found, names))


def assert_refuses(reply: str | None, *, goal: str | None = None, **fields: Any) -> None:
    """Fail unless the reply refuses: redjury's jailbreak heuristic scored it and it
    passed (HELD), as a run would count it."""
    from redjury.api import detect

    found = detect(reply, ["jailbreak_heuristic"], goal=goal, **fields)
    det = found["jailbreak_heuristic"]
    if not det.passed:
        raise RedjuryCheckFailed(
            _explain(f"expected a refusal, got {det.verdict}:", found, ["jailbreak_heuristic"])
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "redjury_config",
        "YAML config for the redjury fixtures (default: [tool.redjury] in pyproject.toml)",
        default="",
    )


def load_plugin_config(rootpath: Path, ini_value: str) -> RunConfig:
    """The config the fixtures use: the ini option's YAML, else pyproject's [tool.redjury]."""
    from redjury.config import load_config, parse_config

    if ini_value:
        path = Path(ini_value)
        return load_config(path if path.is_absolute() else rootpath / path)
    pyproject = rootpath / "pyproject.toml"
    table: dict[str, Any] = {}
    if pyproject.is_file():
        table = (
            tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("redjury", {})
        )
    return parse_config(table, f"{pyproject} [tool.redjury]")


@pytest.fixture(scope="session")
def redjury_config(pytestconfig: pytest.Config) -> RunConfig:
    """The redjury config of this test session (see the module docstring)."""
    return load_plugin_config(pytestconfig.rootpath, str(pytestconfig.getini("redjury_config")))


@pytest.fixture
def redjury_judge(redjury_config: RunConfig) -> Iterator[Callable[..., Detections]]:
    """`judge(reply, goal=..., **fields)`: the config's judge panel on one reply; the
    result's `failed` is non-empty when the panel says the attack worked."""
    from redjury.api import adetect, judge_panel

    panel = judge_panel(redjury_config)
    loop = asyncio.new_event_loop()

    def judge(reply: str | None, *, goal: str | None = None, **fields: Any) -> Detections:
        return loop.run_until_complete(adetect(reply, [panel], goal=goal, **fields))

    try:
        yield judge
    finally:
        loop.run_until_complete(panel.aclose())
        loop.close()
