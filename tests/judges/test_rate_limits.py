"""A rate-limited endpoint: its concurrency is halved on 429s and raised again slowly, so a run
finishes with no abstention caused by 429s (the throughput is measured in benchmarks/)."""

from __future__ import annotations

import asyncio

from fault_server import Reply, Status, always, rate_limited
from judge_specs import judge

from redjury.attempts import Attempt
from redjury.judges.limits import AdaptiveLimit


async def test_a_rate_limited_run_lowers_concurrency_and_never_abstains(server, make_panel):
    server.set_script(rate_limited(40, then=Reply("no", delay=0.05)))
    panel = make_panel(
        [judge(server.openai_url)], use_cache=False, per_endpoint_concurrency=16, max_retries=2
    )
    attempts = [Attempt(id=str(i), goal=f"g{i}", outputs=[f"o{i}"]) for i in range(160)]
    findings = await asyncio.gather(*(panel.adetect(a) for a in attempts))
    await panel.aclose()
    abstained = [f for [f] in findings if f.details["abstained"]]
    assert abstained == []
    assert sum(1 for r in server.posts if r.n >= 0) > 160  # some were answered 429
    assert panel.engine.stats.rate_limited >= 1
    [(current, lowered)] = panel.engine.endpoint_limits().values()
    assert lowered >= 1
    assert panel.engine.stats.max_in_flight == 16  # it started at the configured ceiling


async def test_an_endpoint_that_only_answers_429_still_abstains(server, make_panel):
    server.set_script(always(Status(429)))
    panel = make_panel([judge(server.openai_url)], use_cache=False, per_endpoint_concurrency=8)
    [finding] = await panel.adetect(Attempt(id="1", goal="g", outputs=["o"]))
    await panel.aclose()
    assert finding.details["abstained"]["harmbench:judge-a"] == "HTTP 429 after 2 retries"
    # Each of its three 429s cut the limit: 8 × 0.7³ = 2.7.
    assert panel.engine.endpoint_limits()[server.openai_url] == (2, 3)


def test_limit_is_cut_once_per_round_and_grows_by_one_per_round():
    limit = AdaptiveLimit(16)
    epoch = limit.epoch
    assert limit.backoff(epoch) is True
    assert limit.current == 11  # 16 × 0.7
    # Requests sent before the cut answer 429 too: they say nothing new.
    assert limit.backoff(epoch) is False
    assert limit.current == 11
    for _ in range(12):
        limit.grow()
    assert limit.current == 12
    # Each cut in a new round counts, down to the floor of one request in flight.
    while limit.current > 1:
        assert limit.backoff(limit.epoch) is True
    assert limit.current == 1 and limit.lowest == 1


async def test_waiters_get_slots_as_the_limit_grows():
    limit = AdaptiveLimit(4)
    while limit.current > 1:
        limit.backoff(limit.epoch)
    await limit.acquire()
    waiter = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0)
    assert not waiter.done()
    limit.grow()  # 1 -> 2
    await asyncio.sleep(0)
    assert waiter.done() and limit.active == 2
    cancelled = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    limit.release()
    limit.release()
    assert limit.active == 0


async def test_cancelled_waiters_leave_cleanly_when_a_release_comes_first():
    """Ctrl-C cancels every waiting request while the ones in flight end: a release that
    runs before a cancelled waiter resumes must not make its cancellation fail."""
    limit = AdaptiveLimit(1)
    await limit.acquire()
    waiters = [asyncio.ensure_future(limit.acquire()) for _ in range(8)]
    await asyncio.sleep(0)
    for waiter in waiters:
        waiter.cancel()
    limit.release()  # before any cancelled waiter has run its except clause
    outcomes = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes), outcomes
    assert limit.active == 0 and not limit._waiters
    assert await limit.acquire() == limit.epoch and limit.active == 1
