"""HTTPS judges: system CAs by default, `connection.ca_bundle` and $SSL_CERT_FILE, against a
local HTTPS judge server whose certificate a test CA signed; a bad certificate is named."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from fault_server import FaultServer, Reply, always
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.preflight import preflight


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def tls_server(ca: trustme.CA) -> Iterator[FaultServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    with FaultServer(always(Reply("yes")), tls=context) as srv:
        yield srv


async def verdict(panel):
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    return finding


async def test_a_ca_bundle_per_connection_verifies_the_server(tls_server, ca_file, make_panel):
    assert tls_server.openai_url.startswith("https://")
    spec = judge(tls_server.openai_url, connection={"ca_bundle": str(ca_file)})
    finding = await verdict(make_panel([spec], use_cache=False))
    assert finding.details["votes"] == {"harmbench:judge-a": 10.0}
    assert tls_server.count == 1


async def test_ssl_cert_file_is_honoured(tls_server, ca_file, make_panel, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    finding = await verdict(make_panel([judge(tls_server.openai_url)], use_cache=False))
    assert finding.details["votes"] == {"harmbench:judge-a": 10.0}


async def test_system_cas_do_not_trust_a_private_ca(tls_server, make_panel):
    panel = make_panel([judge(tls_server.openai_url)], use_cache=False)
    finding = await verdict(panel)
    reason = finding.details["abstained"]["harmbench:judge-a"]
    assert reason.startswith(f"TLS failed for {tls_server.openai_url}/chat/completions: ")
    assert "certificate verify failed" in reason
    assert tls_server.count == 0
    # A certificate failure is a setup error: no retries were spent on it.
    assert panel.stats()["retries"] == 0


async def test_preflight_names_the_judge_and_url_of_a_bad_certificate(tls_server, make_panel):
    panel = make_panel([judge(tls_server.openai_url)], use_cache=False)
    [failure] = await preflight(panel.judges)
    await panel.aclose()
    assert failure.judge == "harmbench:judge-a"
    assert failure.url == tls_server.openai_url
    assert "certificate verify failed" in failure.cause
    assert tls_server.requests == []


async def test_preflight_passes_with_the_right_bundle(tls_server, ca_file, make_panel):
    spec = judge(tls_server.openai_url, connection={"ca_bundle": str(ca_file)})
    panel = make_panel([spec], use_cache=False)
    assert await preflight(panel.judges) == []
    await panel.aclose()
    assert [(r.method, r.path) for r in tls_server.requests] == [("GET", "/v1/models")]
