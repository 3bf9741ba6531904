"""Several processes behind nginx on PostgreSQL, one command: ``python bench/scale.py`` (about
two minutes, loopback only). Issue 12's targets, measured in one run:

1. lines per second through nginx with 2 app processes ÷ with 1 (same PostgreSQL, same load:
   ``--clients`` keep-alive connections, each clicking ``next`` on its own moons session back
   to back for ``--seconds``);
2. a moons line through nginx + PostgreSQL ÷ a moons line straight to one process on SQLite,
   p50 (one connection, one request at a time, interleaved so both see the same machine);
3. takeover: ``kill -9`` of one of two processes, then every session it held asked for at once
   through nginx; from the kill to each one's first answer (replayed from PostgreSQL on the
   other process), p99 over ``--kills`` kills (the process is restarted between them).

Starts Debian's PostgreSQL (``support/postgres.py``), the app processes (``python -m app.cli``)
and Debian's nginx running ``deploy/nginx.conf`` (``support/shards.py``). Prints a table of
ratios and targets; nothing is asserted. On this 2-core machine the load client, nginx and
PostgreSQL share the two cores with the app processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import Connection, pct  # noqa: E402
from support.postgres import postgres_server  # noqa: E402
from support.process import cpu_seconds, server_process  # noqa: E402
from support.shards import Cluster, cluster, start_app, wait_up  # noqa: E402


def new_database(url: str) -> str:
    name = f"scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


async def sessions(url: str, n: int) -> list[str]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        ids = []
        for _ in range(n):
            r = await c.post("/api/sessions", json={"scenario": "moons"})
            r.raise_for_status()
            ids.append(r.json()["id"])
            (await c.get(f"/api/sessions/{ids[-1]}")).raise_for_status()  # now on its process
        return ids


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU jiffies of the whole machine so far (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


async def throughput(shards: Cluster, clients: int, seconds: float) -> tuple[float, str, float]:
    """Lines per second: each client clicks ``next`` on its own session, back to back; and
    where the CPU went meanwhile (the app processes', the machine's)."""
    url = shards.url
    ids = await sessions(url, clients)
    done = 0
    stop = time.monotonic() + 1.0 + seconds  # one second of warm-up, not counted
    pids = [a.pid for a in shards.apps]

    async def sample() -> tuple[str, float]:
        await asyncio.sleep(1.0)
        apps0, (busy0, total0) = sum(cpu_seconds(p) for p in pids), machine_busy()
        await asyncio.sleep(seconds)
        apps1, (busy1, total1) = sum(cpu_seconds(p) for p in pids), machine_busy()
        cores = os.cpu_count() or 1
        text = (
            f"apps {(apps1 - apps0) / seconds:.2f} cores, "
            f"machine {(busy1 - busy0) / (total1 - total0) * cores:.2f} of {cores} busy"
        )
        return text, apps1 - apps0

    async def click(sid: str) -> None:
        nonlocal done
        conn = await Connection.open(url)
        since = 0
        try:
            while (now := time.monotonic()) < stop:
                path = f"/api/sessions/{sid}/next?since={since}"
                try:
                    status, body = await conn.request("POST", path)
                except (asyncio.IncompleteReadError, ConnectionError):
                    # nginx closes a client's keep-alive connection after its 1000th request
                    # (keepalive_requests), as browsers expect: open another, send it again
                    with contextlib.suppress(OSError):
                        await conn.close()
                    conn = await Connection.open(url)
                    status, body = await conn.request("POST", path)
                assert status == 200, body
                # the loss count without parsing 15 KB of JSON: the client shares the 2 cores
                at = body.rindex(b'"losses":') + 9
                since = int(body[at : body.index(b",", at)])
                if now > stop - seconds:
                    done += 1
        finally:
            await conn.close()

    sampled = asyncio.ensure_future(sample())
    await asyncio.gather(*(click(s) for s in ids))
    where, app_cpu = await sampled
    return done / seconds, where, app_cpu / done


async def line_p50(nginx: str, direct: str, rounds: int) -> tuple[float, float]:
    """One moons line through nginx (PostgreSQL) and one straight to SQLite, interleaved."""
    (a,) = await sessions(nginx, 1)
    (b,) = await sessions(direct, 1)
    ca, cb = await Connection.open(nginx), await Connection.open(direct)
    through, straight = [], []
    since_a = since_b = 0
    for i in range(rounds + 50):
        t0 = time.perf_counter()
        status, body = await ca.request("POST", f"/api/sessions/{a}/next?since={since_a}")
        t1 = time.perf_counter()
        assert status == 200, body
        since_a = json.loads(body)["losses"]
        t2 = time.perf_counter()
        status, body = await cb.request("POST", f"/api/sessions/{b}/next?since={since_b}")
        t3 = time.perf_counter()
        assert status == 200, body
        since_b = json.loads(body)["losses"]
        if i >= 50:
            through.append(t1 - t0)
            straight.append(t3 - t2)
    await ca.close()
    await cb.close()
    return statistics.median(through), statistics.median(straight)


def owner(c: httpx.Client, sid: str) -> str:
    return c.get(f"/api/sessions/{sid}").headers["x-served-by"]


async def first_answers(url: str, ids: list[str], killed_at: float) -> list[float]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:

        async def one(sid: str) -> float:
            r = await c.get(f"/api/sessions/{sid}")
            assert r.status_code == 200, r.text
            return time.perf_counter() - killed_at

        return list(await asyncio.gather(*(one(s) for s in ids)))


def takeover(shards: Cluster, env: dict[str, str], where: Path, kills: int, n: int) -> list[float]:
    """Seconds from ``kill -9`` to the first answer of each moved session, over ``kills``."""
    samples: list[float] = []
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        ids = asyncio.run(sessions(shards.url, n))
        for k in range(kills):
            victim = shards.apps[k % len(shards.apps)]
            held = {sid: owner(c, sid) for sid in ids}  # every session live on its process
            for sid in ids:  # with a graph built, a few lines in: a real replay
                c.post(f"/api/sessions/{sid}/next")
            moved = [sid for sid, name in held.items() if name == victim.name]
            killed_at = time.perf_counter()
            victim.kill()
            samples += asyncio.run(first_answers(shards.url, moved, killed_at))
            port = int(victim.url.rsplit(":", 1)[1])
            again = start_app(victim.name, env, where, port)
            wait_up(again)
            shards.apps[shards.apps.index(victim)] = again
            time.sleep(6)  # nginx's fail_timeout (5 s): the process is tried again
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=40)
    args = parser.parse_args()
    rows: list[tuple[str, str, float, str, bool]] = []
    with postgres_server() as pg:
        where = Path(tempfile.mkdtemp(prefix="loop-stepper-scale-"))
        env = {"LOOP_STEPPER_DATABASE_URL": new_database(pg), "LOOP_STEPPER_MAX_SESSIONS": "5000"}
        with cluster(["a"], env, where / "one") as one:
            one_rate, one_cpu, one_per = asyncio.run(throughput(one, args.clients, args.seconds))
            sqlite = {"LOOP_STEPPER_DATA": str(where / "sqlite")}
            with server_process(sqlite) as (direct, _):
                through, straight = asyncio.run(line_p50(one.url, direct, args.rounds))
        env = {**env, "LOOP_STEPPER_DATABASE_URL": new_database(pg)}
        with cluster(["a", "b"], env, where / "two") as two:
            two_rate, two_cpu, two_per = asyncio.run(throughput(two, args.clients, args.seconds))
            moved = takeover(two, env, where / "two", args.kills, args.sessions)
    ratio = two_rate / one_rate
    rows.append(
        (
            "moons lines/s through nginx, 2 processes ÷ 1",
            f"{two_rate:.0f} ÷ {one_rate:.0f} ({args.clients} clients back to back; "
            f"2: {two_cpu}; 1: {one_cpu})",
            ratio,
            "≥ 1.6",
            ratio >= 1.6,
        )
    )
    ratio = two_per / one_per
    rows.append(
        (
            "app CPU per line (same runs), 2 processes ÷ 1",
            f"{two_per * 1e3:.2f} ms ÷ {one_per * 1e3:.2f} ms",
            ratio,
            "(≈ 1: no cost to sharding)",
            ratio <= 1.1,
        )
    )
    ratio = through / straight
    rows.append(
        (
            "moons line p50: nginx + PostgreSQL ÷ direct + SQLite",
            f"{through * 1e3:.2f} ms ÷ {straight * 1e3:.2f} ms",
            ratio,
            "≤ 1.5",
            ratio <= 1.5,
        )
    )
    p99 = pct(moved, 0.99)
    rows.append(
        (
            "takeover: kill -9 → first answer of a moved session, p99",
            f"{p99 * 1e3:.0f} ms (p50 {pct(moved, 0.5) * 1e3:.0f} ms, {len(moved)} sessions, "
            f"{args.kills} kills)",
            p99,
            "≤ 1 s",
            p99 <= 1.0,
        )
    )
    print("\n| measure | measured | ratio | target | met |\n|---|---|---|---|---|")
    for name, measured, value, target, met in rows:
        print(f"| {name} | {measured} | {value:.2f} | {target} | {'yes' if met else '**no**'} |")


if __name__ == "__main__":
    main()
