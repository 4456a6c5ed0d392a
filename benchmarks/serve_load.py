"""Case 10: `redjury serve` (detectors only) under 64 concurrent clients, beside a bare
aiohttp echo service measured in the same run as the floor.

    python benchmarks/serve_load.py [--clients 64] [--seconds 10] [--warmup 2]   (prints JSON)

Each client is a coroutine on one keep-alive connection posting one reply at a time to
`/v1/moderations` (the echo service answers the same request with its body). The load
generator shares the machine's cores with the service, as it does with the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import data  # benchmarks/data.py

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def echo_service(port: int) -> None:
    """The floor: aiohttp answering each POST with the JSON it was sent."""
    import orjson
    from aiohttp import web

    async def echo(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/moderations", echo)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def start(kind: str, port: int, clients: int) -> subprocess.Popen[bytes]:
    if kind == "echo":
        cmd = [sys.executable, __file__, "--echo-port", str(port)]
    else:
        cmd = [sys.executable, "-m", "redjury.cli", "serve", "--port", str(port)]
        cmd += ["--client-concurrency", str(clients), "--no-preflight"]
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{kind} service did not start")


async def load(url: str, bodies: list[bytes], clients: int, seconds: float, warmup: float) -> dict:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    timing = False
    stop_at = time.perf_counter() + warmup + seconds

    async def client(i: int, session: aiohttp.ClientSession) -> None:
        nonlocal errors
        n = i
        while time.perf_counter() < stop_at:
            body = bodies[n % len(bodies)]
            n += clients
            t0 = time.perf_counter()
            async with session.post(
                url, data=body, headers={"Content-Type": "application/json"}
            ) as r:
                await r.read()
                ok = r.status == 200
            if timing:
                latencies.append(time.perf_counter() - t0)
                errors += not ok

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.create_task(client(i, session)) for i in range(clients)]
        await asyncio.sleep(warmup)
        timing, started = True, time.perf_counter()
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2),
    }


def measure(kind: str, args: argparse.Namespace, bodies: list[bytes]) -> dict:
    port = free_port()
    proc = start(kind, port, args.clients)
    try:
        url = f"http://127.0.0.1:{port}/v1/moderations"
        return asyncio.run(load(url, bodies, args.clients, args.seconds, args.warmup))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--echo-port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_port:
        echo_service(args.echo_port)
        return
    texts = [t for _, _, replies in data.reply_attempts(200) for t in replies]
    bodies = [json.dumps({"input": t, "model": "redjury"}).encode() for t in texts]
    result = {"clients": args.clients, "seconds": args.seconds}
    result["echo_floor"] = measure("echo", args, bodies)
    result["redjury_serve"] = measure("serve", args, bodies)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
