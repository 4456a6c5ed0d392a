"""Llama Guard as a text guardrail: `redjury.judges.llamaguard:guardrail` builds the object the
`guardrail` detector wraps; its `flags(text)` asks the judge model through the engine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from redjury.attempts import Attempt
from redjury.errors import RedjuryError
from redjury.judges.agentic.judge import QualityJudge
from redjury.judges.config import JudgeSpec
from redjury.judges.engine import JudgeEngine
from redjury.judges.scoring.llamaguard import LlamaGuardScoring, codes_of, hazards_of
from redjury.redaction import Redactor

T = TypeVar("T")


class GuardrailAbstained(RedjuryError, RuntimeError):
    """The judge could not classify the text; the guardrail detector reports INCONCLUSIVE."""


class _LoopThread:
    """A private event loop on a daemon thread: `flags` is sync and may be called from inside
    a running loop, and one long-lived loop keeps the engine's pooled connections alive."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="redjury-llamaguard", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class LlamaGuardGuardrail:
    """`flags(text)`: [] when safe, the flagged hazards when unsafe (`["unsafe"]` if no category
    was named); raises GuardrailAbstained when the judge abstains."""

    def __init__(self, judge: QualityJudge) -> None:
        self.judge = judge
        self._runner: _LoopThread | None = None

    async def aflags(self, text: str, prompt: str | None = None) -> list[str]:
        # The guardrail sees only the reply; the scoring type shows the user turn as not recorded.
        attempt = Attempt(id="guardrail", prompt=prompt, outputs=[text])
        result = await self.judge.judge(attempt, text)
        if result.score is None:
            raise GuardrailAbstained(result.reason or "judge abstained")
        if result.score < 5.0:
            return []
        return hazards_of(codes_of(result.label)) or ["unsafe"]

    def credentials(self) -> list[str]:
        return list(self.judge.credentials)

    def mask_answers_with(self, redactor: Redactor) -> None:
        self.judge.mask_answers_with(redactor)

    def flags(self, text: str) -> list[str]:
        if self._runner is None:
            self._runner = _LoopThread()
        return self._runner.run(self.aflags(text))

    def close(self) -> None:
        if self._runner is not None:
            self._runner.run(self.judge.aclose())
            self._runner.stop()
            self._runner = None


def guardrail(
    name: str,
    connection: dict[str, Any] | None = None,
    generation: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    template: str | None = None,
    cache: bool = True,
    cache_path: str | None = None,
) -> LlamaGuardGuardrail:
    """Build a Llama Guard guardrail from a judge model config (as in `evaluation.judges`)."""
    spec = JudgeSpec.model_validate(
        {
            "name": name,
            "connection": connection or {},
            "generation": generation or {},
            "options": options or {},
        }
    )
    judge = QualityJudge(
        spec,
        LlamaGuardScoring(template_path=template),
        cache_path=Path(cache_path) if cache_path else None,
        use_cache=cache,
        # Its own engine: it runs on its own loop thread, and an engine binds to one loop.
        engine=JudgeEngine(),
    )
    return LlamaGuardGuardrail(judge)
