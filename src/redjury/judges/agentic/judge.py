"""One judge model with a fixed scoring type, as the agentic detectors and the llamaguard guardrail
call it: through the shared engine and cache, with one re-ask, abstaining on any failure."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from redjury.attempts import Attempt
from redjury.judges.cache import CachedJudgement, JudgeCache, default_cache_path
from redjury.judges.config import JudgeSpec
from redjury.judges.engine import JudgeCallError, JudgeEngine
from redjury.judges.providers import Answer, MalformedResponse, dumps_json, provider_for
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


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One judgement: `score` on 0–10, or None with `reason` (the judge abstained)."""

    score: float | None
    label: str | None = None
    raw: str | None = None
    reason: str | None = None
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    reasked: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "vote": self.label,
            "raw": self.raw,
            "abstain_reason": self.reason,
            "latency_ms": round(self.latency_ms, 3),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
            "reasked": self.reasked,
        }


@dataclass
class _Shared:
    future: asyncio.Future[JudgeResult]
    remaining: int


# Judgements that more than one live judge with the same fingerprint will ask for (faithfulness
# and hallucination share one call): the first asks, the others await the same future. An
# entry leaves once every sharer has read it, so the memo holds only what is still owed.
_SHARERS: dict[str, int] = {}
_SHARED: dict[bytes, _Shared] = {}


class QualityJudge:
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
        self.spec = spec
        self.scoring = scoring
        self.engine = engine if engine is not None else shared_engine()
        self.provider = provider_for(spec)
        self.route = self.engine.route(
            self.provider.base_url,
            self.provider.path,
            self.provider.headers,
            spec.connection.timeout,
        )
        self.fingerprint_fields: dict[str, Any] = {
            "model": spec.name,
            "connection": spec.connection.type.value,
            "scoring": scoring.name,
            "template": scoring.version,
            "template_sha256": scoring.template.sha256,
            "parser": f"{scoring.name}/{scoring.parser_version}",
            "system_prompt": scoring.system_prompt,
            "generation": spec.generation.model_dump(exclude_none=True),
            "options": spec.options,
        }
        self.fingerprint = hashlib.sha256(
            dumps_json(self.fingerprint_fields, sort_keys=True)
        ).hexdigest()[:16]
        self.id = spec.id or f"{scoring.name}:{spec.name}"
        self.cache = shared_cache(cache_path) if use_cache else None
        self._shared = share
        if share:
            _SHARERS[self.fingerprint] = _SHARERS.get(self.fingerprint, 0) + 1
        self.requests = 0

    def secrets(self) -> list[str]:
        return list(self.provider.secrets)

    def _key(self, body: bytes) -> bytes:
        return hashlib.blake2b(self.fingerprint.encode() + b"\0" + body, digest_size=16).digest()

    async def judge(self, attempt: Attempt, output: str) -> JudgeResult:
        try:
            messages = self.scoring.render(attempt, output)
        except MissingInput as exc:
            return JudgeResult(None, reason=str(exc))
        body = self.provider.body(messages)
        key = self._key(body)
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
                return JudgeResult(
                    hit.score,
                    hit.label,
                    hit.raw,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    cached=True,
                )
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
        result = await self._ask(messages, body)
        if result.score is not None and self.cache is not None:
            self.cache.put(
                key,
                self.id,
                CachedJudgement(
                    result.raw or "",
                    result.score,
                    result.label,
                    result.prompt_tokens,
                    result.completion_tokens,
                ),
            )
        return result

    async def _ask(self, messages: list[dict[str, str]], body: bytes) -> JudgeResult:
        """Ask; re-ask once when the answer is unreadable; abstain when it still is."""
        t0 = time.perf_counter()

        def elapsed() -> float:
            return (time.perf_counter() - t0) * 1000

        try:
            answer = await self._request(body)
        except JudgeCallError as exc:
            return JudgeResult(None, reason=str(exc), latency_ms=elapsed())
        parsed = self.scoring.parse(answer.text)
        tokens = (answer.prompt_tokens, answer.completion_tokens)
        # A readable answer that decides nothing (label set, no score) is final: no re-ask.
        if parsed.score is not None or parsed.label is not None:
            return JudgeResult(
                parsed.score, parsed.label, answer.text, parsed.reason, elapsed(), *tokens
            )
        again = self.provider.body(self.scoring.reask(messages, answer.text))
        try:
            second = await self._request(again)
        except JudgeCallError as exc:
            failed = f"unreadable answer ({parsed.reason}), re-ask failed: {exc}"
            return JudgeResult(None, None, answer.text, failed, elapsed(), *tokens, reasked=True)
        tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
        parsed = self.scoring.parse(second.text)
        reason = parsed.reason
        if parsed.score is None and parsed.label is None:
            reason = f"unreadable after re-ask: {parsed.reason}"
        return JudgeResult(
            parsed.score, parsed.label, second.text, reason, elapsed(), *tokens, reasked=True
        )

    async def _request(self, body: bytes) -> Answer:
        self.requests += 1
        content = await self.engine.post(self.route, body)
        try:
            return self.provider.read(content)
        except MalformedResponse as exc:
            raise JudgeCallError(str(exc)) from exc

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
