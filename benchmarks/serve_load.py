"""Case 10: `redjury serve` (detectors only) under 64 concurrent clients, beside a bare
aiohttp echo service measured in the same run as the floor.

    python benchmarks/serve_load.py [--clients 64] [--seconds 10] [--warmup 2]
        [--workers 1,2] [--uvloop-path DIR] [--no-access-log] [--rounds 1]   (prints JSON)

Each client is one keep-alive connection posting one reply at a time to `/v1/moderations`
with a bearer token (the echo service answers the same request with its body). The load
generator runs in its own process, on raw asyncio transports with the requests prebuilt, so
its cost per request is small next to any aiohttp server's; its CPU share is reported beside
each result, as is the service's. Both share the machine's cores, as a client on the same
host would. `check(result)` names each goal the result misses.
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
GOAL_RPS = 1000.0
GOAL_P99_MS = 100.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the floor ---------------------------------------------------------------------------------
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


# -- the load generator (its own process) ------------------------------------------------------
class _Client(asyncio.Protocol):
    """One keep-alive connection: send a request, read the whole response, send the next."""

    def __init__(self, requests: list[bytes], first: int, stride: int, run: _Run) -> None:
        self.requests, self.next, self.stride, self.run = requests, first, stride, run
        self.buf = bytearray()
        self.need = self.body_at = -1
        self.status = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self._send()

    def _send(self) -> None:
        if time.perf_counter() >= self.run.stop_at:
            self.transport.close()
            return
        self.started = time.perf_counter()
        self.transport.write(self.requests[self.next % len(self.requests)])
        self.next += self.stride

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.need < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).lower()
            self.status = int(head[9:12])
            at = head.index(b"content-length:") + 15
            stop = head.find(b"\r\n", at)
            self.body_at = end + 4
            self.need = self.body_at + int(head[at : stop if stop >= 0 else len(head)])
        if len(self.buf) < self.need:
            return
        body = bytes(self.buf[self.body_at : self.need])
        self.run.done(self, time.perf_counter() - self.started, body)
        del self.buf[: self.need]
        self.need = -1
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class _Run:
    """What the clients saw while the clock was running."""

    def __init__(self, seconds: float, warmup: float) -> None:
        now = time.perf_counter()
        self.timing_from = now + warmup
        self.stop_at = self.timing_from + seconds
        self.latencies: list[float] = []
        self.answered = 0  # warm-up included
        self.errors = 0
        self.flagged = 0

    def done(self, client: _Client, seconds: float, body: bytes) -> None:
        self.answered += 1
        if client.started < self.timing_from:
            return
        self.latencies.append(seconds)
        self.errors += client.status != 200
        self.flagged += b'"flagged":true' in body


def _requests(port: int, bodies: list[bytes]) -> list[bytes]:
    head = (
        f"POST /v1/moderations HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
    )
    return [f"{head}Content-Length: {len(b)}\r\n\r\n".encode() + b for b in bodies]


async def _load(port: int, bodies: list[bytes], clients: int, seconds: float, warmup: float):
    loop = asyncio.get_running_loop()
    run = _Run(seconds, warmup)
    requests = _requests(port, bodies)
    conns = []
    for i in range(clients):
        _, proto = await loop.create_connection(
            lambda i=i: _Client(requests, i, clients, run), "127.0.0.1", port
        )
        conns.append(proto)
    await asyncio.gather(*(c.closed for c in conns))
    return run


def generate(port: int, clients: int, seconds: float, warmup: float) -> dict[str, Any]:
    """Drive the service at `port`; the latencies and this process's own CPU share."""
    bodies = _bodies()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    run = asyncio.run(_load(port, bodies, clients, seconds, warmup))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    lat = sorted(run.latencies)
    n = len(lat)
    return {
        "requests": n,
        "errors": run.errors,
        "flagged": run.flagged,
        "requests_per_s": round(n / seconds, 1),
        "p50_ms": round(1000 * lat[n // 2], 2) if n else None,
        "p99_ms": round(1000 * lat[int(0.99 * (n - 1))], 2) if n else None,
        "generator_cpu_share": round(cpu / wall, 3),
        "generator_cpu_ms_per_request": round(1000 * cpu / max(run.answered, 1), 4),
        "answered": run.answered,
    }


def _bodies() -> list[bytes]:
    sys.path.insert(0, str(Path(__file__).parent))
    import data  # benchmarks/data.py

    texts = [t for _, _, replies in data.reply_attempts(200) for t in replies]
    return [json.dumps({"input": t, "model": "redjury"}).encode() for t in texts]


# -- one measured service ----------------------------------------------------------------------
def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (Linux /proc), 0 where unreadable."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    """The process and its children (a `--workers N` service forks N)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        kids = []
    return [pid, *(q for k in kids for q in _tree(int(k)))]


def start(variant: dict[str, Any], port: int, clients: int) -> subprocess.Popen[bytes]:
    if variant["kind"] == "echo":
        cmd = [sys.executable, __file__, "--echo-port", str(port)]
    else:
        cmd = [sys.executable, "-m", "redjury.cli", "serve", "--port", str(port)]
        cmd += ["--client-concurrency", str(clients), "--no-preflight"]
        cmd += [] if variant["access_log"] else ["--no-access-log"]
        cmd += ["--token-env", "REDJURY_BENCH_TOKEN", "--workers", str(variant["workers"])]
    path = [str(REPO / "src"), *variant.get("path", []), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "REDJURY_BENCH_TOKEN": TOKEN}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                time.sleep(0.5)  # every worker up
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"{variant['name']}: the service exited") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{variant['name']}: the service did not start")


def measure(variant: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    proc = start(variant, port, args.clients)
    try:
        pids = _tree(proc.pid)
        cpu0, wall0 = _cpu_seconds(pids), time.perf_counter()
        gen = [sys.executable, __file__, "--generate", str(port)]
        gen += ["--clients", str(args.clients), "--seconds", str(args.seconds)]
        gen += ["--warmup", str(args.warmup)]
        out = subprocess.run(gen, capture_output=True, check=True, text=True).stdout
        result: dict[str, Any] = json.loads(out)
        wall = time.perf_counter() - wall0
        cpu = _cpu_seconds(pids) - cpu0
        result["service_cpu_share"] = round(cpu / wall, 3)
        # CPU time per request is what a loaded machine changes least (the share, the most).
        result["service_cpu_ms_per_request"] = round(1000 * cpu / max(result["answered"], 1), 4)
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def variants(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The floor, then serve at each worker count: with its access log (to /dev/null) as
    deployed, and with uvloop too where `--uvloop-path` gives it."""
    out: list[dict[str, Any]] = [{"name": "echo_floor", "kind": "echo"}]
    log = not args.no_access_log
    for n in args.workers:
        base = {"kind": "serve", "workers": n, "access_log": log}
        suffix = "" if log else "_no_access_log"
        out.append({**base, "name": f"serve_workers_{n}{suffix}"})
        if args.uvloop_path:
            out.append(
                {**base, "name": f"serve_workers_{n}{suffix}_uvloop", "path": [args.uvloop_path]}
            )
    return out


def check(result: dict[str, Any]) -> list[str]:
    """The goals each measured `redjury serve` misses (empty: all met); every service,
    the floor too, must answer every request with 200 and serve must flag some replies."""
    misses = []
    for name, r in result["results"].items():
        if r["errors"] or not r["requests"]:
            misses.append(f"{name}: {r['errors']} errors in {r['requests']} requests")
        if name == "echo_floor":
            continue
        if not r["flagged"]:
            misses.append(f"{name}: no reply flagged")
        if r["requests_per_s"] < GOAL_RPS:
            misses.append(f"{name}: {r['requests_per_s']} requests/s < {GOAL_RPS:g}")
        if r["p99_ms"] is None or r["p99_ms"] > GOAL_P99_MS:
            misses.append(f"{name}: p99 {r['p99_ms']} ms > {GOAL_P99_MS:g} ms")
    return misses


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "clients": args.clients,
        "seconds": args.seconds,
        "cores": os.cpu_count(),
        "load_average_before": os.getloadavg()[0],
        "results": {},
    }
    rounds: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):  # the variants in turn, each round: a load change hits all
        for variant in variants(args):
            rounds.setdefault(variant["name"], []).append(measure(variant, args))
    for name, runs in rounds.items():  # the median round by requests/s
        result["results"][name] = sorted(runs, key=lambda r: r["requests_per_s"])[len(runs) // 2]
    floor = result["results"]["echo_floor"]["requests_per_s"]
    for r in result["results"].values():
        r["vs_floor"] = round(r["requests_per_s"] / floor, 3) if floor else None
    result["misses"] = check(result)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument(
        "--workers",
        type=lambda s: [int(n) for n in s.split(",")],
        default=[1, 2],
        help="serve's worker counts to measure, comma-separated",
    )
    parser.add_argument("--uvloop-path", help="a folder holding uvloop, to measure with it too")
    parser.add_argument("--no-access-log", action="store_true", help="serve without access log")
    parser.add_argument("--rounds", type=int, default=1, help="rounds; the median is kept")
    parser.add_argument("--echo-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_port:
        echo_service(args.echo_port)
    elif args.generate:
        print(json.dumps(generate(args.generate, args.clients, args.seconds, args.warmup)))
    else:
        print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
