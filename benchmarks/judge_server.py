"""A scripted OpenAI-compatible judge server for the throughput benchmark: plain asyncio
HTTP/1.1 with keep-alive, every chat completion answered after a fixed delay, any number at
once. Listens on 127.0.0.1 only; prints its port, then serves until stdin closes.

    GET  /stats   {"requests", "max_in_flight", "cpu_s"} since the last reset
    POST /reset   zero the counters
    POST .../chat/completions   "Yes" or "No" (a hash of the body decides), after --delay s
    GET  .../models             the benchmark's judge names
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time


class Counters:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        t = os.times()
        self.cpu0 = t.user + t.system
        self.t0 = time.monotonic()

    def snapshot(self) -> dict:
        t = os.times()
        return {
            "requests": self.requests,
            "max_in_flight": self.max_in_flight,
            "cpu_s": t.user + t.system - self.cpu0,
            "wall_s": time.monotonic() - self.t0,
        }


def _response(status: int, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def _completion(body: bytes) -> bytes:
    try:
        model = json.loads(body).get("model", "judge")
    except ValueError:
        model = "judge"
    answer = "Yes" if hashlib.blake2b(body, digest_size=1).digest()[0] < 77 else "No"
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 1, "total_tokens": 121},
        }
    ).encode()


class JudgeServer:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.counters = Counters()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                writer.write(await self.route(method, path, body))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def route(self, method: str, path: str, body: bytes) -> bytes:
        c = self.counters
        if path.endswith("/chat/completions") and method == "POST":
            c.requests += 1
            c.in_flight += 1
            c.max_in_flight = max(c.max_in_flight, c.in_flight)
            try:
                if self.delay:
                    await asyncio.sleep(self.delay)
                return _response(200, _completion(body))
            finally:
                c.in_flight -= 1
        if path == "/stats":
            return _response(200, json.dumps(c.snapshot()).encode())
        if path == "/reset" and method == "POST":
            c.reset()
            return _response(200, b"{}")
        if path.endswith("/models"):
            # The names the benchmark's judges use, so redjury's preflight finds them listed.
            names = ["judge", "judge-a", "judge-b", "judge-c"]
            data = [{"id": n, "object": "model"} for n in names]
            return _response(200, json.dumps({"object": "list", "data": data}).encode())
        return _response(404, b'{"error":"not found"}')


async def serve(delay: float, port: int) -> None:
    server = JudgeServer(delay)
    srv = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    print(srv.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    # Serve until the parent closes our stdin (or dies): no orphan servers.
    await loop.run_in_executor(None, sys.stdin.read)
    srv.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    asyncio.run(serve(args.delay, args.port))


if __name__ == "__main__":
    main()
