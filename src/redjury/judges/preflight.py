"""Before judging, ask each judge's server once, without spending a judge call where it can be
helped (the model listing; a one-token request only where there is none): an unreachable
server, a certificate that does not verify, refused credentials or an unknown model stop the
run. A 5xx, a timeout or an unreadable answer do not: they are counted per reply as abstentions.
A batch judge (`connection.batch`) is checked by listing its batches and models, never billed,
unless `connection.batch_live_preflight` allows the one-token request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from redjury.errors import RedjuryError
from redjury.judges.asking import AskingJudge
from redjury.judges.engine import (
    JudgeCallError,
    JudgeEngine,
    Response,
    Route,
    TLSVerifyError,
    UnreachableError,
    public_url,
    redirect_refused,
)
from redjury.judges.providers import MalformedResponse

# Seconds the preflight waits for one answer, however long a judge may take to judge.
PREFLIGHT_TIMEOUT_S = 10.0
# Listing statuses that mean "no listing here": ask with one token instead.
NO_LISTING = frozenset({404, 405, 501})
REFUSED = frozenset({401, 403})


@dataclass(frozen=True, slots=True)
class PreflightFailure:
    judge: str
    url: str
    cause: str

    def line(self) -> str:
        return f"judge {self.judge} at {self.url}: {self.cause}"


class PreflightError(RedjuryError):
    """At least one judge cannot judge; one line per judge, naming its URL and the cause."""

    def __init__(self, failures: list[PreflightFailure]) -> None:
        super().__init__("\n".join(f.line() for f in failures))
        self.failures = failures


def judges_of(detectors: Iterable[Any]) -> list[AskingJudge]:
    """Every HTTP judge of the run's detectors (the panel's, any other detector's, and a
    guardrail's)."""
    found: list[AskingJudge] = []
    for det in detectors:
        found.extend(backing_judges(det))
    return found


def backing_judges(detector: Any) -> list[AskingJudge]:
    """The HTTP judges a detector asks: its own, or its guardrail's (Llama Guard)."""
    found = [j for j in getattr(detector, "judges", ()) if isinstance(j, AskingJudge)]
    judge = getattr(getattr(detector, "guardrail", None), "judge", None)
    return found + ([judge] if isinstance(judge, AskingJudge) else [])


def model_origins(detectors: Iterable[Any]) -> dict[str, str]:
    """Judge id, and name of each model-backed detector (judges of its own, or a guardrail)
    besides the panel, -> the public URL of its server ("" when it has no HTTP judge)."""
    origins: dict[str, str] = {}
    for det in detectors:
        judges = backing_judges(det)
        for judge in judges:
            origins.setdefault(judge.id, public_url(judge.provider.base_url))
        if det.name != "judge_panel" and (judges or det.name == "guardrail"):
            origins[det.name] = public_url(judges[0].provider.base_url) if judges else ""
    return origins


async def preflight(judges: Iterable[AskingJudge]) -> list[PreflightFailure]:
    """Check every distinct (server, credentials, model) once, all at once; the failures."""
    checks: dict[tuple[Any, ...], AskingJudge] = {}
    for judge in judges:
        provider = judge.provider
        if not provider.preflight:
            continue
        key = (provider.base_url, tuple(sorted(provider.headers.items())), provider.path)
        checks.setdefault(key + (judge.spec.name,), judge)
    causes = await asyncio.gather(*(check_judge(j) for j in checks.values()))
    return [
        PreflightFailure(j.id, public_url(j.provider.base_url), cause)
        for j, cause in zip(checks.values(), causes, strict=True)
        if cause is not None
    ]


async def run_preflight(detectors: Iterable[Any]) -> None:
    """Raise PreflightError when a judge of these detectors cannot judge."""
    detectors = list(detectors)
    try:
        failures = await preflight(judges_of(detectors))
    finally:
        # A guardrail's judge asks from its own loop thread: let go of this loop's session.
        for det in detectors:
            for judge in backing_judges(det):
                if judge not in getattr(det, "judges", ()):
                    await judge.engine.aclose()
    if failures:
        raise PreflightError(failures)


async def check_judge(judge: AskingJudge) -> str | None:
    """Why this judge cannot judge, or None (also when the check itself says nothing)."""
    provider = judge.provider
    engine = judge.engine
    if provider.batch_queue is not None and not judge.spec.connection.batch_live_preflight:
        return await _batch_cause(judge)
    headers = {k: v for k, v in provider.headers.items() if k != "content-type"}
    listing = _route(engine, judge, provider.models_path, headers, "GET")
    probe = _route(engine, judge, provider.path, provider.headers, "POST")
    try:
        response = await engine.fetch(listing)
        if 300 <= response.status < 400:
            return redirect_refused(response, listing.url)
        if response.status in NO_LISTING:
            return _probe_cause(await engine.fetch(probe, provider.probe_body()), probe, judge)
        cause, unlisted = _listing_cause(response, judge)
        # Some servers (llama.cpp) list one name and serve any: only a 404 proves it unknown.
        if unlisted and (await engine.fetch(probe, provider.probe_body())).status != 404:
            return None
        if cause is None and _cannot_tell(response, judge):
            # No model named (a 5xx, an empty or foreign listing): does it answer like one?
            return _probe_cause(await engine.fetch(probe, provider.probe_body()), probe, judge)
        return cause
    except (TLSVerifyError, UnreachableError) as exc:
        return str(exc)
    except JudgeCallError:
        return None  # a timeout or a broken answer: the abstention machinery's job


async def _batch_cause(judge: AskingJudge) -> str | None:
    """A batch judge's check without a billed request: its batch listing (one item), which
    needs the key and the batch API; then its model listing, where it names models."""
    provider = judge.provider
    engine = judge.engine
    headers = {k: v for k, v in provider.headers.items() if k != "content-type"}
    path = provider.batch_queue.wire.list_url(1).removeprefix(provider.base_url)
    batches = _route(engine, judge, path, headers, "GET")
    try:
        response = await engine.fetch(batches)
        if 300 <= response.status < 400:
            return redirect_refused(response, batches.url)
        if response.status in REFUSED:
            return _refused(response)
        if response.status in NO_LISTING:
            url = public_url(batches.url)
            return f"HTTP {response.status} at {url}: no batch API there (check base_url)"
        if response.status >= 300:
            return None
        if not _is_listing(response.body):
            url = public_url(batches.url)
            return f"it answered the batch listing at {url} not like a batch API: check base_url"
        if not provider.listing_names_models:
            return None
        listing = await engine.fetch(_route(engine, judge, provider.models_path, headers, "GET"))
        return _listing_cause(listing, judge)[0] if listing.status < 300 else None
    except (TLSVerifyError, UnreachableError) as exc:
        return str(exc)
    except JudgeCallError:
        return None


def _refused(response: Response) -> str:
    return f"HTTP {response.status}: the server refused the credentials (check api_key_env)"


def _route(
    engine: JudgeEngine, judge: AskingJudge, path: str, headers: dict[str, str], method: str
) -> Route:
    conn = judge.spec.connection
    timeout = min(conn.timeout, PREFLIGHT_TIMEOUT_S)
    base = judge.provider.base_url
    return engine.route(base, path, headers, timeout, method, ca_bundle=conn.ca_bundle)


def _listing_cause(response: Response, judge: AskingJudge) -> tuple[str | None, bool]:
    """The cause the listing shows, and whether that cause is only "not listed"."""
    if response.status in REFUSED:
        return _refused(response), False
    if response.status >= 300 or not judge.provider.listing_names_models:
        return None, False
    names = _listed(response.body)
    model = judge.spec.name
    if not names or model in names or f"{model}:latest" in names:
        return None, False
    shown = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
    return f"unknown model {model!r} (the server lists {len(names)}: {shown})", True


def _cannot_tell(response: Response, judge: AskingJudge) -> bool:
    """Whether the listing leaves open that the server is not a model server at all."""
    if response.status in REFUSED or not judge.provider.listing_names_models:
        return False
    return response.status >= 300 or not _is_listing(response.body)


def _is_listing(body: bytes) -> bool:
    """An OpenAI/Anthropic (`data`) or Ollama (`models`) listing, empty or not."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and any(
        isinstance(data.get(key), list) for key in ("data", "models")
    )


def _probe_cause(response: Response, route: Route, judge: AskingJudge) -> str | None:
    if 300 <= response.status < 400:
        return redirect_refused(response, route.url)
    if response.status in REFUSED:
        return _refused(response)
    if response.status == 404:
        return f"HTTP 404 at {public_url(route.url)}: unknown model or wrong base_url"
    if 200 <= response.status < 300:
        try:
            judge.provider.read(response.body)
        except MalformedResponse as exc:
            return (
                f"it answered a one-token request at {public_url(route.url)} with HTTP "
                f"{response.status} but not like a model server ({exc}): check base_url"
            )
    return None


def _listed(body: bytes) -> set[str]:
    """Model names in an OpenAI/Anthropic (`data[].id`) or Ollama (`models[].name`) listing."""
    try:
        data = orjson.loads(body)
        items = data.get("data") if "data" in data else data.get("models")
        names = set()
        for item in items or ():
            for field in ("id", "name", "model"):
                if isinstance(item.get(field), str):
                    names.add(item[field])
        return names
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return set()
