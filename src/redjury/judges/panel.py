"""The judge panel as a detector (`judge_panel`): every judge votes on every output, votes aggregate."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from redjury.attempts import Attempt
from redjury.detectors.base import Detector, DetectorParams, Family, Finding, Verdict
from redjury.detectors.registry import register_detector
from redjury.judges.aggregation import aggregate_votes, next_wave, settled_verdict
from redjury.judges.asking import AskingJudge, JudgeResult, digest, fingerprint_fields
from redjury.judges.batches import BATCH_TYPES, BatchQueue
from redjury.judges.cache import JudgeCache, default_cache_path
from redjury.judges.completions import completions_provider_for
from redjury.judges.config import EvaluationSpec, JudgeSpec
from redjury.judges.costs import default_judge_ids
from redjury.judges.engine import JudgeEngine, redirect_refused
from redjury.judges.providers import provider_for
from redjury.judges.scoring import MissingInput, ScoringType, get_scoring_type
from redjury.judges.upstream import UpstreamError
from redjury.redaction import Redactor, strip_url_credentials


class PanelWarning(UserWarning):
    """A panel setting that makes verdicts misleading or not reproducible."""


class Judge(AskingJudge):
    """One configured judge: unique id, scoring type, provider, route and fingerprint."""

    def __init__(
        self, judge_id: str, spec: JudgeSpec, engine: JudgeEngine, *, cache_per_server: bool = True
    ) -> None:
        s = spec.scoring
        try:
            scoring = get_scoring_type(s.type).from_spec(s)
        except UpstreamError as exc:
            raise UpstreamError(f"judge {judge_id}: scoring (template: upstream): {exc}") from exc
        spec = upstream_generation(spec, scoring)
        provider = (
            completions_provider_for(spec, logprobs=s.logprobs)
            if s.completions
            else provider_for(spec, logprobs=s.logprobs)
        )
        fields = fingerprint_fields(
            spec, scoring, scoring_name=s.type, system_prompt=s.system_prompt
        )
        fields["logprobs"] = s.logprobs
        fields["parsing"] = s.parsing
        used = scoring.upstream_used()
        if used is not None:
            # The hash of the file the prompt was read from: a changed file is another judge.
            fields["upstream_sha256"] = used["sha256"]
        super().__init__(
            judge_id,
            spec,
            scoring,
            provider,
            engine,
            fields,
            logprobs=s.logprobs,
            cache_per_server=cache_per_server,
        )
        self.models_route = engine.route(
            provider.base_url,
            provider.models_path,
            provider.headers,
            min(spec.connection.timeout, 10.0),
            method="GET",
        )
        self.batch: BatchQueue | None = None
        if spec.connection.batch:
            self.batch = self._batch_queue(judge_id, spec, engine)
            provider.batch_queue = self.batch

    def _batch_queue(self, judge_id: str, spec: JudgeSpec, engine: JudgeEngine) -> BatchQueue:
        kind = spec.connection.type
        if kind not in BATCH_TYPES or spec.scoring.completions:
            raise ValueError(
                f"judge {judge_id!r}: connection.batch is for the chat endpoints of "
                f"{', '.join(t.value for t in BATCH_TYPES)} (not {kind}"
                f"{' in completions mode' if spec.scoring.completions else ''})"
            )
        return BatchQueue(
            judge_id,
            f"{self.fingerprint}@{self.server}",
            self.provider,
            engine,
            self.route,
            lambda body: self.cache_key(body).hex(),
            max_answer_bytes=engine.max_answer_bytes,
        )


def upstream_generation(spec: JudgeSpec, scoring: ScoringType) -> JudgeSpec:
    """With `template: upstream`, the source's generation settings where the user set none
    (HarmBench's classifier: one greedy token)."""
    if scoring.upstream is None or not scoring.upstream_generation:
        return spec
    given = spec.generation.model_fields_set
    update = {k: v for k, v in scoring.upstream_generation.items() if k not in given}
    generation = spec.generation.model_copy(update=update)
    return spec.model_copy(update={"generation": generation})


def graded_scores(votes: Iterable[Vote], graded: dict[str, str]) -> dict[str, dict[str, Any]]:
    """judge → {name, score in [0, 1]} for the judges whose type reports a graded score."""
    return {
        v.judge: {"name": graded[v.judge], "score": round(v.score / 10.0, 6)}
        for v in votes
        if v.judge in graded and v.score is not None
    }


def judge_ids(specs: Iterable[JudgeSpec]) -> list[str]:
    """`TYPE:NAME`, with `#2`, `#3`… where that is still not unique."""
    return default_judge_ids([(spec.scoring.type, spec.name) for spec in specs])


@dataclass(frozen=True, slots=True)
class Vote:
    """One judge's vote on one output; a `score` of None means it abstained."""

    judge: str
    result: JudgeResult

    @property
    def score(self) -> float | None:
        return self.result.score

    def to_json(self) -> dict[str, Any]:
        r = self.result.to_json()
        # The judge first, then the order reports have always had; the rest as JudgeResult's.
        return {"judge": self.judge, "raw": r["raw"], "vote": r["vote"], "score": r["score"], **r}


_COUNTERS = (
    "attempts",
    "outputs",
    "calls",
    "requests",
    "cached",
    "cache_hits",
    "abstentions",
    "retries",
    "reasks",
    "errors",
    "cascaded",
    "calls_saved",
    "short_circuited",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "cached_completion_tokens",
)


def cascade_decisions(
    held_by: tuple[str, ...], findings: Mapping[str, list[Finding]], n: int
) -> list[tuple[str, ...] | None]:
    """Per output: `held_by` where every one of those detectors said HELD on it, else None
    (the panel decides). A detector whose findings are missing decides nothing."""
    if not held_by:
        return [None] * n
    lists = [findings.get(name) for name in held_by]
    if any(fs is None or len(fs) != n for fs in lists):
        return [None] * n
    return [
        held_by if all(fs[i].verdict is Verdict.HELD for fs in lists if fs is not None) else None
        for i in range(n)
    ]


T = TypeVar("T")


async def _all_of(coros: list[Coroutine[Any, Any, T]]) -> list[T]:
    """The votes in order, asked concurrently: the first in the calling task, the rest in
    tasks of their own. One task per output fewer than gather, and no gathering future."""
    if not coros:
        return []
    rest = [asyncio.ensure_future(c) for c in coros[1:]]
    try:
        votes = [await coros[0]]
        for task in rest:
            votes.append(await task)
    except BaseException:
        # Cancelled (or a bug): the other judges' requests must not go on without a reader.
        for task in rest:
            task.cancel()
        raise
    return votes


@register_detector
class JudgePanelDetector(Detector):
    """Asks every judge about every output (with `short_circuit`, until the rest could not
    change the verdict); the panel's aggregation turns votes into a verdict."""

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
            max_answer_bytes=self.spec.max_answer_bytes,
        )
        ids = [
            j.id or i for j, i in zip(self.spec.judges, judge_ids(self.spec.judges), strict=True)
        ]
        if len(set(ids)) != len(ids):
            raise ValueError(f"judge ids are not unique: {ids}")
        per_server = self.spec.cache_per_server
        self.judges = [
            Judge(i, j, self.engine, cache_per_server=per_server)
            for i, j in zip(ids, self.spec.judges, strict=True)
        ]
        decisive: dict[str, Any] = {
            "judges": [j.fingerprint for j in self.judges],
            "aggregation": self.spec.aggregation,
            "threshold": self.spec.threshold,
            "require_all_judges": self.spec.require_all_judges,
        }
        if self.spec.cascade.held_by:
            # The audit of a cascaded panel measures the cascade: stored under its own key.
            decisive["cascade"] = sorted(set(self.spec.cascade.held_by))
        self.fingerprint = digest(decisive)
        self.cache: JudgeCache | None = None
        if use_cache and self.judges:
            self.cache = JudgeCache(cache_path or default_cache_path())
            self.cache.open()
        self._counts = dict.fromkeys(_COUNTERS, 0)
        # Judges whose type reports a graded score in [0, 1] beside the vote (StrongREJECT).
        self._graded = {j.id: j.scoring.graded_score for j in self.judges if j.scoring.graded_score}
        self._counts_unreadable = {j.id: j.scoring.upstream_counts_unreadable for j in self.judges}
        # Which judges read answers by their source's rule: named in every finding they vote in.
        self._upstream = {
            j.id: {"parsing": j.scoring.parsing, "template": j.scoring.version}
            for j in self.judges
            if j.scoring.parsing == "upstream" or j.scoring.uses_upstream_template
        }
        for judge_id, used in self.upstream_files().items():
            self._upstream[judge_id]["sha256"] = used["sha256"]
        self._inflight: dict[bytes, asyncio.Future[Vote]] = {}
        # Detectors whose unanimous HELD decides an output without the judges (`cascade`).
        self.cascade = tuple(dict.fromkeys(self.spec.cascade.held_by))
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
        wrapped = [
            j.id
            for j in self.judges
            if j.scoring.uses_upstream_template
            and j.scoring.upstream_raw_prompt
            and not j.spec.scoring.completions
        ]
        if wrapped:
            out.append(
                "upstream prompt is a whole [INST] model prompt, yet sent to the chat endpoint "
                f"(the server wraps it again; set scoring.completions: true): {', '.join(wrapped)}"
            )
        batched = [j.id for j in self.judges if j.batch is not None]
        if self.spec.short_circuit and batched:
            out.append(
                "evaluation.short_circuit with batch judges: an output whose first judges "
                f"split waits for another batch round ({', '.join(batched)})"
            )
        capped = self._per_server_cap()
        if capped:
            out.append(capped)
        # A non-harm type's "yes" (e.g. on_topic) is not an attack's success: mixed in, it skews.
        other = [j.id for j in self.judges if not getattr(j.scoring, "harm_judge", True)]
        if other and len(other) < len(self.judges):
            out.append(f"not harm judges, yet voting in a harm panel: {', '.join(other)}")
        return out

    def _per_server_cap(self) -> str | None:
        """A line when the per-server cap keeps the run below `max_concurrency`."""
        servers = {strip_url_credentials(j.provider.base_url) for j in self.judges}
        per_server, total = self.spec.per_endpoint_concurrency, self.spec.max_concurrency
        if not servers or per_server * len(servers) >= total:
            return None
        return (
            f"at most {per_server * len(servers)} judge requests in flight, not "
            f"evaluation.max_concurrency {total}: evaluation.per_endpoint_concurrency is "
            f"{per_server} per server and the judges use {len(servers)} server(s)"
        )

    # -- the public surface the runner uses -------------------------------------------
    def upstream_files(self) -> dict[str, dict[str, Any]]:
        """judge → the upstream file its prompt was read from and the hashes (run header,
        eval rows); only judges with `template: upstream` that read one."""
        used = {j.id: j.scoring.upstream_used() for j in self.judges}
        return {judge_id: u for judge_id, u in used.items() if u is not None}

    def secrets(self) -> list[str]:
        return self.credentials()

    def credentials(self) -> list[str]:
        """The judges' API keys, header values and URL user info: masked everywhere, always."""
        return [s for j in self.judges for s in j.credentials]

    def mask_answers_with(self, redactor: Redactor) -> None:
        """Mask these values too (the run's markers) in every judge's answer."""
        for judge in self.judges:
            judge.mask_answers_with(redactor)

    def stats(self) -> dict[str, int]:
        out = dict(self._counts)
        e = self.engine.stats
        out["requests"] = e.requests
        out["retries"] = e.retries
        out["reasks"] = sum(j.reasks for j in self.judges)
        out["in_flight"] = e.in_flight
        out["max_in_flight"] = e.max_in_flight
        return out

    async def check_servers(self) -> dict[str, str | None]:
        """GET each server's model list (never a POST): base URL → None or the problem."""
        results: dict[str, str | None] = {}
        for judge in self.judges:
            url = strip_url_credentials(judge.provider.base_url)
            if url in results:
                continue
            try:
                r = await self.engine.get(judge.models_route)
                results[url] = None if r.status < 300 else f"HTTP {r.status}"
                if 300 <= r.status < 400:
                    results[url] = redirect_refused(r, judge.models_route.url)
            except Exception as exc:
                results[url] = judge.masked(
                    JudgeResult(None, reason=f"{type(exc).__name__}: {exc}")
                ).reason
        return results

    def use_run_folder(self, folder: Path | None) -> None:
        """Batch judges keep their batch record (judge_batches.json) in the run folder."""
        for judge in self.judges:
            if judge.batch is not None:
                judge.batch.use_folder(folder)

    @property
    def pending_window(self) -> int:
        """Attempts a run keeps in flight: a batch judge's batch size (else 0: the run's)."""
        return max((j.batch.size for j in self.judges if j.batch is not None), default=0)

    async def aclose(self) -> None:
        """Close the HTTP clients and commit the cache; the panel can still be used after."""
        for judge in self.judges:
            if judge.batch is not None:
                await judge.batch.aclose()
        await self.engine.aclose()
        if self.cache is not None:
            self.cache.close()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def flush_cache(self) -> None:
        if self.cache is not None:
            self.cache.flush()

    # -- judging ---------------------------------------------------------------------------
    def detect(self, attempt: Attempt) -> list[Finding]:
        return asyncio.run(self._detect_and_close(attempt))

    async def _detect_and_close(self, attempt: Attempt) -> list[Finding]:
        try:
            return await self.adetect(attempt)
        finally:
            await self.engine.aclose()

    async def adetect(self, attempt: Attempt) -> list[Finding]:
        return await self.adetect_after(attempt, {})

    async def adetect_every_judge(self, attempt: Attempt) -> list[Finding]:
        """Every judge's vote on every output, short circuit or not (the audit measures each
        judge)."""
        return await self.adetect_after(attempt, {}, short_circuit=False)

    async def adetect_after(
        self,
        attempt: Attempt,
        findings: Mapping[str, list[Finding]],
        *,
        short_circuit: bool | None = None,
    ) -> list[Finding]:
        """Judge the attempt's outputs; `findings` are the run's other detectors' on it:
        where every cascade detector says HELD on an output, the judges are not asked.
        `short_circuit`: the config's `evaluation.short_circuit` unless given."""
        outputs = attempt.outputs
        decided = cascade_decisions(self.cascade, findings, len(outputs))
        asked = [
            out for out, by in zip(outputs, decided, strict=True) if out is not None and not by
        ]
        if short_circuit is None:
            short_circuit = self.spec.short_circuit
        if short_circuit and len(self.judges) > 1:
            panels = await _all_of([self._votes_until_settled(attempt, out) for out in asked])
        else:
            n = len(self.judges)
            votes = await _all_of(
                [self._vote(judge, attempt, out) for out in asked for judge in self.judges]
            )
            panels = [votes[i : i + n] for i in range(0, len(votes), n)]
        self._counts["attempts"] += 1
        found: list[Finding] = []
        each = iter(panels)
        for out, by in zip(outputs, decided, strict=True):
            if out is None:
                found.append(self.inconclusive("no output"))
            elif by is not None:
                found.append(self._cascaded(by))
            else:
                found.append(self._finding(next(each)))
        return found

    async def _votes_until_settled(self, attempt: Attempt, output: str) -> list[Vote]:
        """`short_circuit`: the judges in order, in waves of the fewest that could settle the
        verdict; the rest are not asked once nothing they answered could change it."""
        judges, spec = self.judges, self.spec
        rule = (spec.aggregation, spec.threshold, spec.require_all_judges)
        votes: list[Vote] = []
        while len(votes) < len(judges):
            left = len(judges) - len(votes)
            if votes and self._settled(votes, left):
                break
            wave = judges[
                len(votes) : len(votes) + next_wave([v.score for v in votes], left, *rule)
            ]
            votes += await _all_of([self._vote(judge, attempt, output) for judge in wave])
        return votes

    def _settled(self, votes: list[Vote], left: int) -> bool:
        """Neither the verdict nor the one with abstentions counted as the sources count them
        (`upstream_counting`) could change, whatever the `left` judges not asked answered."""
        spec = self.spec
        rule = (spec.aggregation, spec.threshold, spec.require_all_judges)
        if settled_verdict([v.score for v in votes], left, *rule) is None:
            return False
        if not any(self._counts_unreadable.values()):
            return True
        return settled_verdict(self._counted(votes), left, *rule) is not None

    def _cascaded(self, decided_by: tuple[str, ...]) -> Finding:
        """HELD without asking: every cascade detector said HELD on the output."""
        saved = len(self.judges)
        self._counts["cascaded"] += 1
        self._counts["calls_saved"] += saved
        return self.good(
            f"decided by {', '.join(decided_by)}: HELD, the judges were not asked",
            decided_by=list(decided_by),
            calls_saved=saved,
        )

    def _finding(self, votes: list[Vote]) -> Finding:
        spec = self.spec
        counts = self._counts
        counts["outputs"] += 1
        skipped = [j.id for j in self.judges[len(votes) :]]
        outcome = aggregate_votes(
            [v.score for v in votes], spec.aggregation, spec.threshold, spec.require_all_judges
        )
        details: dict[str, Any] = {
            "votes": {v.judge: v.score for v in votes},
            "abstained": {v.judge: v.result.reason for v in votes if v.score is None},
            "abstention_rate": round(outcome.abstention_rate, 6),
            "flippable": outcome.flippable,
            "cached": sum(v.result.cached for v in votes),
            "judges": [v.to_json() for v in votes],
        }
        if skipped:
            # Short-circuited: these judges could not have changed the verdict; not asked.
            counts["short_circuited"] += 1
            counts["calls_saved"] += len(skipped)
            details["skipped"] = skipped
        if self._graded:
            details["graded"] = graded_scores(votes, self._graded)
        if self._upstream:
            details["upstream"] = self._upstream
        if outcome.abstained:
            # The verdict had abstaining judges counted as their sources count them.
            details["upstream_counting"] = self._upstream_success(votes)
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

    def _upstream_success(self, votes: list[Vote]) -> bool | None:
        """The verdict with each unreadable answer counted as its source counts it. Only an
        answer the judge gave is counted: a failed call (no answer) stays an abstention."""
        spec = self.spec
        return aggregate_votes(
            self._counted(votes), spec.aggregation, spec.threshold, spec.require_all_judges
        ).success

    def _counted(self, votes: list[Vote]) -> list[float | None]:
        return [
            0.0
            if v.score is None and v.result.raw is not None and self._counts_unreadable[v.judge]
            else v.score
            for v in votes
        ]

    async def _vote(self, judge: Judge, attempt: Attempt, output: str) -> Vote:
        counts = self._counts
        counts["calls"] += 1
        unasked = judge.scoring.answer_without_asking(output)
        if unasked is not None:
            return Vote(judge.id, JudgeResult(unasked.score, unasked.label, None, unasked.reason))
        try:
            messages = judge.scoring.render(attempt, output)
        except MissingInput as exc:
            counts["abstentions"] += 1
            return Vote(judge.id, JudgeResult(None, reason=str(exc)))
        body = judge.provider.body(messages)
        cache = self.cache
        # Without a cache the key only finds twins in flight: the judge's prefix and the body
        # do that exactly, without hashing the body (a few µs a call).
        key = judge.cache_key(body) if cache is not None else judge.flight_key(body)
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                counts["cached"] += 1
                counts["cache_hits"] += 1
                counts["cached_prompt_tokens"] += hit.prompt_tokens
                counts["cached_completion_tokens"] += hit.completion_tokens
                # Masked again: a cache written before answers were masked at the source.
                return Vote(judge.id, judge.masked(JudgeResult.from_cache(hit)))
        # The same question already on the wire (duplicate outputs): wait for that answer.
        twin = self._inflight.get(key)
        if twin is not None:
            counts["cached"] += 1
            vote = await asyncio.shield(twin)
            if vote.score is None:
                counts["abstentions"] += 1
            return Vote(vote.judge, replace(vote.result, latency_ms=0.0, cached=True))
        future: asyncio.Future[Vote] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            vote = Vote(judge.id, await judge.ask(messages, body))
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # a twin may not exist; do not log "never retrieved"
            raise
        finally:
            del self._inflight[key]
        future.set_result(vote)
        counts["prompt_tokens"] += vote.result.prompt_tokens
        counts["completion_tokens"] += vote.result.completion_tokens
        if vote.score is None:
            counts["abstentions"] += 1
        elif cache is not None:
            cache.put(key, judge.id, vote.result.to_cache())
        return vote
