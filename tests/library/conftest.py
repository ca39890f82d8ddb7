"""What the library's tests share: a nursery for the servers a test starts (the loopback
endpoint on a real socket), cancelled when the test ends so that no server outlives it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio


@pytest.fixture
async def nursery() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as opened:
        yield opened
        opened.cancel_scope.cancel()


# the journal's stores, for the conformance suite (test_journal_conformance.py) and its neighbours
from tests.library.stores import database, databases, postgres_url  # noqa: E402, F401
