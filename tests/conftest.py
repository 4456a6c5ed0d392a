"""Root of the test folders: its presence puts tests/ on sys.path, so one test module can
import another's fixtures (`from test_pipeline import redaction_inputs`). The helpers live in
tests/support/redjury_testing.py; real third-party data comes only through
$REDJURY_TEST_DATA (see `redjury_testing.real_data`)."""

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def interruptible() -> Iterator[None]:
    """The child processes a test starts take SIGINT as Ctrl-C. A test run started as a
    script's background job ignores SIGINT, and exec keeps an ignored signal ignored in
    every child; a handled one is reset to the default there."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
