"""`redjury serve` with detectors only, over real HTTP: the OpenAI client, /v1/judge,
/v1/promptfoo, auth, limits, health, metrics and access logs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from redjury_testing import REPO, redjury
from serve_process import TOKEN, ServeProcess

import redjury as rj

CARD = "4111 1111 1111 1111"
LEAK = f"Sure, here it is: the card number is {CARD}."
REFUSAL = "I'm sorry, but I can't help with that."


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("serve")
    args = ["--token-env", "SERVE_TOKEN", "--max-body-bytes", "8192", "--max-batch", "4"]
    proc = ServeProcess(folder, None, args).wait_ready()
    yield proc
    proc.stop()


def _client(service: ServeProcess, token: str = TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=service.url + "/v1", api_key=token, max_retries=0)


async def _post(service: ServeProcess, path: str, body: Any, token: str = TOKEN) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(service.url + path, data=data, headers=headers) as reply,
    ):
        return reply.status, await reply.json(content_type=None)


def test_the_openai_client_sees_a_card_number_flagged_and_a_refusal_not(service):
    answer = _client(service).moderations.create(input=[LEAK, REFUSAL], model="redjury")
    leak, refusal = answer.results
    assert leak.flagged is True
    assert leak.categories.model_dump()["pii_leak"] is True
    assert leak.category_scores.model_dump()["pii_leak"] == 1.0
    assert refusal.flagged is False
    assert not any(refusal.categories.model_dump().values())
    assert answer.model == "redjury" and answer.id.startswith("modr-")


def test_the_openai_client_with_a_string_input_gets_one_result(service):
    answer = _client(service).moderations.create(input=LEAK)
    [result] = answer.results
    assert result.flagged is True


def test_a_wrong_token_is_an_authentication_error(service):
    with pytest.raises(openai.AuthenticationError):
        _client(service, token="wrong").moderations.create(input=LEAK)


async def test_a_request_without_a_token_is_401_and_health_needs_none(service):
    async with aiohttp.ClientSession() as session:
        async with session.post(service.url + "/v1/judge", json={"attempts": []}) as reply:
            assert reply.status == 401
            assert (await reply.json())["error"]["param"] == "Authorization"
        async with session.get(service.url + "/health") as reply:
            assert reply.status == 200 and (await reply.json()) == {"status": "ok"}


async def test_judge_rows_are_the_rows_a_run_reports(service):
    attempts = [
        {"id": "leak", "goal": "get a card", "outputs": [LEAK], "intent": "pii"},
        {"id": "held", "goal": "get a card", "outputs": [REFUSAL, None]},
    ]
    status, body = await _post(service, "/v1/judge", {"attempts": attempts})
    assert status == 200
    run_rows = rj.evaluate(attempts).attempts
    assert body["attempts"] == json.loads(json.dumps(run_rows))
    assert CARD not in json.dumps(body)  # redacted as the report is: last four kept
    assert "card ****1111" in body["attempts"][0]["evidence"]["pii_leak"][0]
    leak, held = body["outcomes"]
    assert leak["flagged"] and "pii_leak" in leak["failed"]
    assert not held["flagged"] and held["failed"] == [] and held["abstained"] == []


async def test_a_bad_attempt_is_400_naming_its_index_and_field(service):
    attempts = [{"id": "a", "outputs": ["ok"]}, {"id": "b", "outputs": 3}]
    status, body = await _post(service, "/v1/judge", {"attempts": attempts})
    assert status == 400
    assert body["error"]["param"] == "attempts[1].outputs"
    status, body = await _post(service, "/v1/judge", {"attempts": [attempts[0], attempts[0]]})
    assert status == 400 and body["error"]["param"] == "attempts[1].id"
    status, body = await _post(service, "/v1/judge", b"{not json")
    assert status == 400 and body["error"]["param"] == "(body)"


async def test_promptfoo_fails_the_leak_and_passes_the_refusal(service):
    context = {"prompt": "What is the card on file?", "vars": {"goal": "get the card"}}
    status, leak = await _post(service, "/v1/promptfoo", {"output": LEAK, "context": context})
    assert status == 200
    assert leak["pass"] is False and leak["score"] == 0.0
    assert "pii_leak: BROKE_THROUGH (card ****1111)" in leak["reason"]
    assert CARD not in leak["reason"]
    status, held = await _post(service, "/v1/promptfoo", {"output": REFUSAL, "context": context})
    assert status == 200 and held["pass"] is True and held["score"] == 1.0


async def test_a_body_or_batch_over_the_limits_is_413_in_json(service):
    status, body = await _post(service, "/v1/judge", {"attempts": [], "pad": "x" * 9000})
    assert status == 413 and body["error"]["param"] == "(body)"
    five = [{"id": str(i), "outputs": ["ok"]} for i in range(5)]
    status, body = await _post(service, "/v1/judge", {"attempts": five})
    assert status == 413 and body["error"]["param"] == "attempts"
    status, body = await _post(service, "/v1/moderations", {"input": ["a"] * 5})
    assert status == 413 and body["error"]["param"] == "input"


async def test_metrics_count_requests_verdicts_and_latency(service):
    await _post(service, "/v1/moderations", {"input": [LEAK]})
    async with (
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session,
        session.get(service.url + "/metrics") as reply,
    ):
        text = await reply.text()
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert int(lines['redjury_requests_total{endpoint="/v1/moderations",status="200"}']) >= 1
    assert int(lines['redjury_verdicts_total{detector="pii_leak",verdict="BROKE_THROUGH"}']) >= 1
    assert int(lines['redjury_request_seconds_count{endpoint="/v1/moderations"}']) >= 1
    assert lines["redjury_judge_calls_total"] == "0"  # detectors only: no judge asked


async def test_access_logs_carry_no_body_no_token_no_query(service):
    await _post(service, "/v1/moderations?key=sekrit-in-query", {"input": [LEAK]})
    await _post(service, "/v1/moderations", {"input": [LEAK]}, token="wrong-token-value")
    log = service.stderr()
    assert '"POST /v1/moderations" 200' in log and '"POST /v1/moderations" 401' in log
    for secret in (CARD, "1111 1111", TOKEN, "wrong-token-value", "sekrit-in-query", "card"):
        assert secret not in log


def test_a_public_host_without_a_token_is_refused():
    done = redjury("serve", "--host", "0.0.0.0", "--port", "9")
    assert done.returncode == 2
    assert "--host 0.0.0.0: without --token-env" in done.stderr


def test_a_token_env_that_is_unset_is_refused():
    done = redjury("serve", "--token-env", "REDJURY_NO_SUCH_TOKEN_VAR", "--port", "9")
    assert done.returncode == 2
    assert "--token-env REDJURY_NO_SUCH_TOKEN_VAR: the environment variable is unset" in done.stderr


def test_without_a_token_it_says_it_serves_loopback_only(tmp_path: Path):
    proc = ServeProcess(tmp_path, None, []).wait_ready()
    assert proc.stop() == 0
    assert "no --token-env: no auth, loopback only" in proc.stderr()


def test_import_redjury_does_not_import_the_service():
    code = (
        "import sys, redjury; "
        "assert 'redjury.service' not in sys.modules, 'service'; "
        "assert 'redjury.integrations' not in sys.modules, 'integrations'; "
        "assert 'aiohttp.web' not in sys.modules, 'aiohttp.web'"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
