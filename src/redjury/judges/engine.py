"""The one async HTTP layer for judges: pooled clients, in-flight limits, timeouts and retries."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass, field

import httpx


class JudgeCallError(Exception):
    """A judge request failed for good (after any retries); the judge abstains with this reason."""


@dataclass(slots=True)
class EngineStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


@dataclass(eq=False)
class Endpoint:
    """One server (base URL): a pooled client per header set, and one in-flight limit."""

    base_url: str
    limit: int
    clients: dict[tuple[tuple[str, str], ...], httpx.AsyncClient] = field(default_factory=dict)
    semaphore: asyncio.Semaphore | None = None


@dataclass(frozen=True, slots=True)
class Route:
    """What one judge needs to send a request: its endpoint, URL, headers and timeout."""

    endpoint: Endpoint
    url: str
    headers: tuple[tuple[str, str], ...]
    timeout: float


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class JudgeEngine:
    """Sends judge requests with a global and a per-endpoint limit on requests in flight.

    Retries connection errors, 429 and 5xx with exponential backoff and jitter, waiting at
    least `Retry-After`; other 4xx, timeouts and malformed bodies fail at once. Clients and
    semaphores bind to the running event loop and are rebuilt if a later run uses another.
    """

    def __init__(
        self,
        *,
        max_concurrency: int = 64,
        per_endpoint_concurrency: int = 16,
        max_retries: int = 4,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
    ) -> None:
        self.max_concurrency = max_concurrency
        self.per_endpoint_concurrency = per_endpoint_concurrency
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.stats = EngineStats()
        self._endpoints: dict[str, Endpoint] = {}
        self._global: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def route(self, base_url: str, path: str, headers: dict[str, str], timeout: float) -> Route:
        endpoint = self._endpoints.get(base_url)
        if endpoint is None:
            endpoint = Endpoint(base_url, self.per_endpoint_concurrency)
            self._endpoints[base_url] = endpoint
        return Route(endpoint, base_url + path, tuple(sorted(headers.items())), timeout)

    def _bind(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._global = asyncio.Semaphore(self.max_concurrency)
        for ep in self._endpoints.values():
            ep.semaphore = asyncio.Semaphore(ep.limit)
            ep.clients.clear()

    def _client(self, route: Route) -> httpx.AsyncClient:
        key = (*route.headers, ("timeout", str(route.timeout)))
        client = route.endpoint.clients.get(key)
        if client is None:
            # The pool never has to queue: our semaphores already cap what is in flight.
            limit = route.endpoint.limit
            client = httpx.AsyncClient(
                headers=dict(route.headers),
                timeout=httpx.Timeout(route.timeout, connect=min(route.timeout, 30.0)),
                limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
                trust_env=False,
            )
            route.endpoint.clients[key] = client
        return client

    async def post(self, route: Route, body: bytes) -> bytes:
        """POST a judge request; the 2xx body, or JudgeCallError with the reason."""
        if self._loop is not asyncio.get_running_loop():
            self._bind()
        client = self._client(route)
        endpoint = route.endpoint
        assert endpoint.semaphore is not None and self._global is not None
        stats = self.stats
        retries = 0
        while True:
            # Endpoint first, then global: a request waiting for a busy server must not hold
            # a global slot that a request to an idle server could use.
            async with endpoint.semaphore, self._global:
                stats.requests += 1
                stats.in_flight += 1
                if stats.in_flight > stats.max_in_flight:
                    stats.max_in_flight = stats.in_flight
                try:
                    response = await client.post(route.url, content=body)
                except httpx.TimeoutException as exc:
                    if not isinstance(exc, httpx.ConnectTimeout):
                        stats.failures += 1
                        raise JudgeCallError(f"timeout after {route.timeout:g}s") from exc
                    response, reason = None, "connect timeout"
                except httpx.TransportError as exc:
                    response, reason = None, f"connection error: {type(exc).__name__}"
                finally:
                    stats.in_flight -= 1
            wait = None
            if response is not None:
                status = response.status_code
                if status < 300:
                    return response.content
                if status != 429 and status < 500:
                    stats.failures += 1
                    raise JudgeCallError(f"HTTP {status}")
                reason = f"HTTP {status}"
                wait = retry_after_seconds(response.headers.get("retry-after"))
            if retries >= self.max_retries:
                stats.failures += 1
                suffix = f" after {retries} retries" if retries else ""
                raise JudgeCallError(reason + suffix)
            backoff = min(self.retry_max_delay, self.retry_base_delay * 2**retries)
            delay = backoff * random.uniform(0.5, 1.0)
            if wait is not None:
                # Honour the server's wait; the jitter spreads the herd it sent away at once.
                delay = max(wait + random.uniform(0.0, self.retry_base_delay), delay)
            retries += 1
            stats.retries += 1
            await asyncio.sleep(delay)

    async def get(self, route: Route) -> httpx.Response:
        """A plain GET (a reachability check of the model list); no retries, no limits."""
        if self._loop is not asyncio.get_running_loop():
            self._bind()
        return await self._client(route).get(route.url)

    async def aclose(self) -> None:
        for ep in self._endpoints.values():
            for client in ep.clients.values():
                await client.aclose()
            ep.clients.clear()
        self._loop = None
