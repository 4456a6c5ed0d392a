"""Concurrency: all judges of all attempts in flight together, capped globally and per endpoint."""

from __future__ import annotations

import asyncio

from fault_server import Reply, always
from judge_specs import judge

from redjury.attempts import Attempt


def attempts(n):
    return [Attempt(id=str(i), goal=f"g{i}", outputs=[f"o{i}"]) for i in range(n)]


async def run(panel, items):
    await asyncio.gather(*(panel.adetect(a) for a in items))
    await panel.aclose()


async def test_per_endpoint_limit_holds_at_the_server(server, make_panel):
    server.set_script(always(Reply("no", delay=0.05)))
    panel = make_panel(
        [judge(server.openai_url, "a"), judge(server.openai_url, "b")],
        per_endpoint_concurrency=5,
        use_cache=False,
    )
    await run(panel, attempts(40))
    assert server.count == 80
    assert server.max_in_flight == 5


async def test_global_limit_holds_across_endpoints(server, second_server, make_panel):
    for s in (server, second_server):
        s.set_script(always(Reply("no", delay=0.05)))
    panel = make_panel(
        [judge(server.openai_url, "a"), judge(second_server.openai_url, "b")],
        max_concurrency=6,
        per_endpoint_concurrency=16,
        use_cache=False,
    )
    await run(panel, attempts(30))
    assert panel.stats()["max_in_flight"] == 6
    assert server.max_in_flight + second_server.max_in_flight >= 6
    assert max(server.max_in_flight, second_server.max_in_flight) <= 6


async def test_all_attempts_are_judged_together_up_to_the_limit(server, make_panel):
    server.set_script(always(Reply("no", delay=0.2)))
    panel = make_panel(
        [judge(server.openai_url, "a")], per_endpoint_concurrency=16, use_cache=False
    )
    await run(panel, attempts(48))
    assert server.count == 48
    assert server.max_in_flight == 16
    # Not one wave of 16 and then the rest one by one: however slow the machine, a client
    # that keeps 16 in flight fills the server to 16 again at least once per 16 requests.
    arrivals = [r.in_flight for r in server.posts]
    assert arrivals.count(16) >= 3, arrivals


async def test_no_post_before_the_run_and_reachability_is_a_get(server, make_panel):
    panel = make_panel([judge(server.openai_url, "a"), judge(server.url, "o", type="OLLAMA")])
    assert server.requests == []
    status = await panel.check_servers()
    await panel.aclose()
    assert status == {server.openai_url: None, server.url: None}
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/v1/models"),
        ("GET", "/api/tags"),
    ]


async def test_an_unreachable_server_is_reported_by_the_check(make_panel):
    panel = make_panel([judge("http://127.0.0.1:9/v1", "a")])
    status = await panel.check_servers()
    await panel.aclose()
    assert status["http://127.0.0.1:9/v1"]


async def test_panel_survives_a_second_event_loop(server, make_panel):
    panel = make_panel([judge(server.openai_url, "a")], use_cache=False)
    await run(panel, attempts(3))

    def in_new_loop():
        return asyncio.run(run(panel, attempts(3)))

    await asyncio.to_thread(in_new_loop)
    assert server.count == 6


async def test_one_server_gets_the_whole_total_when_no_per_server_cap_is_set(server, make_panel):
    # max_concurrency alone: a single judge server sees that many in flight (not 32).
    server.set_script(always(Reply("no", delay=0.2)))
    panel = make_panel([judge(server.openai_url, "a")], max_concurrency=40, use_cache=False)
    assert panel.warnings == []
    await run(panel, attempts(80))
    assert server.max_in_flight == 40
