"""The heavy-work pool on a real server: runs, forks and replays from the store share its
``heavy_workers`` slots (never more at once, counted here around the real ``Timeline.run``),
wait first come first served in a queue of ``heavy_queue``, and past it get a 503 with
``Retry-After``; a line of a session in memory never waits for any of it."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.log.timeline import Timeline
from app.main import create_app
from app.sessions.copies import Copies
from app.sessions.live import LiveSession, LiveSessions
from app.settings import Settings
from app.web.pool import HeavyPool
from support.serve import schema_url, serve_app


class Gauge:
    """How many ``Timeline.run`` calls are running right now, and the most ever at once."""

    def __init__(self) -> None:
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def around(self, real: Callable[..., None]) -> Callable[..., None]:
        def run(timeline: Timeline, iterations: int, *rest: Any) -> None:
            with self._lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            try:
                real(timeline, iterations, *rest)
            finally:
                with self._lock:
                    self.now -= 1

        return run


@pytest.fixture()
def gauge(monkeypatch: pytest.MonkeyPatch) -> Gauge:
    counted = Gauge()
    monkeypatch.setattr(Timeline, "run", counted.around(Timeline.run))
    return counted


# a connection a request: a wait longer than the server's keep-alive (5 s) must not leave a
# closed connection for the next request (httpx does not retry one)
CLOSE = {"Connection": "close"}


def server(workers: int, queue: int) -> FastAPI:
    data = tempfile.mkdtemp(prefix="loop-stepper-pool-")
    return create_app(Settings(data=data, heavy_workers=workers, heavy_queue=queue))


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def sessions(client: httpx.AsyncClient, n: int) -> list[str]:
    made = [await client.post("/api/sessions", json={"scenario": "moons"}) for _ in range(n)]
    return [r.json()["id"] for r in made]


def test_never_more_runs_at_once_than_workers(gauge: Gauge) -> None:
    app = server(workers=2, queue=100)

    async def six_runs(base: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=base, timeout=120, headers=CLOSE) as client:
            ids = await sessions(client, 6)
            runs = (client.post(f"/api/sessions/{i}/run", json={"iterations": 150}) for i in ids)
            return await asyncio.gather(*runs)

    with serve_app(app) as base:
        answers = asyncio.run(six_runs(base))
    assert [r.status_code for r in answers] == [200] * 6
    assert {r.json()["iteration"] for r in answers} == {150}
    assert gauge.peak == 2  # all six asked at once; two ran at a time
    assert (app.state.pool.running, app.state.pool.waiting) == (0, 0)


def test_past_its_queue_heavy_work_is_503_and_lines_go_on(gauge: Gauge) -> None:
    app = server(workers=1, queue=2)
    pool = app.state.pool

    async def scene(base: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=base, timeout=120, headers=CLOSE) as client:
            hog, second, third, late, student, twin = await sessions(client, 6)
            code = (await client.post(f"/api/sessions/{student}/lecture")).json()["code"]
            run = "/api/sessions/{}/run"
            first = asyncio.ensure_future(client.post(run.format(hog), json={"iterations": 1000}))
            await until(lambda: gauge.now == 1, "the hog's run")
            queued = [
                asyncio.ensure_future(client.post(run.format(sid), json={"iterations": 5}))
                for sid in (second, third)
            ]
            await until(lambda: pool.waiting == 2, "two runs in the queue")
            full = [
                await client.post(run.format(late), json={"iterations": 5}),
                await client.post(f"/api/lectures/{code}/fork"),
            ]
            app.state.sessions.forget(twin)  # out of memory: its next request replays it
            full.append(await client.get(f"/api/sessions/{twin}"))
            # a student's line on a session in memory waits for none of it
            line = await client.post(f"/api/sessions/{student}/next")
            still = gauge.now == 1 and not first.done()
            done = await asyncio.gather(first, *queued)
            replayed = await client.get(f"/api/sessions/{twin}")
            again = await client.post(f"/api/sessions/{twin}/next")
            return {"full": full, "line": line, "still": still, "done": done, "twin": again,
                    "replayed": replayed}  # fmt: skip

    with serve_app(app) as base:
        seen = asyncio.run(scene(base))
    for r in seen["full"]:
        assert r.status_code == 503, r.text
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert "overloaded" in r.json()["detail"]
    assert seen["line"].status_code == 200 and seen["still"]  # answered while the hog ran
    assert seen["line"].json()["moment"] == 1
    twin = seen["twin"].json()  # the same first line on an untouched twin: the same numbers
    assert seen["replayed"].status_code == 200 and twin["moment"] == 1
    assert {k: v for k, v in twin.items() if k != "id"} == {
        k: v for k, v in seen["line"].json().items() if k != "id"
    }
    assert [r.status_code for r in seen["done"]] == [200, 200, 200]
    assert [r.json()["iteration"] for r in seen["done"]] == [1000, 5, 5]
    assert gauge.peak == 1 and (pool.running, pool.waiting) == (0, 0)


def test_first_come_first_served_and_a_cancelled_wait_leaves_the_queue() -> None:
    async def scene() -> tuple[list[int], int, int]:
        pool = HeavyPool(workers=1, queue=5)
        order: list[int] = []
        gate = asyncio.Event()

        async def job(n: int) -> None:
            async with pool.slot():
                order.append(n)
                await gate.wait()

        first = asyncio.ensure_future(job(0))
        await until(lambda: pool.running == 1, "the first job")
        queued = [asyncio.ensure_future(job(n)) for n in range(1, 5)]
        await until(lambda: pool.waiting == 4, "four in the queue")
        queued[1].cancel()  # job 2 gives up while it waits
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, *queued, return_exceptions=True)
        return order, pool.running, pool.waiting

    order, running, waiting = asyncio.run(scene())
    assert order == [0, 1, 3, 4] and (running, waiting) == (0, 0)


def test_light_work_is_counted_until_its_answer_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A student's line is light work while it runs (a run's lines pause for it); a run, a
    wait in the pool's queue and an open event stream are not; nothing is left counted."""
    app = server(workers=1, queue=10)
    priority = app.state.pool.priority
    seen: dict[str, list[int]] = {"next": [], "run": []}
    real_next, real_run = Timeline.next, Timeline.run

    def next_line(timeline: Timeline) -> None:
        seen["next"].append(priority.light)
        real_next(timeline)

    def run(timeline: Timeline, iterations: int, *rest: Any) -> None:
        seen["run"].append(priority.light)
        real_run(timeline, iterations, *rest)

    monkeypatch.setattr(Timeline, "next", next_line)
    monkeypatch.setattr(Timeline, "run", run)

    async def scene(base: str) -> list[int]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            student, hog = await sessions(client, 2)
            await client.post(f"/api/sessions/{student}/next")
            await client.post(f"/api/sessions/{hog}/run", json={"iterations": 2})
            code = (await client.post(f"/api/sessions/{student}/lecture")).json()["code"]
            async with client.stream("GET", f"/api/lectures/{code}/events") as events:
                assert events.status_code == 200
                during = priority.light
            return [during, priority.light]

    with serve_app(app) as base:
        counts = asyncio.run(scene(base))
    assert seen["next"][0] == 1  # the student's own line, on the event loop
    assert seen["run"] == [0]  # in the pool: not light
    assert counts == [0, 0]


def test_keyed_work_is_hurried_to_the_front_and_its_end_awaited() -> None:
    """``hurry`` moves the work queued under a key to the front of the queue (the rest keep
    their order) and gives the event its end sets; running work's event too; no work under a
    key, None; a key whose work left the queue (cancelled) is forgotten."""

    async def scene() -> dict[str, Any]:
        pool = HeavyPool(workers=1, queue=10)
        order: list[str] = []
        gate = asyncio.Event()

        async def hog() -> None:
            async with pool.slot():
                order.append("hog")
                await gate.wait()

        first = asyncio.ensure_future(hog())
        await until(lambda: pool.running == 1, "the hog")
        jobs = {k: asyncio.ensure_future(pool.run(order.append, k, key=k)) for k in "abcde"}
        await until(lambda: pool.waiting == 5, "five keyed jobs queued")
        queued = pool.queued
        ended = pool.hurry("d")
        hurried = pool.queued
        jobs["b"].cancel()
        await asyncio.sleep(0)
        unknown = (pool.hurry("b"), pool.hurry("nothing"))
        gate.set()
        assert ended is not None
        await ended.wait()
        after_d = list(order)
        await asyncio.gather(first, *jobs.values(), return_exceptions=True)
        return {"queued": queued, "hurried": hurried, "unknown": unknown, "after_d": after_d,
                "order": order, "left": (pool.running, pool.waiting, pool.queued)}  # fmt: skip

    seen = asyncio.run(scene())
    assert seen["queued"] == list("abcde")
    assert seen["hurried"] == list("dabce")
    assert seen["unknown"] == (None, None)
    assert seen["after_d"] == ["hog", "d"]  # its end was awaited: nothing else ran before it
    assert seen["order"] == ["hog", "d", "a", "c", "e"]
    assert seen["left"] == (0, 0, [])


class Held:
    """The sessions in the order they entered memory, the number built when each line ran, and
    the first build held (in its worker, before it starts) until ``gate`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = threading.Event()
        self.holding = True  # False: no build is held
        self.built: list[str] = []
        self.by_line: list[int] = []
        real_warm, real_add, real_next = Copies.warm, LiveSessions.add, Timeline.next

        def warm(copies: Copies, session_id: str) -> None:
            if self.holding and not self.gate.is_set():  # it holds the worker: the rest queue
                assert self.gate.wait(30)
            real_warm(copies, session_id)

        def add(sessions: LiveSessions, session: LiveSession) -> None:
            self.built.append(session.id)
            real_add(sessions, session)

        def next_line(timeline: Timeline) -> None:
            self.by_line.append(len(self.built))
            real_next(timeline)

        monkeypatch.setattr(Copies, "warm", warm)
        monkeypatch.setattr(LiveSessions, "add", add)
        monkeypatch.setattr(Timeline, "next", next_line)


def test_a_first_click_builds_its_session_not_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27 item 2, a class of 60: 60 sessions of one setup created at once are their logs
    alone, their Labs built after their answers in the heavy-work pool, one at a time, in
    arrival order (the first held here, holding the one worker). The last student's click
    builds its own session on its own turn and withdraws its queued build: answered while the
    worker is still held, its line run with 2 sessions built (the first creation and its own),
    not 61; the others are built after, each once, in their order."""
    app = server(workers=1, queue=100)
    pool = app.state.pool
    held = Held(monkeypatch)

    async def scene(base: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            ids = await sessions(client, 61)  # the first made whole, 60 started
            await until(lambda: pool.waiting == 59, "59 builds queued behind the held one")
            queued = pool.queued
            answer = await client.post(f"/api/sessions/{ids[-1]}/next")
            during = (pool.running, pool.queued, held.gate.is_set())
            held.gate.set()
            await until(lambda: pool.running == pool.waiting == 0, "every build")
            return {"ids": ids, "queued": queued, "answer": answer, "during": during}

    with serve_app(app) as base:
        seen = asyncio.run(scene(base))
    ids, answer = seen["ids"], seen["answer"]
    assert seen["queued"] == ids[2:]  # ids[1]'s build holds the worker
    assert answer.status_code == 200, answer.text
    assert (answer.json()["id"], answer.json()["moment"]) == (ids[-1], 1)
    assert seen["during"] == (1, ids[2:-1], False)  # its own build withdrawn, the rest waiting
    assert held.by_line == [2]  # the line ran with two sessions built, its own second
    assert held.built == [ids[0], ids[-1], ids[1], *ids[2:-1]]  # each once, the rest in order
    assert len(app.state.sessions) == 61


def test_on_postgres_a_first_click_moves_its_build_ahead(
    monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    """The same class of 60 on PostgreSQL, where a read-back is several round trips and is
    never done on the event loop: the last student's click moves its own build to the front of
    the queue and waits for it alone: its line runs with 3 sessions built (the first creation,
    the held build, its own), not 61."""
    url = schema_url(postgres_url, f"first_click_{os.getpid()}")
    data = tempfile.mkdtemp(prefix="loop-stepper-pool-")
    app = create_app(Settings(data=data, database_url=url, heavy_workers=1, heavy_queue=100))
    pool = app.state.pool
    held = Held(monkeypatch)

    async def scene(base: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            ids = await sessions(client, 61)
            await until(lambda: pool.waiting == 59, "59 builds queued behind the held one")
            click = asyncio.ensure_future(client.post(f"/api/sessions/{ids[-1]}/next"))
            await until(lambda: pool.queued[:1] == ids[-1:], "its build moved ahead")
            hurried = pool.queued
            held.gate.set()
            answer = await click
            await until(lambda: pool.running == pool.waiting == 0, "every build")
            return {"ids": ids, "hurried": hurried, "answer": answer}

    with serve_app(app) as base:
        seen = asyncio.run(scene(base))
    ids, answer = seen["ids"], seen["answer"]
    assert seen["hurried"] == [ids[-1], *ids[2:-1]]
    assert answer.status_code == 200, answer.text
    assert (answer.json()["id"], answer.json()["moment"]) == (ids[-1], 1)
    assert held.by_line == [3]
    assert held.built == [ids[0], ids[1], ids[-1], *ids[2:-1]]


def test_a_forks_first_click_moves_its_replay_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class forking a lecture: each fork is replayed after its answer in the heavy-work
    pool, in arrival order (held here behind a started session's build). The last student's
    click moves its fork's replay to the front and waits for it alone: its line runs with its
    own fork built before any other."""
    app = server(workers=1, queue=100)
    pool = app.state.pool
    held = Held(monkeypatch)
    held.holding = False

    async def scene(base: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            (teacher,) = await sessions(client, 1)
            for _ in range(5):
                await client.post(f"/api/sessions/{teacher}/next")
            code = (await client.post(f"/api/sessions/{teacher}/lecture")).json()["code"]
            fork = f"/api/lectures/{code}/fork"
            first = (await client.post(fork)).json()["id"]  # the moment's base, replayed once
            await until(lambda: pool.running == pool.waiting == 0, "the first fork's replay")
            held.holding = True
            (started,) = await sessions(client, 1)  # its build holds the one worker
            forks = [(await client.post(fork)).json()["id"] for _ in range(20)]
            await until(lambda: pool.queued == forks, "20 replays queued behind the held one")
            click = asyncio.ensure_future(client.post(f"/api/sessions/{forks[-1]}/next"))
            await until(lambda: pool.queued[:1] == forks[-1:], "its replay moved ahead")
            hurried = pool.queued
            held.gate.set()
            answer = await click
            await until(lambda: pool.running == pool.waiting == 0, "every replay")
            return {"teacher": teacher, "first": first, "started": started, "forks": forks,
                    "hurried": hurried, "answer": answer}  # fmt: skip

    with serve_app(app) as base:
        seen = asyncio.run(scene(base))
    forks, answer = seen["forks"], seen["answer"]
    assert seen["hurried"] == [forks[-1], *forks[:-1]]
    assert answer.status_code == 200, answer.text
    assert (answer.json()["id"], answer.json()["moment"]) == (forks[-1], 6)
    # the teacher's five lines, then the fork's: with its own replay built right after the
    # held build, before the 19 forks queued ahead of it
    assert held.by_line == [1] * 5 + [4]
    built = [seen["teacher"], seen["first"], seen["started"], forks[-1], *forks[:-1]]
    assert held.built == built
