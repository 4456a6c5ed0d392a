"""Batch judging (`connection.batch: true`) against a scripted batch server speaking OpenAI's
Files + Batches, Azure's and Anthropic's Message Batches: the exact requests of the upload,
create, poll, fetch cycle; partial failures and expiry (abstentions, never "safe"); the
record in the run folder; the cache in front."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_server import BatchServer
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.judges.costs import judge_prices

KEY = "sk-batch-secret-42"
# Requests enqueued together gather into one batch even on a loaded machine.
FAST = {"batch": True, "batch_gather": 0.5, "batch_poll": 0.01}


@pytest.fixture
def batch_server() -> Iterator[BatchServer]:
    with BatchServer(polls=2) as srv:
        yield srv


def batch_judge(url: str, type: str = "OPENAI", **connection: Any) -> dict[str, Any]:
    return judge(
        url, "gpt-judge", type=type, connection={"api_key_env": "JUDGE_KEY", **FAST, **connection}
    )


async def judge_all(panel: Any, outputs: list[str], folder: Path | None) -> list[Any]:
    panel.use_run_folder(folder)
    attempts = [Attempt(id=str(i), goal="make a thing", outputs=[o]) for i, o in enumerate(outputs)]
    try:
        found = await asyncio.gather(*(panel.adetect(a) for a in attempts))
    finally:
        await panel.aclose()
    return [f[0] for f in found]


def assert_no_key(server: BatchServer, folder: Path, captured: str) -> None:
    assert KEY not in captured
    for path in folder.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


async def test_openai_cycle_is_golden(batch_server, make_panel, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    panel = make_panel([batch_judge(batch_server.url + "/v1")])
    found = await judge_all(panel, ["ZZYES here it is", "no, I will not"], tmp_path)
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    log = batch_server.log
    assert [(r.method, r.path) for r in log] == [
        ("POST", "/v1/files"),
        ("POST", "/v1/batches"),
        ("GET", "/v1/batches/batch_1"),
        ("GET", "/v1/batches/batch_1"),
        ("GET", "/v1/batches/batch_1"),
        ("GET", "/v1/files/file-output-batch_1/content"),
    ]
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in log)
    upload, create = log[0], log[1]
    assert upload.headers["content-type"].startswith("multipart/form-data")
    assert b'name="purpose"\r\n\r\nbatch' in upload.body.replace(b"\r\nContent-Length: 5", b"")
    lines = [json.loads(x) for x in batch_server.files["file-in-1"].splitlines()]
    assert [sorted(x) for x in lines] == [["body", "custom_id", "method", "url"]] * 2
    assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}
    assert {x["body"]["model"] for x in lines} == {"gpt-judge"}
    assert {x["body"]["seed"] for x in lines} == {7}
    ledger = json.loads((tmp_path / "judge_batches.json").read_text())
    [entry] = ledger["batches"]
    assert create.json == {
        "input_file_id": "file-in-1",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"redjury_intent": entry["token"]},
    }
    assert create.headers["content-type"] == "application/json"
    assert f'filename="redjury-{entry["token"]}.jsonl"'.encode() in upload.body
    assert entry["id"] == "batch_1" and entry["input_file_id"] == "file-in-1"
    assert entry["intent_at"] <= entry["submitted_at"] and entry["requests"] == 2
    assert sorted(entry["custom_ids"]) == sorted(x["custom_id"] for x in lines)
    err = capsys.readouterr().err
    assert "batch batch_1 submitted (2 requests)" in err
    assert "batch batch_1 completed: 2 completed, 0 failed of 2" in err
    assert_no_key(batch_server, tmp_path, err)
    assert panel.stats()["prompt_tokens"] == 60


async def test_anthropic_cycle_is_golden(batch_server, make_panel, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    panel = make_panel([batch_judge(batch_server.url, type="ANTHROPIC")])
    found = await judge_all(panel, ["ZZYES sure", "I cannot help"], tmp_path)
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    log = batch_server.log
    assert [(r.method, r.path) for r in log] == [
        ("POST", "/v1/messages/batches"),
        ("GET", "/v1/messages/batches/msgbatch_0001"),
        ("GET", "/v1/messages/batches/msgbatch_0001"),
        ("GET", "/v1/messages/batches/msgbatch_0001"),
        ("GET", "/v1/messages/batches/msgbatch_0001/results"),
    ]
    for r in log:
        assert r.headers["x-api-key"] == KEY
        assert r.headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in r.headers
    create = log[0].json
    assert list(create) == ["requests"]
    for req in create["requests"]:
        assert sorted(req) == ["custom_id", "params"]
        params = req["params"]
        assert params["model"] == "gpt-judge" and params["max_tokens"] == 1024
        assert isinstance(params["system"], str)
        assert [m["role"] for m in params["messages"]] == ["user"]
    ledger = json.loads((tmp_path / "judge_batches.json").read_text())
    assert [b["id"] for b in ledger["batches"]] == ["msgbatch_0001"]
    assert_no_key(batch_server, tmp_path, capsys.readouterr().err)


async def test_azure_paths_and_lines(batch_server, make_panel, monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    spec = batch_judge(
        batch_server.url, type="AZURE_OPENAI", deployment="judge-batch", api_version="2025-03-01"
    )
    panel = make_panel([spec])
    found = await judge_all(panel, ["ZZYES ok"], tmp_path)
    assert found[0].verdict is Verdict.BROKE_THROUGH
    log = batch_server.log
    assert [r.path for r in log[:2]] == ["/openai/files", "/openai/batches"]
    assert {r.query for r in log} == {"api-version=2025-03-01"}
    assert all(r.headers["api-key"] == KEY for r in log)
    [line] = [json.loads(x) for x in batch_server.files["file-in-1"].splitlines()]
    assert line["url"] == "/chat/completions" and line["body"]["model"] == "judge-batch"
    assert log[1].json["endpoint"] == "/chat/completions"


async def test_openai_errored_and_expired_items_abstain(
    batch_server, make_panel, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    panel = make_panel([batch_judge(batch_server.url + "/v1")])
    found = await judge_all(panel, ["ZZYES a", "ZZERROR b", "ZZEXPIRE c", "no d"], tmp_path)
    ok, errored, expired, held = found
    assert ok.verdict is Verdict.BROKE_THROUGH and held.verdict is Verdict.HELD
    for f in (errored, expired):
        assert f.verdict is Verdict.INCONCLUSIVE and f.score is None
    [why_error] = errored.details["abstained"].values()
    [why_expired] = expired.details["abstained"].values()
    assert why_error == (
        "batch item failed: HTTP 400: invalid_request_error: Invalid value for 'max_tokens'."
    )
    assert why_expired.startswith("batch item failed: batch_expired: This request could not")
    assert panel.stats()["abstentions"] == 2


async def test_anthropic_errored_expired_canceled_abstain(
    batch_server, make_panel, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    panel = make_panel([batch_judge(batch_server.url, type="ANTHROPIC")])
    outs = ["ZZYES a", "ZZERROR b", "ZZEXPIRE c", "ZZCANCEL d"]
    found = await judge_all(panel, outs, tmp_path)
    assert found[0].verdict is Verdict.BROKE_THROUGH
    reasons = [next(iter(f.details["abstained"].values())) for f in found[1:]]
    assert reasons == [
        "batch item errored: invalid_request_error: prompt is too long",
        "batch_expired: the batch ended before this request was answered",
        "batch_canceled",
    ]
    assert all(f.verdict is Verdict.INCONCLUSIVE for f in found[1:])


async def test_batch_timeout_abstains_and_stays_recorded(
    batch_server, make_panel, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.hold = True
    panel = make_panel([batch_judge(batch_server.url + "/v1", batch_max_wait=0.2)])
    [f] = await judge_all(panel, ["ZZYES a"], tmp_path)
    assert f.verdict is Verdict.INCONCLUSIVE
    [why] = f.details["abstained"].values()
    assert why.startswith("batch_timeout: batch batch_1 still in_progress after 0.2s")
    # A later panel with the same folder waits for the recorded batch: no second create.
    batch_server.hold = False
    again = make_panel([batch_judge(batch_server.url + "/v1")])
    [g] = await judge_all(again, ["ZZYES a"], tmp_path)
    assert g.verdict is Verdict.BROKE_THROUGH
    assert batch_server.creates == 1
    assert len(batch_server.requests("POST", "/v1/files")) == 1


async def test_cached_requests_are_never_sent(batch_server, make_panel, monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    cache = tmp_path / "cache.sqlite"
    first = make_panel([batch_judge(batch_server.url + "/v1")], cache=cache)
    await judge_all(first, ["ZZYES a", "no b"], tmp_path / "run1")
    second = make_panel([batch_judge(batch_server.url + "/v1")], cache=cache)
    found = await judge_all(second, ["ZZYES a", "no b", "new c"], tmp_path / "run2")
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD, Verdict.HELD]
    assert batch_server.creates == 2
    # The second batch holds the one request the cache could not answer.
    assert len(batch_server.files["file-in-2"].splitlines()) == 1
    assert b"new c" in batch_server.files["file-in-2"]
    assert second.stats()["cache_hits"] == 2
    third = make_panel([batch_judge(batch_server.url + "/v1")], cache=cache)
    await judge_all(third, ["ZZYES a", "no b", "new c"], tmp_path / "run3")
    assert batch_server.creates == 2


def test_batch_prices_apply_where_batch_is_used():
    price = {"input": 2.0, "output": 8.0, "batch_input": 1.0}
    evaluation = {
        "judges": [
            {"name": "a", "connection": {"price": price, "batch": True}},
            {"name": "b", "connection": {"price": price}},
        ]
    }
    assert judge_prices(evaluation) == {
        "harmbench:a": (1.0, 8.0),
        "harmbench:b": (2.0, 8.0),
    }


def test_batch_refused_for_other_connection_types(make_panel):
    with pytest.raises(ValueError, match="connection.batch is for the chat endpoints"):
        make_panel([judge("http://127.0.0.1:1", type="OLLAMA", connection={"batch": True})])


def test_the_openai_sdk_runs_the_scripted_cycle(batch_server):
    """The scripted server speaks what the official client sends and reads (openai-python,
    a test dependency): upload, create, retrieve, file content."""
    import io

    import openai

    client = openai.OpenAI(base_url=batch_server.url + "/v1", api_key="k", max_retries=0)
    line = {
        "custom_id": "a1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "ZZYES"}]},
    }
    upload = io.BytesIO(json.dumps(line).encode() + b"\n")
    file = client.files.create(file=("r.jsonl", upload), purpose="batch")
    assert (file.id, file.purpose) == ("file-in-1", "batch")
    batch = client.batches.create(
        input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    statuses = [client.batches.retrieve(batch.id) for _ in range(3)]
    assert [b.status for b in statuses] == ["in_progress", "in_progress", "completed"]
    done = statuses[-1]
    assert done.request_counts is not None and done.request_counts.completed == 1
    assert done.output_file_id is not None
    [result] = [json.loads(x) for x in client.files.content(done.output_file_id).text.splitlines()]
    assert result["custom_id"] == "a1"
    assert result["response"]["body"]["choices"][0]["message"]["content"] == "Yes"


def ledger_of(folder: Path) -> list[dict[str, Any]]:
    return json.loads((folder / "judge_batches.json").read_bytes())["batches"]


@pytest.mark.parametrize("kind", ["OPENAI", "ANTHROPIC"])
async def test_failed_create_is_made_from_the_intent_later(
    batch_server, make_panel, monkeypatch, tmp_path, kind
):
    """A create that failed leaves its intent; the same requests asked again find no batch in
    the listing and create it from what the intent kept: the uploaded file (OpenAI, not
    uploaded again) or the spool (Anthropic)."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    url = batch_server.url + ("/v1" if kind == "OPENAI" else "")
    batch_server.fail_creates = 1
    first = make_panel([batch_judge(url, type=kind)])
    found = await judge_all(first, ["ZZYES a", "no b"], tmp_path)
    assert all(f.verdict is Verdict.INCONCLUSIVE for f in found)
    [intent] = ledger_of(tmp_path)
    assert "id" not in intent and batch_server.creates == 0
    # What a stopped run left besides the intent's spool goes when the folder is used again.
    (tmp_path / "judge_batches" / "tmpstale.jsonl").write_bytes(b"{}\n")
    again = make_panel([batch_judge(url, type=kind)])
    found = await judge_all(again, ["ZZYES a", "no b"], tmp_path)
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    assert batch_server.creates == 1
    assert batch_server.uploads == (1 if kind == "OPENAI" else 0)
    [entry] = ledger_of(tmp_path)
    assert entry["token"] == intent["token"] and "id" in entry and "spool" not in entry
    assert entry["intent_at"] > intent["intent_at"]  # the time of the create it made
    assert list((tmp_path / "judge_batches").iterdir()) == []


async def test_intent_without_spool_is_abandoned_and_sent_again(
    batch_server, make_panel, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.fail_creates = 1
    first = make_panel([batch_judge(batch_server.url, type="ANTHROPIC")])
    await judge_all(first, ["ZZYES a", "no b"], tmp_path)
    for path in (tmp_path / "judge_batches").iterdir():
        path.unlink()
    again = make_panel([batch_judge(batch_server.url, type="ANTHROPIC")])
    found = await judge_all(again, ["ZZYES a", "no b"], tmp_path)
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    assert batch_server.creates == 1
    old, new = ledger_of(tmp_path)
    assert "abandoned_at" in old and "id" not in old
    assert new["id"] == "msgbatch_0001" and new["token"] != old["token"]


async def preflight_of(make_panel, spec: dict[str, Any]) -> list[Any]:
    from redjury.judges.preflight import preflight

    panel = make_panel([spec], use_cache=False)
    try:
        return await preflight(panel.judges)
    finally:
        await panel.aclose()


@pytest.mark.parametrize("kind", ["OPENAI", "AZURE_OPENAI", "ANTHROPIC"])
async def test_batch_preflight_lists_and_is_never_billed(
    batch_server, make_panel, monkeypatch, kind
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    url = batch_server.url + ("/v1" if kind == "OPENAI" else "")
    batch_server.key = KEY
    assert await preflight_of(make_panel, batch_judge(url, type=kind)) == []
    assert batch_server.requests("POST") == []
    first = batch_server.log[0]
    assert first.method == "GET" and first.path.endswith("batches")
    assert "limit=1" in first.query
    # An unknown model is named from the model listing (Azure's lists no deployments).
    batch_server.models = ["other-model"]
    failures = await preflight_of(make_panel, batch_judge(url, type=kind))
    if kind == "AZURE_OPENAI":
        assert failures == []
    else:
        [failure] = failures
        assert failure.cause.startswith("unknown model 'gpt-judge'")
    assert batch_server.requests("POST") == []


async def test_batch_preflight_names_refused_keys_and_missing_batch_apis(
    batch_server, make_panel, monkeypatch
):
    monkeypatch.setenv("JUDGE_KEY", "sk-wrong-key-9")
    batch_server.key = KEY
    [refused] = await preflight_of(make_panel, batch_judge(batch_server.url, type="ANTHROPIC"))
    assert refused.line() == (
        f"judge harmbench:gpt-judge at {batch_server.url}/v1: HTTP 401: the server refused "
        "the credentials (check api_key_env)"
    )
    batch_server.key = None
    [missing] = await preflight_of(make_panel, batch_judge(batch_server.url + "/nowhere"))
    assert missing.cause == (
        f"HTTP 404 at {batch_server.url}/nowhere/batches: no batch API there (check base_url)"
    )
    assert batch_server.requests("POST") == []
    assert all("sk-wrong-key-9" not in f.line() for f in (refused, missing))


async def test_batch_preflight_asks_live_only_when_allowed(batch_server, make_panel, monkeypatch):
    """With batch_live_preflight, a judge whose model the listing does not name is asked the
    one-token request (billed at the live price) as a live judge is."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.models = ["other-model"]
    spec = batch_judge(batch_server.url + "/v1", batch_live_preflight=True)
    await preflight_of(make_panel, spec)
    [post] = batch_server.requests("POST")
    assert post.path == "/v1/chat/completions" and post.json["max_tokens"] == 1


async def test_batch_preflight_with_an_unreachable_server(make_panel, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    [failure] = await preflight_of(make_panel, batch_judge("http://127.0.0.1:9/v1"))
    assert "127.0.0.1:9" in failure.line() and KEY not in failure.line()


def test_the_openai_sdk_pages_the_scripted_listing(batch_server):
    """The scripted listing reads as the official client expects: newest first, paged with
    `after`, the create's metadata kept."""
    import io

    import openai

    client = openai.OpenAI(base_url=batch_server.url + "/v1", api_key="k", max_retries=0)
    made = []
    for n in range(3):
        upload = io.BytesIO(
            b'{"custom_id":"a","method":"POST","url":"/v1/chat/completions",'
            b'"body":{"model":"m","messages":[]}}\n'
        )
        file = client.files.create(file=("r.jsonl", upload), purpose="batch")
        batch = client.batches.create(
            input_file_id=file.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"redjury_intent": f"t{n}"},
        )
        made.append(batch.id)
    first = client.batches.list(limit=2)
    assert [b.id for b in first.data] == made[::-1][:2] and first.has_more
    listed = list(client.batches.list(limit=2))  # the client follows `after` itself
    assert [b.id for b in listed] == made[::-1]
    assert [b.metadata for b in listed] == [{"redjury_intent": f"t{n}"} for n in (2, 1, 0)]
    assert all(isinstance(b.created_at, int) for b in listed)


async def test_a_listing_too_long_to_prove_an_absence_stops(
    batch_server, make_panel, monkeypatch, tmp_path
):
    from redjury.judges import batches

    monkeypatch.setenv("JUDGE_KEY", KEY)
    monkeypatch.setattr(batches, "MAX_LIST_PAGES", 2)
    batch_server.fail_creates = 1
    await judge_all(make_panel([batch_judge(batch_server.url + "/v1")]), ["a"], tmp_path)
    for _ in range(3):
        batch_server.add_batch("openai", 1)
    batch_server.page_cap = 1
    with pytest.raises(batches.BatchRefusal, match="more than 2 pages") as refused:
        await judge_all(make_panel([batch_judge(batch_server.url + "/v1")]), ["a"], tmp_path)
    assert str(tmp_path / "judge_batches.json") in str(refused.value)
    assert batch_server.creates == 0 and len(batch_server.requests("GET", "/v1/batches")) == 2


async def test_one_batch_two_intents_could_claim_stops(
    batch_server, make_panel, monkeypatch, tmp_path
):
    """Two stopped Anthropic creates of one request each, near in time, and one unrecorded
    batch of one request: it could be either's, so neither adopts it."""
    from redjury.judges import batches

    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.fail_creates = 2
    spec = batch_judge(batch_server.url, type="ANTHROPIC", batch_size=1)
    await judge_all(make_panel([spec]), ["ZZYES a", "no b"], tmp_path)
    assert [("id" in e) for e in ledger_of(tmp_path)] == [False, False]
    other = batch_server.add_batch("anthropic", 1)
    with pytest.raises(batches.BatchRefusal, match="another stopped create's") as refused:
        await judge_all(make_panel([spec]), ["ZZYES a", "no b"], tmp_path)
    assert other in str(refused.value)
    assert batch_server.creates == 0
    assert [("id" in e) for e in ledger_of(tmp_path)] == [False, False]


async def test_a_file_gone_before_the_create_is_uploaded_again(
    batch_server, make_panel, monkeypatch, tmp_path, capsys
):
    """The provider lost the uploaded file before the create (expired, deleted): the create's
    404 is confirmed by retrieving the file, the spool goes up again under the same name,
    once, and the batch is created from it."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.drop_inputs = 1
    panel = make_panel([batch_judge(batch_server.url + "/v1")])
    found = await judge_all(panel, ["ZZYES here it is", "no, I will not"], tmp_path)
    assert [f.verdict for f in found] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    assert [(r.method, r.path) for r in batch_server.log][:6] == [
        ("POST", "/v1/files"),
        ("POST", "/v1/batches"),
        ("GET", "/v1/files/file-in-1"),
        ("GET", "/v1/files"),
        ("POST", "/v1/files"),
        ("POST", "/v1/batches"),
    ]
    assert batch_server.log[3].query == "purpose=batch&limit=1000&order=desc"
    assert (batch_server.uploads, batch_server.creates) == (2, 1)
    [entry] = ledger_of(tmp_path)
    assert (entry["input_file_id"], entry["id"]) == ("file-in-2", "batch_1")
    name = f'filename="redjury-{entry["token"]}.jsonl"'.encode()
    assert name in batch_server.log[0].body and name in batch_server.log[4].body
    assert batch_server.log[5].json["input_file_id"] == "file-in-2"
    err = capsys.readouterr().err
    assert f"file file-in-1 of intent {entry['token']} is gone at" in err
    assert list((tmp_path / "judge_batches").iterdir()) == []
    assert_no_key(batch_server, tmp_path, err)


async def test_a_create_refused_with_the_file_there_uploads_nothing(
    batch_server, make_panel, monkeypatch, tmp_path
):
    """A 400 or 404 from the create is a gone file only when the file is gone: with the file
    there the requests abstain with the create's own cause and nothing goes up again."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.fail_creates, batch_server.fail_status = 1, 400
    found = await judge_all(make_panel([batch_judge(batch_server.url + "/v1")]), ["a"], tmp_path)
    [why] = found[0].details["abstained"].values()
    assert why.startswith("HTTP 400 from") and why.endswith(": refused")
    assert [(r.method, r.path) for r in batch_server.log][1:] == [
        ("POST", "/v1/batches"),
        ("GET", "/v1/files/file-in-1"),
    ]
    assert batch_server.uploads == 1


def test_the_openai_sdk_reads_the_scripted_files(batch_server):
    """The scripted Files API reads as the official client expects: listed newest first and
    paged with `after`, filtered by purpose; an unknown file, or a create naming one, is a
    NotFoundError."""
    import io

    import openai

    client = openai.OpenAI(base_url=batch_server.url + "/v1", api_key="k", max_retries=0)
    made = [
        client.files.create(file=(f"r{n}.jsonl", io.BytesIO(b"{}\n" * n)), purpose="batch").id
        for n in (1, 2, 3)
    ]
    batch_server.add_file("notes.txt", b"x", purpose="user_data")
    first = client.files.list(purpose="batch", limit=2)
    assert [f.id for f in first.data] == made[::-1][:2] and first.has_more
    listed = list(client.files.list(purpose="batch", limit=2))
    assert [(f.id, f.filename, f.bytes) for f in listed] == [
        (made[n - 1], f"r{n}.jsonl", 3 * n) for n in (3, 2, 1)
    ]
    assert all(isinstance(f.created_at, int) and f.purpose == "batch" for f in listed)
    assert client.files.delete(made[0]).deleted
    with pytest.raises(openai.NotFoundError, match=f"No such File object: {made[0]}"):
        client.files.retrieve(made[0])
    with pytest.raises(openai.NotFoundError, match=f"No such File object: {made[0]}"):
        client.batches.create(
            input_file_id=made[0], endpoint="/v1/chat/completions", completion_window="24h"
        )
    assert batch_server.creates == 0


@pytest.mark.parametrize("spool_kept", [True, False])
async def test_a_failed_upload_leaves_its_intent(
    batch_server, make_panel, monkeypatch, tmp_path, spool_kept
):
    """The intent is recorded before the upload: an upload that failed leaves it, and the
    same requests asked again look for its file by name (none), then upload the kept spool,
    once; without the spool (and no such file, so no batch) they go to a new intent."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.fail_uploads = 1
    found = await judge_all(make_panel([batch_judge(batch_server.url + "/v1")]), ["a"], tmp_path)
    assert found[0].verdict is Verdict.INCONCLUSIVE
    [intent] = ledger_of(tmp_path)
    assert "input_file_id" not in intent and "id" not in intent
    if not spool_kept:
        (tmp_path / "judge_batches" / intent["spool"]).unlink()
    found = await judge_all(make_panel([batch_judge(batch_server.url + "/v1")]), ["a"], tmp_path)
    assert found[0].verdict is Verdict.HELD
    assert (batch_server.uploads, batch_server.creates) == (1, 1)
    listings = [r for r in batch_server.requests("GET", "/v1/files") if r.path == "/v1/files"]
    assert len(listings) == 1
    entries = ledger_of(tmp_path)
    if spool_kept:
        [entry] = entries
        assert entry["token"] == intent["token"] and entry["id"] == "batch_1"
    else:
        old, new = entries
        assert "abandoned_at" in old and new["id"] == "batch_1" and new["token"] != old["token"]


async def test_azure_finds_and_probes_files_with_its_api_version(
    batch_server, make_panel, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    batch_server.drop_inputs = 1
    spec = batch_judge(
        batch_server.url, type="AZURE_OPENAI", deployment="judge-batch", api_version="2025-03-01"
    )
    found = await judge_all(make_panel([spec]), ["ZZYES ok"], tmp_path)
    assert found[0].verdict is Verdict.BROKE_THROUGH
    assert [(r.method, r.path, r.query) for r in batch_server.log[2:4]] == [
        ("GET", "/openai/files/file-in-1", "api-version=2025-03-01"),
        ("GET", "/openai/files", "api-version=2025-03-01&purpose=batch&limit=1000&order=desc"),
    ]
    assert (batch_server.uploads, batch_server.creates) == (2, 1)
