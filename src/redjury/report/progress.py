"""Progress of a long run on stderr: a rich bar (count, total, rate, time left) in a terminal,
a plain line every few seconds in a log (CI), nothing for a run that ends within a second."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

# A run that ends sooner shows no bar; a log gets its first line after one interval.
BAR_AFTER_S = 1.0
# Seconds between plain lines; $REDJURY_PROGRESS_INTERVAL sets it, 0 turns the lines off.
PLAIN_INTERVAL_S = 10.0


def plain_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("REDJURY_PROGRESS_INTERVAL", PLAIN_INTERVAL_S)))
    except ValueError:
        return PLAIN_INTERVAL_S


class RunProgress:
    """`enabled`: True a bar, False nothing, None a bar in a terminal and plain lines in a
    log. `done`: attempts a resumed run already holds; `total`: attempts in all, if known."""

    def __init__(
        self,
        done: int,
        enabled: bool | None,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.clock = clock
        self.done, self.total = done, total
        self.started, self.start_done = clock(), done
        self.last_line = self.started
        self.interval = plain_interval()
        if enabled is None:
            enabled = True if self.stream.isatty() and not os.environ.get("CI") else None
        self.mode = {True: "bar", None: "plain", False: "off"}[enabled]
        self._bar: Any = None

    def advance(self, n: int) -> None:
        self.done += n
        if self.mode == "bar":
            self._advance_bar()
        elif self.mode == "plain" and self.interval:
            now = self.clock()
            if now - self.last_line >= self.interval:
                self.last_line = now
                print(f"redjury: {self.line(now)}", file=self.stream, flush=True)

    def line(self, now: float) -> str:
        """`judged 1,200 of 5,000 attempts (24%), 85/s, about 45 s left`."""
        rate = (self.done - self.start_done) / max(now - self.started, 1e-9)
        text = f"judged {self.done:,}"
        if self.total:
            text += f" of {self.total:,} attempts ({self.done / self.total:.0%})"
        else:
            text += " attempts"
        text += f", {rate:,.0f}/s"
        if self.total and rate > 0 and self.done < self.total:
            text += f", about {_duration((self.total - self.done) / rate)} left"
        return text

    def _advance_bar(self) -> None:
        if self._bar is None:
            if self.clock() - self.started < BAR_AFTER_S:
                return  # short runs never show a bar
            self._bar = _rich_bar(self.stream)
            self._task = self._bar.add_task("run", total=self.total, completed=self.done)
            self._bar.start()
        self._bar.update(self._task, completed=self.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _rich_bar(stream: TextIO) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class AttemptsPerSecond(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "")

    return Progress(
        SpinnerColumn(),
        TextColumn("judged"),
        MofNCompleteColumn(),
        BarColumn(),
        TaskProgressColumn(),
        AttemptsPerSecond(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=Console(file=stream),
        transient=True,
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
