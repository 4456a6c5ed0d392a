"""An in-flight limit that adapts to rate limits: cut to 70% on a 429, raised by one per round
of successes (additive increase, multiplicative decrease), never above its ceiling."""

from __future__ import annotations

import asyncio
import time
from collections import deque

# The multiplicative decrease: CUBIC's 0.7 rather than TCP Reno's 0.5, so a limit that sits
# just above a rate limit loses less throughput each time it touches it.
DECREASE = 0.7


class AdaptiveLimit:
    """A semaphore whose size moves between 1 and `ceiling`.

    `acquire` returns the epoch (how many times the limit has been lowered); a 429 to a
    request sent before the latest lowering says nothing new, so it lowers nothing.
    """

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self._size = float(ceiling)
        # The whole-request part of `_size`, kept beside it: read on every acquire and wake.
        self.current = max(1, ceiling)
        self.active = 0
        self.epoch = 0
        self.lowered = 0
        self.lowest = ceiling
        # When a request last succeeded: a 429 while others succeed is rate limiting, not a
        # server that is down.
        self.last_success: float | None = None
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _resize(self, size: float) -> None:
        self._size = size
        self.current = max(1, int(size))

    async def acquire(self) -> int:
        if self.active < self.current and not self._waiters:
            self.active += 1
            return self.epoch
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                # Handed a slot just as it was cancelled: pass the slot on.
                self.release()
            elif waiter in self._waiters:
                # Not when a release ran first: `_wake` has dropped the cancelled waiter.
                self._waiters.remove(waiter)
            raise
        return self.epoch

    def release(self) -> None:
        self.active -= 1
        self._wake()

    def _wake(self) -> None:
        # A woken waiter's slot is counted here, so a burst of releases wakes no more than fit.
        waiters = self._waiters
        while waiters and self.active < self.current:
            waiter = waiters.popleft()
            if not waiter.done():
                self.active += 1
                waiter.set_result(None)

    def grow(self) -> None:
        """A success: +1 per `current` successes, up to the ceiling."""
        self.last_success = time.monotonic()
        if self._size < self.ceiling:
            self._resize(min(float(self.ceiling), self._size + 1.0 / self._size))
            self._wake()

    def succeeding(self, window: float) -> bool:
        """Whether a request succeeded within the last `window` seconds."""
        last = self.last_success
        return last is not None and time.monotonic() - last < window

    def backoff(self, epoch: int) -> bool:
        """A 429 to a request sent at `epoch`: cut the limit once per round; True if lowered."""
        if epoch != self.epoch:
            return False
        self._resize(max(1.0, self._size * DECREASE))
        self.epoch += 1
        self.lowered += 1
        self.lowest = min(self.lowest, self.current)
        return True
