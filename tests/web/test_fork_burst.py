"""A whole class presses "Try it yourself" at once: 300 forks of one lecture, on a real server.

Every fork is a 201 at the lecture's moment, exactly (the whole Session, every parameter and
.grad, as the instructor was answered at that moment), none waits in the instructor's queue
(its 429 is for one client flooding one session), the instructor's lines go on during the burst
with the right numbers, and each fork is its own: driving one changes neither the lecture nor
another fork. On SQLite and on PostgreSQL (the copy reads the stored log without the
instructor's lock: it must never see half of an action appended meanwhile).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections import Counter
from typing import Any

import httpx
import pytest

from app.settings import Settings
from support.serve import schema_url, serve

FORKS = 300
CLICKS = 12  # the instructor's lines during the burst
BEFORE = 37  # lines before it: mid-iteration, so the parameters have a .grad
SPREAD = 0.004  # seconds between two students' clicks on "Try it yourself" (300 in 1.2 s)


def without_id(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "id"}


async def burst(base: str, code: str, sid: str) -> tuple[list[httpx.Response], list[Any]]:
    """The forks all at once, and the instructor clicking Next line once the first fork is
    answered (one line at a time, as the page does, from a browser of its own); returns the
    forks' answers and the instructor's."""
    limits = httpx.Limits(max_connections=FORKS + 8, max_keepalive_connections=FORKS + 8)
    async with (
        httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as crowd,
        # a connection a click: a client slowed by the 300 others may read an answer after the
        # server's keep-alive (5 s) has closed the connection, which httpx does not retry
        httpx.AsyncClient(base_url=base, timeout=120, headers={"Connection": "close"}) as own,
    ):
        started = asyncio.Event()

        async def fork(i: int) -> httpx.Response:
            # a class within a second, not within a millisecond: a fork of a moment forked
            # before takes well under a millisecond, and the burst must overlap the clicks
            await asyncio.sleep(i * SPREAD)
            r = await crowd.post(f"/api/lectures/{code}/fork")
            started.set()
            return r

        async def instructor() -> list[dict[str, Any]]:
            answers = []
            await started.wait()
            for _ in range(CLICKS):
                r = await own.post(f"/api/sessions/{sid}/next")
                assert r.status_code == 200, r.text
                answers.append(r.json())
            return answers

        forks = asyncio.gather(*(fork(i) for i in range(FORKS)))
        answered, clicked = await asyncio.wait_for(asyncio.gather(forks, instructor()), 600)
        return answered, clicked


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_class_forks_one_lecture_at_once(kind: str, request: pytest.FixtureRequest) -> None:
    url = ""
    if kind == "postgres":
        url = schema_url(request.getfixturevalue("postgres_url"), f"forks_{os.getpid()}")
    settings = Settings(data=tempfile.mkdtemp(prefix="loop-stepper-forks-"), database_url=url)
    with serve(settings) as base, httpx.Client(base_url=base, timeout=30) as c:
        sid, twin = (c.post("/api/sessions", json={"scenario": "moons"}).json()["id"] for _ in "ab")
        code = c.post(f"/api/sessions/{sid}/lecture").json()["code"]
        for _ in range(BEFORE):
            start = c.post(f"/api/sessions/{sid}/next").json()
        assert any(p["grad"] is not None for p in start["params"])

        answered, clicked = asyncio.run(burst(base, code, sid))

        statuses = Counter(r.status_code for r in answered)
        assert statuses == {201: FORKS}, (
            statuses,
            [r.text for r in answered if r.status_code != 201][:2],
        )
        at = {BEFORE: start} | {a["moment"]: a for a in clicked}
        moments = Counter(r.json()["moment"] for r in answered)
        # the forks went on while the instructor clicked: some before, some after a click
        assert moments[BEFORE] and set(moments) - {BEFORE}, moments
        assert sorted(at) == list(range(BEFORE, BEFORE + CLICKS + 1))
        forks = [r.json() for r in answered]
        assert len({f["id"] for f in forks} | {sid, twin}) == FORKS + 2
        for mine in forks:  # each exactly as the lecture was at its moment
            lecture = at[mine["moment"]]
            assert mine["moments"] == mine["moment"]
            assert without_id(mine) == without_id(lecture)
        print(f"\n{kind}: forks by moment {sorted(moments.items())}")

        # the instructor's numbers are right: a twin session driven alike answers the same
        for _ in range(BEFORE):
            c.post(f"/api/sessions/{twin}/next")
        for answer in clicked:
            assert without_id(c.post(f"/api/sessions/{twin}/next").json()) == without_id(answer)

        # each fork is its own: driving one changes neither the lecture nor its siblings
        moment, count = moments.most_common(1)[0]
        assert count >= 2
        one, other = [f for f in forks if f["moment"] == moment][:2]
        for _ in range(3):
            driven = c.post(f"/api/sessions/{one['id']}/next").json()
        c.post(f"/api/sessions/{one['id']}/rewind", json={"to": moment - 5})
        c.patch(f"/api/sessions/{one['id']}", json={"lr": 0.5})
        driven = c.post(f"/api/sessions/{one['id']}/run", json={"iterations": 3}).json()
        assert driven["params"] != one["params"]
        assert c.get(f"/api/sessions/{other['id']}").json() == other
        assert without_id(c.get(f"/api/sessions/{sid}").json()) == without_id(clicked[-1])
        follower = c.get(f"/api/lectures/{code}").json()
        assert follower["moment"] == BEFORE + CLICKS and follower["params"] == clicked[-1]["params"]
        # and a fork's past is there to rewind into, as the lecture's was
        back = c.post(f"/api/sessions/{other['id']}/rewind", json={"to": BEFORE}).json()
        assert without_id(back) == without_id(start) | {"moments": other["moments"]}
