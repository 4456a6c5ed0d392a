"""The one async HTTP layer for judges: pooled connections, in-flight limits, timeouts, retries."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass, field

from redjury.judges.http11 import ConnectionPool, Response, TransportError

# A server asking for a longer pause than this is treated as down: the judge abstains.
MAX_RETRY_AFTER_S = 300.0


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
    """One server (base URL): one keep-alive connection pool and one in-flight limit."""

    base_url: str
    limit: int
    pool: ConnectionPool = field(init=False)
    semaphore: asyncio.Semaphore | None = None

    def __post_init__(self) -> None:
        self.pool = ConnectionPool(self.base_url)


@dataclass(frozen=True, slots=True)
class Route:
    """What one judge needs to send a request: its endpoint, pre-rendered head and timeout."""

    endpoint: Endpoint
    url: str
    head: bytes
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

    def route(
        self,
        base_url: str,
        path: str,
        headers: dict[str, str],
        timeout: float,
        method: str = "POST",
    ) -> Route:
        endpoint = self._endpoints.get(base_url)
        if endpoint is None:
            endpoint = Endpoint(base_url, self.per_endpoint_concurrency)
            self._endpoints[base_url] = endpoint
        head = endpoint.pool.head(method, path, headers)
        return Route(endpoint, base_url + path, head, timeout)

    def _bind(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._global = asyncio.Semaphore(self.max_concurrency)
        for ep in self._endpoints.values():
            ep.semaphore = asyncio.Semaphore(ep.limit)
            # Connections of an earlier loop cannot be used from this one.
            ep.pool = ConnectionPool(ep.base_url)

    async def post(self, route: Route, body: bytes) -> bytes:
        """POST a judge request; the 2xx body, or JudgeCallError with the reason."""
        if self._loop is not asyncio.get_running_loop():
            self._bind()
        endpoint = route.endpoint
        pool = endpoint.pool
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
                response: Response | None = None
                try:
                    response = await pool.request(route.head, body, route.timeout)
                except TimeoutError as exc:
                    stats.failures += 1
                    raise JudgeCallError(f"timeout after {route.timeout:g}s") from exc
                except TransportError as exc:
                    reason = str(exc)
                finally:
                    stats.in_flight -= 1
            wait = None
            if response is not None:
                status = response.status
                if status < 300:
                    return response.body
                if status != 429 and status < 500:
                    stats.failures += 1
                    raise JudgeCallError(f"HTTP {status}")
                reason = f"HTTP {status}"
                wait = retry_after_seconds(response.header("retry-after"))
            if wait is not None and wait > MAX_RETRY_AFTER_S:
                stats.failures += 1
                raise JudgeCallError(f"{reason} with Retry-After {wait:.0f}s")
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

    async def get(self, route: Route) -> Response:
        """A plain GET (a reachability check of the model list); no retries, no limits."""
        if self._loop is not asyncio.get_running_loop():
            self._bind()
        return await route.endpoint.pool.request(route.head, b"", route.timeout)

    async def aclose(self) -> None:
        for ep in self._endpoints.values():
            await ep.pool.aclose()
        self._loop = None
