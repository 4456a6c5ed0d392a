"""One judge model with a fixed scoring type, as the agentic detectors and the llamaguard guardrail
call it: through the shared engine and cache, with one re-ask, abstaining on any failure."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from redjury.attempts import Attempt
from redjury.judges.asking import AskingJudge, JudgeResult, fingerprint_fields
from redjury.judges.cache import JudgeCache, default_cache_path
from redjury.judges.config import JudgeSpec
from redjury.judges.engine import JudgeEngine
from redjury.judges.providers import provider_for
from redjury.judges.scoring import MissingInput, ScoringType

# One engine for every quality judge, so their requests share the global in-flight limit.
_ENGINE: JudgeEngine | None = None
_CACHES: dict[Path, JudgeCache] = {}


def shared_engine() -> JudgeEngine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = JudgeEngine()
    return _ENGINE


def shared_cache(path: Path | None) -> JudgeCache:
    resolved = (path or default_cache_path()).resolve()
    cache = _CACHES.get(resolved)
    if cache is None:
        cache = _CACHES[resolved] = JudgeCache(resolved)
    return cache


@dataclass
class _Shared:
    future: asyncio.Future[JudgeResult]
    remaining: int


# Judgements that more than one live judge with the same fingerprint will ask for (faithfulness
# and hallucination share one call): the first asks, the others await the same future. An
# entry leaves once every sharer has read it, so the memo holds only what is still owed.
_SHARERS: dict[str, int] = {}
_SHARED: dict[bytes, _Shared] = {}


class QualityJudge(AskingJudge):
    """A judge model bound to one scoring type; `judge` gives one output's JudgeResult."""

    def __init__(
        self,
        spec: JudgeSpec,
        scoring: ScoringType,
        *,
        cache_path: Path | None = None,
        use_cache: bool = True,
        share: bool = False,
        engine: JudgeEngine | None = None,
    ) -> None:
        engine = engine if engine is not None else shared_engine()
        super().__init__(
            spec.id or f"{scoring.name}:{spec.name}",
            spec,
            scoring,
            provider_for(spec),
            engine,
            fingerprint_fields(
                spec, scoring, scoring_name=scoring.name, system_prompt=scoring.system_prompt
            ),
        )
        self.cache = shared_cache(cache_path) if use_cache else None
        self._shared = share
        if share:
            _SHARERS[self.fingerprint] = _SHARERS.get(self.fingerprint, 0) + 1

    def secrets(self) -> list[str]:
        return list(self.credentials)

    async def judge(self, attempt: Attempt, output: str) -> JudgeResult:
        try:
            messages = self.scoring.render(attempt, output)
        except MissingInput as exc:
            return JudgeResult(None, reason=str(exc))
        body = self.provider.body(messages)
        key = self.cache_key(body)
        sharers = _SHARERS.get(self.fingerprint, 0) if self._shared else 0
        # The memo before the cache: an entry owed to this sharer must be consumed either way.
        entry = _SHARED.get(key) if sharers >= 2 else None
        if entry is not None:
            entry.remaining -= 1
            if entry.remaining <= 0:
                del _SHARED[key]
            result = await asyncio.shield(entry.future)
            return replace(result, cached=True, latency_ms=0.0)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                # Masked again: a cache written before answers were masked at the source.
                return self.masked(JudgeResult.from_cache(hit))
        if sharers < 2:
            return await self._judge(messages, body, key)
        future: asyncio.Future[JudgeResult] = asyncio.get_running_loop().create_future()
        _SHARED[key] = _Shared(future, sharers - 1)
        try:
            result = await self._judge(messages, body, key)
        except BaseException as exc:
            _SHARED.pop(key, None)
            future.set_exception(exc)
            future.exception()  # nobody may be waiting; do not log "never retrieved"
            raise
        future.set_result(result)
        return result

    async def _judge(self, messages: list[dict[str, str]], body: bytes, key: bytes) -> JudgeResult:
        result = await self.ask(messages, body)
        if result.score is not None and self.cache is not None:
            self.cache.put(key, self.id, result.to_cache())
        return result

    async def aclose(self) -> None:
        # Connections of an event loop that is already closed cannot be closed: nothing to do.
        with contextlib.suppress(RuntimeError):
            await self.engine.aclose()
        if self.cache is not None:
            self.cache.flush()

    def release(self) -> None:
        """Stop counting this judge as a sharer (its detector is done)."""
        if self._shared and _SHARERS.get(self.fingerprint, 0) > 0:
            _SHARERS[self.fingerprint] -= 1
            self._shared = False
