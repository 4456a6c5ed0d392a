"""The one async HTTP layer for judges (aiohttp): one pooled session, in-flight limits that
adapt to rate limits, timeouts, retries, TLS per connection and proxies from the environment."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import random
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy

from redjury.errors import RedjuryError
from redjury.judges.config_checks import named_file_problem
from redjury.judges.limits import AdaptiveLimit
from redjury.judges.proxies import proxy_for

IDLE_KEEPALIVE_S = 4.0
# A server asking for a longer pause than this is treated as down: the judge abstains.
MAX_RETRY_AFTER_S = 300.0
# Waits between retries of a 429 that the lowered concurrency, not the retry budget, absorbs,
# and how many of those one request may take before they count as retries after all.
RATE_LIMIT_MAX_DELAY_S = 8.0
MAX_RATE_LIMITED_RETRIES = 50
# "Other requests succeed": one did within this many seconds.
RATE_LIMIT_WINDOW_S = 10.0
# Bytes of one answer read, raw and decompressed alike: real answers are a few KiB.
DEFAULT_MAX_ANSWER_BYTES = 2**20


class JudgeCallError(RedjuryError):
    """A judge request failed for good (after any retries); the judge abstains with this reason."""


class AnswerTooLarge(JudgeCallError):
    """The server sent more than the engine reads (before or after decompression)."""


class TLSVerifyError(JudgeCallError):
    """The server's certificate did not verify: a setup error, never worth a retry."""


@dataclass(slots=True)
class EngineStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    # Times an endpoint's concurrency was cut after a 429.
    rate_limited: int = 0


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


@dataclass(eq=False)
class Endpoint:
    """One server (base URL): its in-flight limit, TLS context and proxy."""

    base_url: str
    ceiling: int
    ca_bundle: str | None = None
    limit: AdaptiveLimit = field(init=False)
    ssl: ssl.SSLContext | None = None
    proxy: str | None = None

    def __post_init__(self) -> None:
        self.limit = AdaptiveLimit(self.ceiling)

    def bind(self) -> None:
        """Read SSL_CERT_FILE and the proxy variables now, so a run sees its own environment."""
        self.limit = AdaptiveLimit(self.ceiling)
        self.ssl = tls_context(self.ca_bundle) if self.base_url.startswith("https:") else None
        self.proxy = proxy_for(self.base_url)


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """System CAs (or $SSL_CERT_FILE), or only the CAs in `ca_bundle`."""
    problem = named_file_problem(ca_bundle) if ca_bundle else None
    if problem:
        raise ValueError(f"connection.ca_bundle: {problem}")
    return ssl.create_default_context(cafile=ca_bundle)


@dataclass(frozen=True, slots=True)
class Route:
    """What one judge needs to send a request: its endpoint, URL, headers and timeout."""

    endpoint: Endpoint
    url: str
    headers: dict[str, str]
    timeout: float
    method: str = "POST"
    client_timeout: aiohttp.ClientTimeout = field(init=False)
    # The headers as aiohttp keeps them, built once rather than on every call.
    wire_headers: CIMultiDict[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client_timeout", aiohttp.ClientTimeout(total=self.timeout))
        object.__setattr__(self, "wire_headers", CIMultiDict(self.headers))


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


class UnreachableError(JudgeCallError):
    """No connection to the server (or its proxy) could be made."""


class _Retry(RedjuryError):
    """One attempt failed in a way worth another; `counts` says whether it spends a retry."""

    def __init__(
        self,
        reason: str,
        wait: float | None = None,
        counts: bool = True,
        *,
        unreachable: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait
        self.counts = counts
        self.unreachable = unreachable


class JudgeEngine:
    """Sends judge requests with a global and a per-endpoint limit on requests in flight.

    Retries connection errors, 429 and 5xx with exponential backoff and jitter, waiting at
    least `Retry-After`; other 4xx, timeouts, certificate failures and malformed bodies fail
    at once. An endpoint that answers 429 gets its concurrency cut, then raised by one per
    round of successes; a 429 spends no retry while other requests to it succeed (one did in
    the last RATE_LIMIT_WINDOW_S; at most MAX_RATE_LIMITED_RETRIES such retries per request).
    The session and limits bind to the running event loop and are rebuilt for another.
    """

    def __init__(
        self,
        *,
        max_concurrency: int = 64,
        per_endpoint_concurrency: int = 16,
        max_retries: int = 4,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        self.max_answer_bytes = max_answer_bytes
        self.max_concurrency = max_concurrency
        self.per_endpoint_concurrency = per_endpoint_concurrency
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.stats = EngineStats()
        self._endpoints: dict[tuple[str, str | None], Endpoint] = {}
        self._global: asyncio.Semaphore | None = None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def route(
        self,
        base_url: str,
        path: str,
        headers: dict[str, str],
        timeout: float,
        method: str = "POST",
        *,
        ca_bundle: str | None = None,
    ) -> Route:
        if not base_url.startswith(("http://", "https://", "litellm:")):
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        base_url, headers = _credentials_to_header(base_url, headers)
        key = (base_url, ca_bundle)
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            endpoint = Endpoint(base_url, self.per_endpoint_concurrency, ca_bundle)
            self._endpoints[key] = endpoint
            if self._loop is not None:
                endpoint.bind()
        return Route(endpoint, base_url + path, dict(headers), timeout, method)

    def endpoint_limits(self) -> dict[str, tuple[int, int]]:
        """Base URL → (current concurrency, times it was lowered)."""
        return {
            ep.base_url: (ep.limit.current, ep.limit.lowered) for ep in self._endpoints.values()
        }

    def _bind(self) -> None:
        # A session of an earlier loop cannot be used from this one; it is dropped, not closed.
        self._loop = asyncio.get_running_loop()
        self._global = asyncio.Semaphore(self.max_concurrency)
        # Servers close idle keep-alive connections after a while (uvicorn: 5 s); reusing one
        # they already closed costs a failed request, so idle ones are dropped sooner.
        connector = aiohttp.TCPConnector(
            limit=self.max_concurrency, limit_per_host=0, keepalive_timeout=IDLE_KEEPALIVE_S
        )
        # Proxies are resolved per endpoint (see proxies.py), so the session reads no env.
        # Judge calls are stateless: no cookie jar to match and update on every call.
        self._session = aiohttp.ClientSession(
            connector=connector,
            trust_env=False,
            auto_decompress=True,
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        for ep in self._endpoints.values():
            ep.bind()

    def _ready(self) -> aiohttp.ClientSession:
        if self._loop is not asyncio.get_running_loop() or self._session is None:
            self._bind()
        assert self._session is not None
        return self._session

    def session(self) -> aiohttp.ClientSession:
        """The pooled session of the running loop (the batch endpoints use it too)."""
        return self._ready()

    async def _send(self, session: aiohttp.ClientSession, route: Route, body: bytes) -> Response:
        ep = route.endpoint
        async with session.request(
            route.method,
            route.url,
            data=body if body else None,
            headers=route.wire_headers,
            timeout=route.client_timeout,
            ssl=ep.ssl if ep.ssl is not None else True,
            proxy=ep.proxy,
            # A redirect to another origin would carry the judge's key there (aiohttp drops
            # only `Authorization`); none is followed, and the caller names it.
            allow_redirects=False,
        ) as resp:
            body = await read_bounded(resp, self.max_answer_bytes)
            return Response(resp.status, resp.headers, body)

    async def fetch(self, route: Route, body: bytes = b"") -> Response:
        """One request, no limits and no retries; transport failures as JudgeCallError
        (UnreachableError when no connection was made, TLSVerifyError for certificates)."""
        session = self._ready()
        try:
            return await self._send(session, route, body)
        except Exception as exc:
            error = _call_error(exc, route)
            if isinstance(error, _Retry):
                kind = UnreachableError if error.unreachable else JudgeCallError
                raise kind(error.reason) from exc
            raise error from exc

    @asynccontextmanager
    async def slot(self, route: Route) -> AsyncIterator[int]:
        """Hold one of the endpoint's and one of the global in-flight slots; yields the
        endpoint limit's epoch (for `AdaptiveLimit.backoff`)."""
        self._ready()
        epoch = await self._acquire(route)
        try:
            yield epoch
        finally:
            self._release(route)

    async def _acquire(self, route: Route) -> int:
        # The caller has bound the engine to this loop (`_ready`).
        assert self._global is not None
        limit = route.endpoint.limit
        # Endpoint first, then global: a request waiting for a busy server must not hold
        # a global slot that a request to an idle server could use.
        epoch = await limit.acquire()
        try:
            await self._global.acquire()
        except BaseException:
            limit.release()
            raise
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        if stats.in_flight > stats.max_in_flight:
            stats.max_in_flight = stats.in_flight
        return epoch

    def _release(self, route: Route) -> None:
        assert self._global is not None
        self.stats.in_flight -= 1
        self._global.release()
        route.endpoint.limit.release()

    async def post(self, route: Route, body: bytes) -> bytes:
        """POST a judge request; the 2xx body, or JudgeCallError with the reason."""
        session = self._ready()
        retries = rate_limited = 0
        while True:
            try:
                return await self._attempt(session, route, body)
            except _Retry as retry:
                if retry.wait is not None and retry.wait > MAX_RETRY_AFTER_S:
                    self.stats.failures += 1
                    raise JudgeCallError(
                        f"{retry.reason} with Retry-After {retry.wait:.0f}s"
                    ) from None
                if not retry.counts and rate_limited >= MAX_RATE_LIMITED_RETRIES:
                    retry.counts = True
                if retry.counts and retries >= self.max_retries:
                    self.stats.failures += 1
                    suffix = f" after {retries} retries" if retries else ""
                    raise JudgeCallError(retry.reason + suffix) from None
                if retry.counts:
                    retries += 1
                    delay = self._backoff(retries - 1, self.retry_max_delay)
                else:
                    rate_limited += 1
                    delay = self._backoff(min(rate_limited, 4), RATE_LIMIT_MAX_DELAY_S)
                if retry.wait is not None:
                    # Honour the server's wait; the jitter spreads the herd it sent away at once.
                    delay = max(retry.wait + random.uniform(0.0, self.retry_base_delay), delay)
                self.stats.retries += 1
                await asyncio.sleep(delay)
            except JudgeCallError:
                self.stats.failures += 1
                raise

    def _backoff(self, n: int, cap: float) -> float:
        return min(cap, self.retry_base_delay * 2**n) * random.uniform(0.5, 1.0)

    async def _attempt(self, session: aiohttp.ClientSession, route: Route, body: bytes) -> bytes:
        limit = route.endpoint.limit
        # `slot` spelled out: this is the per-call path, and a generator-based context
        # manager costs more than the two calls.
        epoch = await self._acquire(route)
        try:
            response = await self._send(session, route, body)
        except Exception as exc:
            error = _call_error(exc, route)
            if isinstance(error, _Retry):
                raise error from None
            raise error from exc
        finally:
            self._release(route)
        status = response.status
        if status < 300:
            limit.grow()
            return response.body
        if status < 400:
            raise JudgeCallError(redirect_refused(response, route.url))
        if status != 429 and status < 500:
            raise JudgeCallError(f"HTTP {status}")
        wait = retry_after_seconds(response.header("retry-after"))
        if status == 429 and limit.backoff(epoch):
            self.stats.rate_limited += 1
        # A 429 while other requests get through is the lowered limit's job, not a retry's;
        # one while nothing succeeds spends a retry, so a server that is down still abstains.
        counts = status != 429 or not limit.succeeding(RATE_LIMIT_WINDOW_S)
        raise _Retry(f"HTTP {status}", wait, counts)

    async def get(self, route: Route) -> Response:
        """A plain GET (a reachability check of the model list); no retries, no limits."""
        return await self.fetch(route)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and self._loop is asyncio.get_running_loop():
            await session.close()
        self._loop = None


async def read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body as decoded, or AnswerTooLarge once more than `limit` bytes arrive (a gzip
    bomb or an endless stream stops there, whatever the Content-Length says)."""
    too_large = AnswerTooLarge(
        f"malformed response: the answer is over {limit} bytes (evaluation.max_answer_bytes)"
    )
    if resp.content_length is not None and resp.content_length > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def public_url(url: str) -> str:
    """The URL without credentials or query (an Azure key may sit in either)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def redirect_refused(response: Response, url: str) -> str:
    """The abstention reason for a redirect: where it pointed, without credentials or query."""
    location = response.header("location") or ""
    try:
        target = public_url(urljoin(url, location.strip())) if location else "nowhere"
    except ValueError:
        target = "an unreadable location"
    return (
        f"HTTP {response.status}: redirect to {target} not followed "
        "(point base_url at the server that answers)"
    )


def _credentials_to_header(url: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """`https://user:pw@host` as basic auth, unless the judge already sends an authorization."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, headers
    netloc = parts.netloc.rpartition("@")[2]
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    if any(k.lower() == "authorization" for k in headers):
        return bare, headers
    auth = _basic_auth(unquote(parts.username or ""), unquote(parts.password or ""))
    return bare, {**headers, "authorization": auth}


def _basic_auth(user: str, password: str) -> str:
    """An `Authorization: Basic` value (RFC 7617, UTF-8), as aiohttp 3.14's
    `encode_basic_auth` builds it; its older `BasicAuth` is deprecated."""
    token = f"{user}:{password}".encode()
    return "Basic " + base64.b64encode(token).decode("ascii")


def _call_error(exc: BaseException, route: Route) -> JudgeCallError | _Retry:
    """What a failed request means: a certificate failure, a timeout, or a retryable fault."""
    if isinstance(exc, JudgeCallError):
        return exc
    if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
        detail = getattr(exc, "certificate_error", None) or exc
        return TLSVerifyError(f"TLS failed for {route.url}: {_first_line(detail)}")
    if isinstance(exc, TimeoutError):
        return JudgeCallError(f"timeout after {route.timeout:g}s")
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return _Retry(f"proxy connect failed: {_os_cause(exc)}", unreachable=True)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _Retry(f"connect failed: {_os_cause(exc)}", unreachable=True)
    if isinstance(exc, aiohttp.ClientError | OSError | ValueError):
        return _Retry(f"connection error: {type(exc).__name__}")
    raise exc


def _os_cause(exc: aiohttp.ClientConnectorError) -> str:
    return type(exc.os_error).__name__ if exc.os_error is not None else type(exc).__name__


def _first_line(exc: BaseException | str) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
