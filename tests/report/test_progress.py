"""Progress of long runs: a plain line every interval in a log (count, total, rate, time
left), a rich bar with the total in a terminal, nothing for a short run or when turned off."""

from __future__ import annotations

import io

from redjury.report.progress import RunProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_every_interval_with_total_rate_and_time_left(monkeypatch) -> None:
    monkeypatch.setenv("REDJURY_PROGRESS_INTERVAL", "10")
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(0, None, 1000, stream=out, clock=clock)
    clock.now += 5
    progress.advance(100)
    assert out.getvalue() == ""  # within the first interval: nothing yet
    clock.now += 5
    progress.advance(100)
    assert out.getvalue() == "redjury: judged 200 of 1,000 attempts (20%), 20/s, about 40 s left\n"
    clock.now += 3
    progress.advance(60)
    assert out.getvalue().count("\n") == 1  # the next line waits for the next interval


def test_plain_line_without_a_total_and_after_a_resume(monkeypatch) -> None:
    monkeypatch.setenv("REDJURY_PROGRESS_INTERVAL", "1")
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(500, None, None, stream=out, clock=clock)
    clock.now += 2
    progress.advance(300)
    assert out.getvalue() == "redjury: judged 800 attempts, 150/s\n"


def test_interval_zero_and_disabled_progress_print_nothing(monkeypatch) -> None:
    monkeypatch.setenv("REDJURY_PROGRESS_INTERVAL", "0")
    clock, out = Clock(), io.StringIO()
    quiet = RunProgress(0, None, 10, stream=out, clock=clock)
    off = RunProgress(0, False, 10, stream=out, clock=clock)
    clock.now += 60
    quiet.advance(5)
    off.advance(5)
    assert out.getvalue() == ""


def test_bar_shows_count_of_total_once_the_run_is_not_short() -> None:
    clock, out = Clock(), io.StringIO()
    progress = RunProgress(0, True, 200, stream=out, clock=clock)
    progress.advance(10)
    assert progress._bar is None  # under a second: no bar
    clock.now += 2
    progress.advance(40)
    bar = progress._bar
    assert bar is not None and bar.tasks[0].completed == 50 and bar.tasks[0].total == 200
    rendered = io.StringIO()
    from rich.console import Console

    Console(file=rendered, width=120).print(bar.make_tasks_table(bar.tasks))
    assert "50/200" in rendered.getvalue() and "25%" in rendered.getvalue()
    progress.close()
