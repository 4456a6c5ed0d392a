"""Stop signals taken like Ctrl-C: SIGTERM and SIGHUP end a `redjury run` the way SIGINT does
(what was judged is kept, the exit status is 128 + the signal's number)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# What `docker stop`, Kubernetes, CI timeouts and Ray send (SIGTERM), and a closed terminal
# or ssh session (SIGHUP).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
EXIT_CTRL_C = 130


class _Hold:
    """Sections a stop signal waits for (`held`): how deep, and the signal that came."""

    depth = 0
    pending: int | None = None


class StopSignal(KeyboardInterrupt):
    """A stop signal, raised in the main thread where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code(interrupt: BaseException) -> int:
    """128 + the signal's number, as a shell reports a process the signal ended."""
    if isinstance(interrupt, StopSignal):
        return 128 + interrupt.signum
    return EXIT_CTRL_C


def cause(interrupt: BaseException) -> str:
    """`interrupted` for Ctrl-C, `stopped by SIGTERM` for a stop signal."""
    if isinstance(interrupt, StopSignal):
        return f"stopped by {signal.Signals(interrupt.signum).name}"
    return "interrupted"


@contextmanager
def held() -> Iterator[None]:
    """A stop signal that comes inside is raised at the end: rows written and counted
    together, so what the run says it kept is what the files hold."""
    _Hold.depth += 1
    try:
        yield
    finally:
        _Hold.depth -= 1
        if not _Hold.depth and _Hold.pending is not None:
            signum, _Hold.pending = _Hold.pending, None
            raise StopSignal(signum)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise `StopSignal` in the main thread. A signal the
    process ignores stays ignored (`nohup` keeps SIGHUP away), and so does a handler someone
    else installed; off the main thread nothing changes (Python delivers signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) == signal.SIG_DFL:
            installed[signum] = signal.signal(signum, _stop)
    try:
        yield
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous)


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once: a second stop signal while the run keeps what it judged is ignored, so that
    # cleanup is not torn (SIGKILL still ends the process at once).
    for other in STOP_SIGNALS:
        if signal.getsignal(other) is _stop:
            signal.signal(other, signal.SIG_IGN)
    if _Hold.depth:
        _Hold.pending = signum
        return
    raise StopSignal(signum)


@contextmanager
def handlers_kept() -> Iterator[None]:
    """Around a call that installs stop-signal handlers of its own (`ray.init` does): the
    handlers `stop_signals_interrupt` installed are put back after it."""
    main = threading.current_thread() is threading.main_thread()
    ours = [s for s in STOP_SIGNALS if main and signal.getsignal(s) is _stop]
    try:
        yield
    finally:
        for signum in ours:
            signal.signal(signum, _stop)
