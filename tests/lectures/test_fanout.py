"""The lecture fan-out on the event loop (app/lectures/hub.py): the order things happen in, counted
in turns of the loop, not timed. The HTTP behaviour (events, Last-Event-ID, keep-alive, the
end) is tests/web/test_lectures.py."""

from __future__ import annotations

import asyncio
import time

from app.db import SqliteDatabase
from app.lectures.fanout import END, SLICE
from app.lectures.hub import LectureHub
from app.lectures.lecture import Lecture


def hub_on(loop: asyncio.AbstractEventLoop) -> tuple[LectureHub, Lecture]:
    hub = LectureHub(SqliteDatabase(":memory:"), keepalive=60)
    hub.loop = loop  # attach() would also read lectures back from the store: there are none
    return hub, Lecture("ABCDEFG", "session", 0, 0, time.time() + 60)


def test_followers_wake_after_the_answer_a_slice_per_turn() -> None:
    """``publish`` hands the event to the loop; on that turn the instructor's answer goes out
    and no follower is woken; then SLICE followers a turn, so a request arriving meanwhile
    (the next line) waits for a slice, not for the whole class."""

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        hub, lecture = hub_on(loop)
        waiters = [loop.create_future() for _ in range(2 * SLICE + 3)]
        lecture.waiters = list(waiters)
        loop.call_soon_threadsafe(hub.deliver, lecture, 1, b"id: 1\n\n")  # as publish does
        woken = []
        for _ in range(6):
            woken.append(sum(w.done() for w in waiters))
            await asyncio.sleep(0)  # one turn of the loop
        assert lecture.recent[-1] == (1, b"id: 1\n\n") and lecture.waiters == []
        return woken

    assert asyncio.run(main()) == [0, 0, SLICE, 2 * SLICE, 2 * SLICE + 3, 2 * SLICE + 3]


def test_a_follower_behind_gets_what_it_missed_in_one_write() -> None:
    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        hub, lecture = hub_on(loop)
        events = [(n, f"id: {n}\nevent: session\ndata: {{}}\n\n".encode()) for n in (1, 2, 3)]
        lecture.recent.extend(events)
        lecture.delivered = 3

        async def nothing() -> tuple[int, bytes]:
            raise AssertionError("a follower one event behind needs no whole Session")

        chunks: list[bytes] = []

        async def follower() -> None:
            async for chunk in hub.follow(lecture, 0, nothing):
                chunks.append(chunk)

        task = asyncio.create_task(follower())
        while not lecture.waiters:  # it has written what it missed, and waits
            await asyncio.sleep(0)
        assert lecture.followers == 1
        hub._end(lecture)  # the store has no such lecture: ending it is a no-op there
        await task
        assert lecture.followers == 0
        return chunks

    one = b"id: 1\nevent: session\ndata: {}\n\n"
    assert asyncio.run(main()) == [one + one.replace(b"1", b"2") + one.replace(b"1", b"3"), END]
