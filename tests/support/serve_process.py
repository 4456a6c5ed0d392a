"""`redjury serve` as a real subprocess on a free loopback port, stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from redjury_testing import REPO

TOKEN = "test-token-5d1f9c2b7a"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """One `redjury serve` process; `stop()` sends SIGTERM and returns its exit status."""

    def __init__(self, folder: Path, config: dict[str, Any] | None, args: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "redjury.cli", "serve", "--port", str(self.port), *args]
        if config is not None:
            path = folder / "serve.yaml"
            path.write_text(json.dumps(config))
            cmd += ["--config", str(path)]
        env = {**os.environ, "SERVE_TOKEN": TOKEN, "REDJURY_CACHE_DIR": str(folder / "cache")}
        self.stderr_path = folder / "serve.stderr"
        self._stderr = self.stderr_path.open("w")
        self._terminated = False
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=self._stderr
        )

    def wait_ready(self, timeout: float = 120.0) -> ServeProcess:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"redjury serve exited: {self.stderr()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"redjury serve did not start: {self.stderr()}")

    def terminate(self) -> None:
        """SIGTERM, once: a second one while it drains would stop the drain."""
        if not self._terminated and self.proc.poll() is None:
            self._terminated = True
            self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        self.terminate()
        code = self.proc.wait(timeout=120)
        self._stderr.close()
        return code

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.stop()

    def stderr(self) -> str:
        return self.stderr_path.read_text()
