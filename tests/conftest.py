"""Fixtures shared by every test folder; the helpers live in tests/support/redjury_testing.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from redjury_testing import SHARED_DATA


@pytest.fixture
def shared_data() -> Path:
    return SHARED_DATA
