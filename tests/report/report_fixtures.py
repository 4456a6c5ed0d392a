"""Helpers of the report tests: a real run of the bundled example, synthetic large reports,
and headless Chromium driven over the DevTools protocol."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from redjury_testing import REPO, redjury

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def run_example(out: Path) -> Path:
    """The bundled example judged by the real CLI; intervals from 5 evaluated outputs up."""
    proc = redjury(
        "run",
        REPO / "examples" / "attempts.jsonl",
        "--out",
        out,
        "--bootstrap-min-sample-size",
        "5",
        "--seed",
        "7",
    )
    assert proc.returncode == 0, proc.stderr
    return out


def synthetic_report(
    out: Path, attempts: int, detectors: tuple[str, ...] = ("d_a", "d_b"), seed: int = 1
) -> Path:
    """A report JSONL written row by row, as the pipeline would, without judging anything."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    probes = [f"probe.p{i}" for i in range(8)]
    intents = ["fraud", "malware", "hate", "privacy", None]
    tallies: dict[tuple[str, str], list[int]] = {}
    path = out / "redjury.report.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        header = {
            "entry_type": "init",
            "run_id": "synthetic",
            "evaluator": {"type": "threshold", "threshold": 0.5},
            "config": {"reporting": {"bootstrap_min_sample_size": 30}},
            "detectors": list(detectors),
        }
        fh.write(json.dumps(header) + "\n")
        for i in range(attempts):
            probe = probes[i % len(probes)]
            results = {}
            for d in detectors:
                scores = [rng.choice([0.0, 0.0, 0.0, 1.0, None]) for _ in range(2)]
                results[d] = scores
                t = tallies.setdefault((probe, d), [0, 0, 0])
                for s in scores:
                    t[0 if s == 0.0 else 1 if s == 1.0 else 2] += 1
            row: dict[str, Any] = {
                "entry_type": "attempt",
                "id": f"a{i}",
                "probe": probe,
                "goal": f"goal {i % 50}",
                "outputs": [f"output {i} first <b>&amp;", f"output {i} second"],
                "detector_results": results,
            }
            intent = intents[i % len(intents)]
            if intent:
                row["intent"] = intent
            fh.write(json.dumps(row) + "\n")
        for (probe, d), (p, f, n) in sorted(tallies.items()):
            fh.write(
                json.dumps(
                    {
                        "entry_type": "eval",
                        "probe": probe,
                        "detector": d,
                        "passed": p,
                        "fails": f,
                        "nones": n,
                        "total_evaluated": p + f,
                        "total_processed": p + f + n,
                    }
                )
                + "\n"
            )
        fh.write(json.dumps({"entry_type": "completion", "attempts": attempts}) + "\n")
    return path


class Browser:
    """One headless Chromium with a fresh profile and one page, spoken to over CDP."""

    def __init__(self, profile: Path) -> None:
        import websocket  # websocket-client

        self.profile = profile

        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "--window-size=1280,1800",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages: list[dict[str, Any]] = []
        while not pages:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [p for p in json.load(r) if p.get("type") == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg
        raise TimeoutError(method)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def open(self, url: str) -> float:
        """Navigate and wait for the load event; return the seconds it took."""
        self.events.clear()
        start = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout=60)
        return time.monotonic() - start

    def errors(self) -> list[str]:
        found = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                found.append(json.dumps(p["exceptionDetails"])[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                found.append(json.dumps(p.get("args"))[:500])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                found.append(p["entry"].get("text", ""))
        return found

    def requests(self) -> list[str]:
        return [
            ev["params"]["request"]["url"]
            for ev in self.events
            if ev.get("method") == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


def start_browser() -> Browser:
    """A fresh Chromium; skipped where it is missing, except on CI where that is a failure."""
    missing = None
    if not Path(CHROMIUM).exists():
        missing = f"{CHROMIUM} is missing; .ci/install_chromium.sh installs it"
    else:
        try:
            import websocket  # noqa: F401
        except ImportError:
            missing = "the browser test needs websocket-client (pip install websocket-client)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    return Browser(Path(tempfile.mkdtemp(prefix="redjury-chromium-")))
