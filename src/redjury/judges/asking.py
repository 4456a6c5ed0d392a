"""Asking one judge model about one output, as the panel's judges and the quality judges both do:
through the engine, re-asking once when the answer is unreadable, abstaining on any failure."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, replace
from typing import Any

from redjury.judges.cache import CachedJudgement
from redjury.judges.config import JudgeSpec
from redjury.judges.config_checks import named_file_problem
from redjury.judges.engine import JudgeCallError, JudgeEngine, Route, public_url
from redjury.judges.providers import Answer, MalformedResponse, Provider, dumps_json
from redjury.judges.scoring import Parsed, ScoringType
from redjury.redaction import Redactor, mask_found_pii, strip_url_credentials, url_credentials

#: Answers and abstention reasons are kept up to this many characters in the report and the
#: cache (a verdict needs a few; a judge that floods must not fill the disk).
STORED_TEXT_CHARS = 4000


def cut(text: str, limit: int = STORED_TEXT_CHARS) -> str:
    """The text, or its start with a note of the full length; never longer than `limit`."""
    if len(text) <= limit:
        return text
    note = f" … [cut: {len(text)} characters]"
    return text[: limit - len(note)] + note


def in_range(parsed: Parsed) -> Parsed:
    """The parsed vote, or an abstention when its score is not a finite number in 0–10."""
    score = parsed.score
    if score is None or (math.isfinite(score) and 0.0 <= score <= 10.0):
        return parsed
    return Parsed(None, reason=f"unreadable answer: score {score!r} is outside 0–10")


def digest(obj: Any) -> str:
    return hashlib.sha256(dumps_json(obj, sort_keys=True)).hexdigest()[:16]


def fingerprint_fields(
    spec: JudgeSpec, scoring: ScoringType, *, scoring_name: str, system_prompt: str | None
) -> dict[str, Any]:
    """Everything that decides a verdict, and nothing that does not (the URL, the timeout)."""
    fields = {
        "model": spec.name,
        "connection": str(spec.connection.type),
        "scoring": scoring_name,
        "template": scoring.version,
        "template_sha256": scoring.template.sha256,
        "parser": f"{scoring.name}/{scoring.parser_version}",
        "system_prompt": system_prompt,
        "generation": spec.generation.model_dump(exclude_none=True),
        "options": spec.options,
    }
    if spec.connection.deployment:
        # An Azure deployment decides the model, whatever the judge's name says.
        fields["deployment"] = spec.connection.deployment
    return fields


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

    @classmethod
    def from_cache(cls, hit: CachedJudgement) -> JudgeResult:
        return cls(
            hit.score,
            hit.label,
            hit.raw,
            prompt_tokens=hit.prompt_tokens,
            completion_tokens=hit.completion_tokens,
            cached=True,
        )

    def to_cache(self) -> CachedJudgement:
        assert self.score is not None, "an abstention is never cached"
        return CachedJudgement(
            self.raw or "", self.score, self.label, self.prompt_tokens, self.completion_tokens
        )

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


class AskingJudge:
    """A judge model with its scoring type, provider, route and fingerprint; `ask` judges once."""

    def __init__(
        self,
        judge_id: str,
        spec: JudgeSpec,
        scoring: ScoringType,
        provider: Provider,
        engine: JudgeEngine,
        fields: dict[str, Any],
        *,
        logprobs: bool = False,
        cache_per_server: bool = True,
    ) -> None:
        ca_bundle = spec.connection.ca_bundle
        problem = named_file_problem(ca_bundle) if ca_bundle else None
        if problem:
            raise ValueError(f"judge {judge_id!r}: connection.ca_bundle: {problem}")
        self.id = judge_id
        self.spec = spec
        self.scoring = scoring
        self.provider = provider
        self.engine = engine
        self.logprobs = logprobs
        self.route: Route = engine.route(
            provider.base_url,
            provider.path,
            provider.headers,
            spec.connection.timeout,
            ca_bundle=spec.connection.ca_bundle,
        )
        self.fingerprint_fields = fields
        self.fingerprint = digest(fields)
        # The server too, unless told to share: a test server's answers must not stand in
        # for production's just because both serve a model of that name.
        self.server = public_url(provider.base_url) if cache_per_server else ""
        self._key_prefix = self.fingerprint.encode() + b"\0" + self.server.encode() + b"\0"
        self.requests = 0
        self.reasks = 0
        # API key, header values and URL user info: masked in every answer, whatever the run.
        self.credentials: list[str] = [*provider.secrets, *url_credentials(provider.base_url)]
        self.answer_redactor = Redactor(self.credentials)

    def cache_key(self, body: bytes) -> bytes:
        return hashlib.blake2b(self._key_prefix + body, digest_size=16).digest()

    def flight_key(self, body: bytes) -> bytes:
        """What tells this question apart from every other while it is in flight."""
        return self._key_prefix + body

    def mask_answers_with(self, redactor: Redactor) -> None:
        """Also mask these values (the run's markers) in every answer from now on."""
        self.answer_redactor = redactor.with_values(self.credentials)

    def masked(self, result: JudgeResult) -> JudgeResult:
        """The result with its answer and reason masked: credentials, markers and any PII the
        judge quoted. Done before the result reaches the cache, a report or a log."""
        raw, reason = result.raw, result.reason
        # Masked before it is cut: a cut through a secret would keep its first half.
        if raw:
            raw = cut(self.answer_redactor.text(mask_found_pii(strip_url_credentials(raw))))
        if reason:
            reason = self.answer_redactor.text(mask_found_pii(strip_url_credentials(reason)))
            reason = cut(reason)
        if raw == result.raw and reason == result.reason:
            return result
        return replace(result, raw=raw, reason=reason)

    async def ask(self, messages: list[dict[str, str]], body: bytes) -> JudgeResult:
        """Ask (see `ask_unmasked`); the answer comes back masked."""
        return self.masked(await self.ask_unmasked(messages, body))

    async def ask_unmasked(self, messages: list[dict[str, str]], body: bytes) -> JudgeResult:
        """Ask; re-ask once when the answer is unreadable; abstain when it still is."""
        t0 = time.perf_counter()

        def elapsed() -> float:
            return (time.perf_counter() - t0) * 1000

        try:
            answer = await self.request(body)
        except JudgeCallError as exc:
            return JudgeResult(None, reason=str(exc), latency_ms=elapsed())
        tokens = (answer.prompt_tokens, answer.completion_tokens)
        if self.logprobs:
            # The first token's distribution is the answer; asking again would not change it.
            if answer.top_logprobs is None:
                failed = "no logprobs returned"
                return JudgeResult(None, None, answer.text, failed, elapsed(), *tokens)
            parsed = in_range(self.scoring.parse_logprobs(answer.top_logprobs))
        else:
            parsed = in_range(self.scoring.read(answer.text))
        # A readable answer that decides nothing (label set, no score) is final: no re-ask.
        if self.logprobs or parsed.score is not None or parsed.label is not None:
            return JudgeResult(
                parsed.score, parsed.label, answer.text, parsed.reason, elapsed(), *tokens
            )
        self.reasks += 1
        again = self.provider.body(self.scoring.reask(messages, answer.text))
        try:
            second = await self.request(again)
        except JudgeCallError as exc:
            failed = f"unreadable answer ({parsed.reason}), re-ask failed: {exc}"
            return JudgeResult(None, None, answer.text, failed, elapsed(), *tokens, reasked=True)
        tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
        parsed = in_range(self.scoring.read(second.text))
        reason = parsed.reason
        if parsed.score is None and parsed.label is None:
            reason = f"unreadable after re-ask: {parsed.reason}"
        return JudgeResult(
            parsed.score, parsed.label, second.text, reason, elapsed(), *tokens, reasked=True
        )

    async def request(self, body: bytes) -> Answer:
        self.requests += 1
        content = await self.provider.send(self.engine, self.route, body)
        try:
            return self.provider.read(content)
        except MalformedResponse as exc:
            raise JudgeCallError(str(exc)) from exc
