"""Proxies from the environment: judge requests go through a real local forward proxy
(proxy.py) under HTTP_PROXY, and straight to the server where NO_PROXY names it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_server import Reply, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.proxies import bypassed, proxy_for


@pytest.fixture
def forward_proxy(tmp_path: Path) -> Iterator[str]:
    yield from start_proxy(tmp_path)


def start_proxy(tmp_path: Path) -> Iterator[str]:
    """proxy.py on 127.0.0.1, a free port; yields its URL."""
    port_file = tmp_path / "proxy.port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0"]
        + ["--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1"]
        + ["--log-file", str(tmp_path / "proxy.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"proxy.py did not start: exit {proc.poll()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}"
    finally:
        proc.terminate()
        proc.wait(10)


def proxied(server) -> int:
    """Requests that reached the server through proxy.py: it marks the first request of each
    connection it opens with a Via header, then relays the rest of that connection as is."""
    via = {r.conn for r in server.requests if "proxy.py" in r.headers.get("via", "")}
    return sum(r.conn in via for r in server.requests)


async def judge_three(make_panel, server):
    panel = make_panel([judge(server.openai_url)], use_cache=False)
    for i in range(3):
        await panel.adetect(Attempt(id=str(i), goal=f"g{i}", outputs=["o"]))
    await panel.aclose()


@pytest.mark.slow
async def test_http_proxy_carries_every_judge_request(
    server, forward_proxy, make_panel, monkeypatch
):
    server.set_script(always(Reply("no")))
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", forward_proxy)
    await judge_three(make_panel, server)
    assert server.count == 3
    assert proxied(server) == 3


@pytest.mark.slow
@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.0/8", "*"])
async def test_no_proxy_sends_loopback_judges_direct(
    server, forward_proxy, make_panel, monkeypatch, no_proxy
):
    server.set_script(always(Reply("no")))
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.setenv("HTTP_PROXY", forward_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    await judge_three(make_panel, server)
    assert server.count == 3
    assert proxied(server) == 0


def test_proxy_choice_follows_the_scheme(monkeypatch):
    for name in ("no_proxy", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://plain.corp:80")
    assert proxy_for("https://api.openai.com/v1") == "http://proxy.corp:3128"
    assert proxy_for("http://vllm.lan:8000/v1") == "http://plain.corp:80"


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "expected"),
    [
        ("127.0.0.1", 8000, "127.0.0.1", True),
        ("127.0.0.1", 8000, "localhost", False),
        ("127.0.0.5", 8000, "127.0.0.0/8", True),
        ("10.1.2.3", 8000, "127.0.0.0/8", False),
        ("api.corp.example", 443, ".corp.example", True),
        ("api.corp.example", 443, "corp.example", True),
        ("notcorp.example", 443, "corp.example", False),
        ("127.0.0.1", 8000, "127.0.0.1:9000", False),
        ("127.0.0.1", 9000, "127.0.0.1:9000", True),
        ("::1", 8000, "::1", True),
        ("anything", 1, " * ", True),
        ("anything", 1, "", False),
    ],
)
def test_no_proxy_entries(host, port, no_proxy, expected):
    assert bypassed(host, port, no_proxy) is expected


@pytest.mark.slow
async def test_https_proxy_tunnels_https_judges(tmp_path, make_panel, monkeypatch):
    import ssl

    import trustme
    from fault_server import FaultServer

    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    for name in ("NO_PROXY", "no_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = start_proxy(tmp_path)
    monkeypatch.setenv("HTTPS_PROXY", next(proxy))
    try:
        with FaultServer(always(Reply("yes")), tls=context) as server:
            spec = judge(server.openai_url, connection={"ca_bundle": str(ca_file)})
            panel = make_panel([spec], use_cache=False)
            [finding] = await panel.adetect(Attempt(id="x", goal="g", outputs=["o"]))
            await panel.aclose()
            assert finding.details["votes"] == {"harmbench:judge-a": 10.0}
    finally:
        proxy.close()
    # proxy.py logs a tunnel when it closes: the CONNECT to the judge server went through it.
    log = (tmp_path / "proxy.log").read_text()
    assert f"CONNECT 127.0.0.1:{server.port}" in log
