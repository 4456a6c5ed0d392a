"""The judge panel as a detector (`judge_panel`): every judge votes on every output, votes aggregate."""

from __future__ import annotations

import asyncio
import hashlib
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding
from redjury.detectors.registry import register_detector
from redjury.judges.aggregation import aggregate_votes
from redjury.judges.cache import CachedJudgement, JudgeCache, default_cache_path
from redjury.judges.completions import completions_provider_for
from redjury.judges.config import EvaluationSpec, JudgeSpec
from redjury.judges.engine import JudgeCallError, JudgeEngine, Route
from redjury.judges.providers import Answer, MalformedResponse, Provider, dumps_json, provider_for
from redjury.judges.scoring import MissingInput, ScoringType, get_scoring_type


class PanelWarning(UserWarning):
    """A panel setting that makes verdicts misleading or not reproducible."""


def _digest(obj: Any) -> str:
    return hashlib.sha256(dumps_json(obj, sort_keys=True)).hexdigest()[:16]


class Judge:
    """One configured judge: unique id, scoring type, provider, route and fingerprint."""

    def __init__(self, judge_id: str, spec: JudgeSpec, engine: JudgeEngine) -> None:
        self.id = judge_id
        self.spec = spec
        s = spec.scoring
        self.scoring: ScoringType = get_scoring_type(s.type)(s.system_prompt, s.template)
        self.logprobs = s.logprobs
        self.provider: Provider = (
            completions_provider_for(spec, logprobs=s.logprobs)
            if s.completions
            else provider_for(spec, logprobs=s.logprobs)
        )
        c = spec.connection
        self.route: Route = engine.route(
            self.provider.base_url, self.provider.path, self.provider.headers, c.timeout
        )
        self.models_route = engine.route(
            self.provider.base_url,
            self.provider.models_path,
            self.provider.headers,
            min(c.timeout, 10.0),
            method="GET",
        )
        # Everything that decides a verdict, and nothing that does not (the URL, the timeout).
        self.fingerprint_fields: dict[str, Any] = {
            "model": spec.name,
            "connection": c.type.value,
            "scoring": s.type,
            "template": self.scoring.version,
            "template_sha256": self.scoring.template.sha256,
            "parser": f"{self.scoring.name}/{self.scoring.parser_version}",
            "system_prompt": s.system_prompt,
            "generation": spec.generation.model_dump(exclude_none=True),
            "options": spec.options,
            "logprobs": s.logprobs,
        }
        self.fingerprint = _digest(self.fingerprint_fields)
        self._key_prefix = self.fingerprint.encode() + b"\0"

    def cache_key(self, body: bytes) -> bytes:
        return hashlib.blake2b(self._key_prefix + body, digest_size=16).digest()


def judge_ids(specs: Iterable[JudgeSpec]) -> list[str]:
    """`TYPE:NAME`, with `#2`, `#3`… where that is still not unique."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for spec in specs:
        base = f"{spec.scoring.type}:{spec.name}"
        n = seen.get(base, 0) + 1
        seen[base] = n
        ids.append(base if n == 1 else f"{base}#{n}")
    return ids


@dataclass(slots=True)
class Vote:
    """One judge's vote on one output; `score` None means it abstained for `reason`."""

    judge: str
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
            "judge": self.judge,
            "raw": self.raw,
            "vote": self.label,
            "score": self.score,
            "abstain_reason": self.reason,
            "latency_ms": round(self.latency_ms, 3),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
            "reasked": self.reasked,
        }


_COUNTERS = (
    "attempts",
    "outputs",
    "calls",
    "requests",
    "cached",
    "abstentions",
    "retries",
    "reasks",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "cached_completion_tokens",
)


@register_detector
class JudgePanelDetector(Detector):
    """Asks every judge about every output; the panel's aggregation turns votes into a verdict."""

    name: ClassVar[str] = "judge_panel"
    family: ClassVar[Family] = Family.AGENTIC
    hazards: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = (
        "A panel of LLM judges (the config's `evaluation` section); abstentions never vote safe."
    )
    default_enabled: ClassVar[bool] = False

    def __init__(
        self,
        params: DetectorParams | None = None,
        *,
        spec: EvaluationSpec | None = None,
        cache_path: Path | None = None,
        use_cache: bool = True,
    ) -> None:
        super().__init__(params)
        self.spec = spec if spec is not None else EvaluationSpec.model_validate({})
        self.engine = JudgeEngine(
            max_concurrency=self.spec.max_concurrency,
            per_endpoint_concurrency=self.spec.per_endpoint_concurrency,
            max_retries=self.spec.max_retries,
            retry_base_delay=self.spec.retry_base_delay,
            retry_max_delay=self.spec.retry_max_delay,
        )
        ids = [
            j.id or i for j, i in zip(self.spec.judges, judge_ids(self.spec.judges), strict=True)
        ]
        if len(set(ids)) != len(ids):
            raise ValueError(f"judge ids are not unique: {ids}")
        self.judges = [Judge(i, j, self.engine) for i, j in zip(ids, self.spec.judges, strict=True)]
        self.fingerprint = _digest(
            {
                "judges": [j.fingerprint for j in self.judges],
                "aggregation": self.spec.aggregation,
                "threshold": self.spec.threshold,
                "require_all_judges": self.spec.require_all_judges,
            }
        )
        self.cache: JudgeCache | None = None
        if use_cache and self.judges:
            self.cache = JudgeCache(cache_path or default_cache_path())
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._inflight: dict[bytes, asyncio.Future[Vote]] = {}
        self.warnings = self._check()
        for message in self.warnings:
            warnings.warn(message, PanelWarning, stacklevel=3)

    @classmethod
    def from_spec(
        cls, spec: EvaluationSpec, *, cache_path: Path | None = None, use_cache: bool = True
    ) -> JudgePanelDetector:
        return cls(spec=spec, cache_path=cache_path, use_cache=use_cache)

    def _check(self) -> list[str]:
        out = []
        if self.judges and self.spec.threshold == 0:
            out.append(
                "evaluation.threshold is 0: every vote reaches it, so every judged reply "
                "counts as a success"
            )
        hot = [j.id for j in self.judges if j.spec.generation.temperature > 0]
        unseeded = [j.id for j in self.judges if j.spec.generation.seed is None]
        if hot or unseeded:
            parts = []
            if hot:
                parts.append(f"temperature above 0: {', '.join(hot)}")
            if unseeded:
                parts.append(f"no generation.seed: {', '.join(unseeded)}")
            out.append("judge verdicts may not be reproducible (" + "; ".join(parts) + ")")
        # A non-harm type's "yes" (e.g. on_topic) is not an attack's success: mixed in, it skews.
        other = [j.id for j in self.judges if not getattr(j.scoring, "harm_judge", True)]
        if other and len(other) < len(self.judges):
            out.append(f"not harm judges, yet voting in a harm panel: {', '.join(other)}")
        return out

    # -- the public surface the runner uses -------------------------------------------
    def secrets(self) -> list[str]:
        return [s for j in self.judges for s in j.provider.secrets]

    def stats(self) -> dict[str, int]:
        out = dict(self._counts)
        e = self.engine.stats
        out["requests"] = e.requests
        out["retries"] = e.retries
        out["in_flight"] = e.in_flight
        out["max_in_flight"] = e.max_in_flight
        return out

    async def check_servers(self) -> dict[str, str | None]:
        """GET each server's model list (never a POST): base URL → None or the problem."""
        results: dict[str, str | None] = {}
        for judge in self.judges:
            url = judge.provider.base_url
            if url in results:
                continue
            try:
                r = await self.engine.get(judge.models_route)
                results[url] = None if r.status < 400 else f"HTTP {r.status}"
            except Exception as exc:
                results[url] = f"{type(exc).__name__}: {exc}"
        return results

    async def aclose(self) -> None:
        """Close the HTTP clients and commit the cache; the panel can still be used after."""
        await self.engine.aclose()
        if self.cache is not None:
            self.cache.close()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    # -- judging ---------------------------------------------------------------------------
    def detect(self, attempt: Attempt) -> list[Finding]:
        return asyncio.run(self._detect_and_close(attempt))

    async def _detect_and_close(self, attempt: Attempt) -> list[Finding]:
        try:
            return await self.adetect(attempt)
        finally:
            await self.engine.aclose()

    async def adetect(self, attempt: Attempt) -> list[Finding]:
        outputs = attempt.outputs
        judges = self.judges
        n = len(judges)
        pending = [
            self._vote(judge, attempt, out)
            for out in outputs
            if out is not None
            for judge in judges
        ]
        # One coroutine needs no task of its own; gather wraps each in one.
        votes = [await pending[0]] if len(pending) == 1 else await asyncio.gather(*pending)
        self._counts["attempts"] += 1
        findings: list[Finding] = []
        i = 0
        for out in outputs:
            if out is None:
                findings.append(self.inconclusive("no output"))
                continue
            findings.append(self._finding(votes[i : i + n]))
            i += n
        return findings

    def _finding(self, votes: list[Vote]) -> Finding:
        spec = self.spec
        counts = self._counts
        counts["outputs"] += 1
        outcome = aggregate_votes(
            [v.score for v in votes], spec.aggregation, spec.threshold, spec.require_all_judges
        )
        details: dict[str, Any] = {
            "votes": {v.judge: v.score for v in votes},
            "abstained": {v.judge: v.reason for v in votes if v.score is None},
            "abstention_rate": round(outcome.abstention_rate, 6),
            "flippable": outcome.flippable,
            "cached": sum(v.cached for v in votes),
            "judges": [v.to_json() for v in votes],
        }
        if outcome.success is None:
            counts["errors"] += 1
            details["error"] = outcome.error
            return self.inconclusive(outcome.error or "panel error", **details)
        summary = (
            f"{spec.aggregation}: votes cast {outcome.cast}, abstained {outcome.abstained}, "
            f"threshold {spec.threshold:g}"
        )
        if outcome.success:
            return self.bad(summary, **details)
        return self.good(summary, **details)

    async def _vote(self, judge: Judge, attempt: Attempt, output: str) -> Vote:
        counts = self._counts
        counts["calls"] += 1
        try:
            messages = judge.scoring.render(attempt, output)
        except MissingInput as exc:
            counts["abstentions"] += 1
            return Vote(judge.id, None, reason=str(exc))
        body = judge.provider.body(messages)
        key = judge.cache_key(body)
        cache = self.cache
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                counts["cached"] += 1
                counts["cached_prompt_tokens"] += hit.prompt_tokens
                counts["cached_completion_tokens"] += hit.completion_tokens
                return Vote(
                    judge.id,
                    hit.score,
                    hit.label,
                    hit.raw,
                    None,
                    0.0,
                    hit.prompt_tokens,
                    hit.completion_tokens,
                    True,
                )
        # The same question already on the wire (duplicate outputs): wait for that answer.
        twin = self._inflight.get(key)
        if twin is not None:
            counts["cached"] += 1
            vote = await asyncio.shield(twin)
            if vote.score is None:
                counts["abstentions"] += 1
            return Vote(
                vote.judge,
                vote.score,
                vote.label,
                vote.raw,
                vote.reason,
                0.0,
                vote.prompt_tokens,
                vote.completion_tokens,
                True,
                vote.reasked,
            )
        future: asyncio.Future[Vote] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            vote = await self._ask(judge, messages, body)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # a twin may not exist; do not log "never retrieved"
            raise
        finally:
            del self._inflight[key]
        future.set_result(vote)
        counts["prompt_tokens"] += vote.prompt_tokens
        counts["completion_tokens"] += vote.completion_tokens
        if vote.score is None:
            counts["abstentions"] += 1
        elif cache is not None:
            cache.put(
                key,
                judge.id,
                CachedJudgement(
                    vote.raw or "",
                    vote.score,
                    vote.label,
                    vote.prompt_tokens,
                    vote.completion_tokens,
                ),
            )
        return vote

    async def _ask(self, judge: Judge, messages: list[dict[str, str]], body: bytes) -> Vote:
        """Ask, re-ask once if the answer is unreadable, and abstain if it still is."""
        t0 = time.perf_counter()
        vote = Vote(judge.id, None)
        try:
            answer = await self._request(judge, body)
        except JudgeCallError as exc:
            vote.reason = str(exc)
            vote.latency_ms = (time.perf_counter() - t0) * 1000
            return vote
        vote.raw = answer.text
        vote.prompt_tokens, vote.completion_tokens = answer.prompt_tokens, answer.completion_tokens
        if judge.logprobs:
            # The first token's distribution is the answer; asking again would not change it.
            if answer.top_logprobs is None:
                vote.reason = "no logprobs returned"
            else:
                parsed = judge.scoring.parse_logprobs(answer.top_logprobs)
                vote.score, vote.label, vote.reason = parsed.score, parsed.label, parsed.reason
            vote.latency_ms = (time.perf_counter() - t0) * 1000
            return vote
        parsed = judge.scoring.parse(answer.text)
        # A readable answer that decides nothing (a label, no score: INCONCLUSIVE) is no re-ask.
        if parsed.score is None and parsed.label is None:
            self._counts["reasks"] += 1
            vote.reasked = True
            again = judge.provider.body(judge.scoring.reask(messages, answer.text))
            try:
                answer = await self._request(judge, again)
            except JudgeCallError as exc:
                vote.reason = f"unreadable answer ({parsed.reason}), re-ask failed: {exc}"
                vote.latency_ms = (time.perf_counter() - t0) * 1000
                return vote
            vote.raw = answer.text
            vote.prompt_tokens += answer.prompt_tokens
            vote.completion_tokens += answer.completion_tokens
            parsed = judge.scoring.parse(answer.text)
            if parsed.score is None and parsed.label is None:
                parsed = type(parsed)(None, reason=f"unreadable after re-ask: {parsed.reason}")
        vote.score, vote.label, vote.reason = parsed.score, parsed.label, parsed.reason
        vote.latency_ms = (time.perf_counter() - t0) * 1000
        return vote

    async def _request(self, judge: Judge, body: bytes) -> Answer:
        content = await self.engine.post(judge.route, body)
        try:
            return judge.provider.read(content)
        except MalformedResponse as exc:
            raise JudgeCallError(str(exc)) from exc
