"""The aiohttp application: routes, bearer-token auth, size, batch and per-client limits,
metrics, body-free access logs; `run_service` serves it until SIGTERM drains it."""

from __future__ import annotations

import asyncio
import hmac
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from redjury.config import RunConfig
from redjury.service import shapes
from redjury.service.judging import AttemptOutcome, JudgeService
from redjury.service.metrics import ServiceMetrics
from redjury.service.shapes import RequestError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# Paths answered without a token: a load balancer's health check carries none.
OPEN_PATHS = frozenset({"/health"})


@dataclass(frozen=True)
class ServeSettings:
    """How the service listens and what it admits."""

    host: str = "127.0.0.1"
    port: int = 8321
    # The bearer token every request but /health must carry; None: loopback only.
    token: str | None = None
    max_body_bytes: int = 1 << 20
    max_batch: int = 256
    # Requests one client address may have in flight; more are answered 429.
    client_concurrency: int = 16
    # How long SIGTERM waits for the requests in flight before closing.
    drain_seconds: float = 30.0
    use_cache: bool = True
    cache_path: Path | None = None
    preflight: bool = True
    # Worker processes, each with its own event loop and judge engine, on one port
    # (SO_REUSEPORT); they share the judge cache file, not counters or per-client limits.
    workers: int = 1
    access_log: bool = True


SETTINGS = web.AppKey("settings", ServeSettings)
CONFIG = web.AppKey("config", RunConfig)
SERVICE = web.AppKey("service", JudgeService)
METRICS = web.AppKey("metrics", ServiceMetrics)
ACTIVE = web.AppKey("active", Counter)


def create_app(config: RunConfig, settings: ServeSettings) -> web.Application:
    """The service's application; the judge engine is built when it starts."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=[_errors_and_metrics, _bearer_token, _client_limit],
    )
    app[SETTINGS], app[CONFIG] = settings, config
    app[METRICS], app[ACTIVE] = ServiceMetrics(), Counter()
    app.cleanup_ctx.append(_judge_engine)
    app.router.add_post("/v1/judge", _judge, name="judge")
    app.router.add_post("/v1/moderations", _moderations, name="moderations")
    app.router.add_post("/v1/promptfoo", _promptfoo, name="promptfoo")
    app.router.add_get("/health", _health, name="health")
    app.router.add_get("/metrics", _metrics, name="metrics")
    return app


async def _judge_engine(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    service = JudgeService(
        app[CONFIG], use_cache=settings.use_cache, cache_path=settings.cache_path
    )
    try:
        service.warm_up()
        if settings.preflight:
            await service.preflight()
        app[SERVICE] = service
        yield
    finally:
        await service.aclose()


# -- middlewares -----------------------------------------------------------------------------
@web.middleware
async def _errors_and_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every refusal as one JSON error; every answer counted and timed."""
    metrics = request.app[METRICS]
    start = time.perf_counter()
    metrics.in_flight += 1
    try:
        response = await handler(request)
    except RequestError as exc:
        response = _json(exc.body(), exc.status)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[SETTINGS].max_body_bytes
        response = _json(RequestError(413, "(body)", f"larger than {limit} bytes").body(), 413)
    except web.HTTPException as exc:
        response = _json(RequestError(exc.status, "(path)", exc.reason).body(), exc.status)
    except Exception as exc:  # the message may quote the request: only its type is told
        logging.getLogger("redjury.service").error("internal error: %s", type(exc).__name__)
        response = _json(RequestError(500, "(server)", "internal error").body(), 500)
    finally:
        metrics.in_flight -= 1
    metrics.observe(_endpoint(request), response.status, time.perf_counter() - start)
    return response


@web.middleware
async def _bearer_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    token = request.app[SETTINGS].token
    if token is None or request.path in OPEN_PATHS:
        return await handler(request)
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise RequestError(401, "Authorization", "a valid bearer token is required")
    return await handler(request)


@web.middleware
async def _client_limit(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method != "POST":
        return await handler(request)
    active, limit = request.app[ACTIVE], request.app[SETTINGS].client_concurrency
    client = request.remote or "unknown"
    if active[client] >= limit:
        raise RequestError(
            429, "(client)", f"more than {limit} requests in flight from this client"
        )
    active[client] += 1
    try:
        return await handler(request)
    finally:
        active[client] -= 1
        if not active[client]:
            del active[client]


# -- handlers --------------------------------------------------------------------------------
async def _judge(request: web.Request) -> web.Response:
    attempts = shapes.judge_attempts(await _body(request), request.app[SETTINGS].max_batch)
    outcomes = await _outcomes(request.app, attempts)
    return _json(shapes.judge_response(outcomes, request.app[SERVICE].detector_names))


async def _moderations(request: web.Request) -> web.Response:
    body = await _body(request)
    attempts = shapes.moderation_attempts(body, request.app[SETTINGS].max_batch)
    outcomes = await _outcomes(request.app, attempts)
    names = request.app[SERVICE].detector_names
    return _json(shapes.moderation_response(outcomes, body.get("model"), names))


async def _promptfoo(request: web.Request) -> web.Response:
    attempt = shapes.promptfoo_attempt(await _body(request))
    [outcome] = await _outcomes(request.app, [attempt])
    return _json(shapes.promptfoo_response(outcome))


async def _health(request: web.Request) -> web.Response:
    ready = SERVICE in request.app
    return _json({"status": "ok" if ready else "starting"}, 200 if ready else 503)


async def _metrics(request: web.Request) -> web.Response:
    stats = request.app[SERVICE].judge_stats()
    return web.Response(text=request.app[METRICS].render(stats), content_type="text/plain")


async def _outcomes(app: web.Application, attempts: list[Any]) -> list[AttemptOutcome]:
    service = app[SERVICE]
    rows = await service.rows(attempts)
    for row in rows:
        app[METRICS].count_verdicts(row)
    return [service.outcome(row) for row in rows]


async def _body(request: web.Request) -> Any:
    limit = request.app[SETTINGS].max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise RequestError(413, "(body)", f"larger than {limit} bytes")
    try:
        return orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise RequestError(400, "(body)", "not valid JSON") from None


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _endpoint(request: web.Request) -> str:
    """The route's path (unknown paths counted together: a label per path is unbounded)."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "other"


# -- serving ---------------------------------------------------------------------------------
class AccessLog(AbstractAccessLogger):
    """One line per request: client, method, path (no query), status, size, seconds; never
    a body, a header or a query string, where tokens and replies would be."""

    def log(self, request: Any, response: Any, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s %s %.4f',
            request.remote, request.method, request.path,
            response.status, response.body_length, time,
        )  # fmt: skip


def run_service(
    config: RunConfig, settings: ServeSettings, announce: Callable[[str], None]
) -> None:
    """Serve until SIGTERM or SIGINT, then drain the requests in flight and close the judges;
    with `workers` > 1, in that many forked processes sharing the port."""
    url = f"http://{settings.host}:{settings.port}"
    if settings.workers <= 1:
        _serve(config, settings, lambda: announce(f"listening on {url}"))
        return
    _check_port(settings)
    announce(f"listening on {url} with {settings.workers} worker processes")
    _run_workers(config, settings)


def _check_port(settings: ServeSettings) -> None:
    """Bind (not listen) as the workers will, so a port in use fails here, once."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        probe.bind((settings.host, settings.port))


def _serve(config: RunConfig, settings: ServeSettings, ready: Callable[[], None]) -> None:
    web.run_app(
        create_app(config, settings),
        host=settings.host,
        port=settings.port,
        shutdown_timeout=settings.drain_seconds,
        access_log=_access_logger() if settings.access_log else None,
        access_log_class=AccessLog,
        reuse_port=settings.workers > 1 or None,
        print=lambda _banner: ready(),
        loop=_event_loop(),
    )


def _event_loop() -> asyncio.AbstractEventLoop | None:
    """uvloop's event loop where it is installed (`redjury[serve]`); else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop()


def _access_logger() -> logging.Logger:
    logger = logging.getLogger("redjury.service.access")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _run_workers(config: RunConfig, settings: ServeSettings) -> None:
    """Fork the workers (before any event loop), pass SIGTERM on to each, wait for all; the
    first to fail (a port in use, a failed preflight) stops the others."""
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_worker, args=(config, settings), name=f"redjury-serve-{i}")
        for i in range(settings.workers)
    ]
    for proc in procs:
        proc.start()

    def stop(signum: int, _frame: Any) -> None:
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    failed, pending = 0, list(procs)
    while pending:
        ready = multiprocessing.connection.wait([p.sentinel for p in pending])
        for proc in [p for p in pending if p.sentinel in ready]:
            proc.join()
            pending.remove(proc)
            if proc.exitcode and not failed:
                failed = proc.exitcode
                stop(signal.SIGTERM, None)
    if failed:
        raise SystemExit(failed)


def _worker(config: RunConfig, settings: ServeSettings) -> None:
    from redjury.judges.preflight import PreflightError

    try:
        _serve(config, settings, _quiet)
    except (OSError, PreflightError) as exc:
        where = f"--host {settings.host} --port {settings.port}"
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        sys.stderr.write(f"redjury serve: worker {os.getpid()}: {where}: {detail}\n")
        raise SystemExit(2) from None


def _quiet() -> None:
    """A worker's start goes unannounced: the parent said where the service listens."""


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")
