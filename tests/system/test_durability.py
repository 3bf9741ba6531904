"""kill -9 under load, then a restart on the same store (SQLite's file, or PostgreSQL): no
acknowledged answer is lost.

A real server in its own process; students click (next, run, rewind, back) on their sessions
while it is killed at a random moment. Bounded: at most 400 requests a student, 20 s in all,
loopback only.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.program import CORRECT
from support.serve import schema_url
from support.oracle import Plain

from .process import server_process

STUDENTS = 8
SKIP = {"id", "moments"}


def same_moment(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k not in SKIP} == {
        k: v for k, v in b.items() if k not in SKIP
    }


async def student(
    client: httpx.AsyncClient, sid: str, rng: random.Random, acked: dict[str, Any]
) -> None:
    for _ in range(400):
        roll = rng.random()
        if roll < 0.6:
            request = client.post(f"/api/sessions/{sid}/next")
        elif roll < 0.7:
            request = client.post(f"/api/sessions/{sid}/run", json={"iterations": 1})
        elif roll < 0.85:
            moments = acked[sid]["moments"]
            request = client.post(
                f"/api/sessions/{sid}/rewind", json={"to": rng.randint(0, moments)}
            )
        else:
            request = client.post(f"/api/sessions/{sid}/back")
        try:
            r = await request
        except httpx.TransportError:
            return  # the server is gone: this request was never acknowledged
        if r.status_code == 200:
            acked[sid] = r.json()
        else:
            assert r.status_code in (409, 429), r.text


def store_env(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """The server's store: SQLite in ``tmp_path``, or a PostgreSQL schema of the test's own."""
    if kind == "sqlite":
        return {"LOOP_STEPPER_DATA": str(tmp_path)}
    url = schema_url(request.getfixturevalue("postgres_url"), f"d{os.getpid()}_{tmp_path.name}")
    return {"LOOP_STEPPER_DATA": str(tmp_path), "LOOP_STEPPER_DATABASE_URL": url}


@pytest.mark.parametrize(("kind", "seed"), [("sqlite", 1), ("sqlite", 2), ("postgres", 3)], ids=str)
def test_kill_9_under_load_loses_no_acknowledged_answer(
    tmp_path: Path, seed: int, kind: str, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(seed)
    env = store_env(kind, tmp_path, request)
    acked: dict[str, Any] = {}
    with server_process(env) as (url, pid):
        with httpx.Client(base_url=url, timeout=10) as c:
            graph = c.post("/api/sessions", json={"scenario": "moons"}).json()["id"]
            c.post(f"/api/sessions/{graph}/run", json={"iterations": 2})
            c.post(f"/api/sessions/{graph}/next")
            built = c.post(f"/api/sessions/{graph}/next").json()  # forward, loss
            assert built["graph"]["status"] == "built"
            for i in range(STUDENTS):
                s = c.post("/api/sessions", json={"scenario": ["neuron", "moons"][i % 2]}).json()
                acked[s["id"]] = s

        async def load() -> None:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                tasks = [
                    asyncio.create_task(student(client, sid, random.Random(seed * 100 + i), acked))
                    for i, sid in enumerate(list(acked))
                ]
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                for _ in range(200):  # a busy machine starts the load late: kill once it ran
                    if sum(s["moments"] for s in acked.values()) > 20:
                        break
                    await asyncio.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
                await asyncio.wait_for(asyncio.gather(*tasks), timeout=20)

        asyncio.run(load())
    assert sum(s["moments"] for s in acked.values()) > 20  # the load did run
    with server_process(env) as (url, _), httpx.Client(base_url=url, timeout=10) as c:
        for sid, last in acked.items():
            now = c.get(f"/api/sessions/{sid}").json()
            if now != last:  # the request in flight at the kill was saved but never answered:
                # the acknowledged moment is still there, exactly
                back = c.post(f"/api/sessions/{sid}/rewind", json={"to": last["moment"]}).json()
                assert same_moment(back, last), sid
        # the graph built before the kill backpropagates to plain PyTorch's numbers
        s = c.post(f"/api/sessions/{graph}/backward").json()
        plain = Plain("moons", 0.3, 0)
        for line in [*CORRECT, *CORRECT, "forward", "loss", "backward"]:
            plain.line(line)
        expected = [p.grad.tolist() for p in plain.model.parameters() if p.grad is not None]
        assert [p["grad"] for p in s["params"]] == expected


def test_a_restart_answers_quickly(tmp_path: Path) -> None:
    """A session of 1000 lines is read back from the store on its first request."""
    env = {"LOOP_STEPPER_DATA": str(tmp_path)}
    with server_process(env) as (url, _), httpx.Client(base_url=url, timeout=30) as c:
        sid = c.post("/api/sessions", json={"scenario": "moons"}).json()["id"]
        last = c.post(f"/api/sessions/{sid}/run", json={"iterations": 200}).json()
    with server_process(env) as (url, _), httpx.Client(base_url=url, timeout=30) as c:
        t0 = time.perf_counter()
        again = c.get(f"/api/sessions/{sid}").json()
        elapsed = time.perf_counter() - t0
        assert again == last and again["moments"] == 1000
        print(f"\nfirst request after a restart, 1000-line timeline: {elapsed * 1000:.1f} ms")


def test_a_restart_on_postgresql_finds_the_same_numbers(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The README's worked example over HTTP with the PostgreSQL store: one neuron iteration
    gives w, b = 1.175, 0.4; a new server process on the same database answers the same, and
    goes on from there; nothing was written to SQLite's folder."""
    env = store_env("postgres", tmp_path, request)
    with server_process(env) as (url, _), httpx.Client(base_url=url, timeout=30) as c:
        sid = c.post("/api/sessions", json={"scenario": "neuron"}).json()["id"]
        for _ in range(4):
            c.post(f"/api/sessions/{sid}/next")  # forward, loss, zero_grad, backward
        grads = [p["grad"] for p in c.get(f"/api/sessions/{sid}").json()["params"]]
        last = c.post(f"/api/sessions/{sid}/next").json()  # step
    assert grads == [[[-23.5]], [-8.0]]
    w, b = (p["value"] for p in last["params"])
    assert (w[0][0], b[0]) == pytest.approx((1.175, 0.4))
    assert last["moments"] == 5 and not any(tmp_path.iterdir())
    with server_process(env) as (url, _), httpx.Client(base_url=url, timeout=30) as c:
        again = c.get(f"/api/sessions/{sid}").json()
        assert again == last
        after = c.post(f"/api/sessions/{sid}/run", json={"iterations": 1}).json()
    alone = Plain("neuron", 0.05, 0)
    for line in [*CORRECT, *CORRECT]:
        alone.line(line)
    assert after["moments"] == 10
    assert [p["value"] for p in after["params"]] == [
        p.detach().tolist() for p in alone.model.parameters()
    ]


def test_a_lost_database_is_a_503_and_nothing_half_done(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL drops every connection (a restart, a failover) between two lines: the next
    line is a 503 with a message, never a 500, and is not acknowledged; the session then
    carries on from its log, so a retried backward gives the worked example's -23.5 / -8 once
    (not twice: the copy in memory that ran it is dropped, the log is replayed)."""
    import psycopg

    env = store_env("postgres", tmp_path, request)
    url = env["LOOP_STEPPER_DATABASE_URL"]
    with server_process(env) as (base, _), httpx.Client(base_url=base, timeout=30) as c:
        sid = c.post("/api/sessions", json={"scenario": "neuron"}).json()["id"]
        for line in ("forward", "loss", "zero_grad"):
            assert c.post(f"/api/sessions/{sid}/{line}").status_code == 200
        with psycopg.connect(url, autocommit=True) as db:  # every other connection: gone
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
        refused = 0
        for _ in range(10):  # the pool holds a few dead connections: each costs one 503
            r = c.post(f"/api/sessions/{sid}/backward")
            if r.status_code != 503:
                break
            assert r.json()["detail"].startswith("the database is unreachable"), r.text
            refused += 1
        assert refused >= 1 and r.status_code == 200, r.text
        s = r.json()
        assert [p["grad"] for p in s["params"]] == [[[-23.5]], [-8.0]]
        assert s["moment"] == 4 and s["last"]["line"] == "backward"
        step = c.post(f"/api/sessions/{sid}/step").json()
        plain = Plain("neuron", 0.05)  # the lesson's loop in plain PyTorch: the same numbers
        for line in ("forward", "loss", "zero_grad", "backward", "step"):
            plain.line(line)
        expected = [p.detach().tolist() for p in plain.model.parameters()]
        assert [p["value"] for p in step["params"]] == expected
