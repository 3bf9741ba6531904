"""Single flight: while one request does the work kept under a key (checking a body, making a
setup's first session), the others with that key wait for it and then find its result kept,
instead of 300 students' creations each doing it at once. On the event loop only."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Flights:
    """The keys whose work is under way, each with the requests waiting for it."""

    def __init__(self) -> None:
        self._under_way: dict[str, asyncio.Event] = {}

    async def after(self, key: str) -> None:
        """Return at once, or once the work under way for ``key`` is done (or failed: the
        caller then finds nothing kept and does it itself)."""
        done = self._under_way.get(key)
        if done is not None:
            await done.wait()

    @contextlib.asynccontextmanager
    async def flight(self, key: str) -> AsyncIterator[None]:
        """The work for ``key``: those who ask ``after`` meanwhile wait for its end."""
        done = self._under_way.setdefault(key, asyncio.Event())
        try:
            yield
        finally:
            if self._under_way.get(key) is done:
                del self._under_way[key]
            done.set()
