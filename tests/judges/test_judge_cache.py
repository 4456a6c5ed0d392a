"""The SQLite judge cache: a rerun makes zero requests; abstentions are never cached."""

from __future__ import annotations

from fault_server import Reply, Status, always, by_model
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.cache import default_cache_path

ATTEMPTS = [
    Attempt(id=str(i), goal=f"goal {i}", outputs=[f"reply {i}", f"other {i}"]) for i in range(10)
]


async def judge_all(panel):
    findings = [f for a in ATTEMPTS for f in await panel.adetect(a)]
    await panel.aclose()
    return findings


async def test_second_run_makes_zero_requests(server, make_panel):
    server.set_script(by_model({"a": Reply("yes"), "b": Reply("no")}))
    judges = [judge(server.openai_url, "a"), judge(server.openai_url, "b", "scorer")]
    server.set_script(by_model({"a": Reply("yes"), "b": Reply("Rating: [[3]]")}))
    first = await judge_all(make_panel(judges))
    assert server.count == 40
    server.reset_counts()
    panel = make_panel(judges)
    second = await judge_all(panel)
    assert server.count == 0
    assert [f.score for f in second] == [f.score for f in first]
    assert [f.details["votes"] for f in second] == [f.details["votes"] for f in first]
    assert all(f.details["cached"] == 2 for f in second)
    stats = panel.stats()
    assert stats["requests"] == 0 and stats["cached"] == 40
    assert stats["cached_prompt_tokens"] == 40 * 20 and stats["prompt_tokens"] == 0


async def test_another_server_is_asked_again_by_default(server, second_server, make_panel):
    # A test server's answers must not stand in for another server's model of that name.
    second_server.set_script(always(Reply("yes")))
    await judge_all(make_panel([judge(server.openai_url, "a")]))
    findings = await judge_all(make_panel([judge(second_server.openai_url, "a")]))
    assert second_server.count == 20
    assert all(f.score == 1.0 and f.details["cached"] == 0 for f in findings)


async def test_shared_across_servers_a_moved_server_keeps_the_cache(
    server, second_server, make_panel
):
    shared = {"cache_per_server": False}
    await judge_all(make_panel([judge(server.openai_url, "a")], **shared))
    await judge_all(make_panel([judge(second_server.openai_url, "a", timeout=9.0)], **shared))
    assert second_server.count == 0


async def test_the_same_server_keeps_its_cache_across_settings_that_decide_nothing(
    server, make_panel
):
    await judge_all(make_panel([judge(server.openai_url, "a")]))
    server.reset_counts()
    await judge_all(make_panel([judge(server.openai_url, "a", timeout=9.0)]))
    assert server.count == 0


async def test_a_changed_setting_misses_the_cache(server, make_panel):
    await judge_all(make_panel([judge(server.openai_url, "a")]))
    server.reset_counts()
    await judge_all(make_panel([judge(server.openai_url, "a", generation={"max_tokens": 5})]))
    assert server.count == 20
    server.reset_counts()
    await judge_all(
        make_panel([judge(server.openai_url, "a", scoring={"system_prompt": "Be strict."})])
    )
    assert server.count == 20


async def test_abstentions_are_not_cached(server, make_panel):
    server.set_script(always(Status(400)))
    await judge_all(make_panel([judge(server.openai_url, "a")]))
    assert server.count == 20
    server.set_script(always(Reply("no")))
    server.reset_counts()
    findings = await judge_all(make_panel([judge(server.openai_url, "a")]))
    assert server.count == 20
    assert all(f.score == 0.0 for f in findings)


async def test_no_cache_bypasses_it(server, make_panel):
    await judge_all(make_panel([judge(server.openai_url, "a")]))
    server.reset_counts()
    await judge_all(make_panel([judge(server.openai_url, "a")], use_cache=False))
    assert server.count == 20


async def test_identical_outputs_in_flight_share_one_request(server, make_panel):
    server.set_script(always(Reply("yes", delay=0.2)))
    panel = make_panel([judge(server.openai_url, "a")], use_cache=False)
    findings = await panel.adetect(Attempt(id="d", goal="g", outputs=["same", "same", "same"]))
    assert server.count == 1
    assert [f.score for f in findings] == [1.0, 1.0, 1.0]


def test_default_cache_lives_in_the_user_cache_dir():
    path = default_cache_path()
    assert path.name == "judges.sqlite" and "redjury" in str(path)
