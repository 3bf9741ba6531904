"""Timeline and store benchmarks, one command: ``python bench/timeline.py`` (about a minute).

Starts the real server (``python -m app.cli``) on loopback with its store in a temporary folder
and measures, in one run, over bare keep-alive connections (bench/server.py's ``Connection``):

1. a rewind to a random moment of a 1000-line moons timeline against a moons line, p50;
2. a line against ``GET /healthz``, p50, with the store in a file and with ``:memory:``;
3. the first request to each of 20 sessions of 1000 lines after a restart on the same store, p99;
4. the store's bytes per 1000 moons lines (events and keyframes, read from the SQLite file).

Prints a table of ratios and targets. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import Connection, pct  # noqa: E402
from support.process import server_process  # noqa: E402
from support.table import markdown  # noqa: E402

NO_HISTORY = 2**53  # ?since past every point: both sides answer without the loss history


def long_sessions(url: str, count: int, iterations: int) -> list[str]:
    with httpx.Client(base_url=url, timeout=120) as client:
        ids = []
        for _ in range(count):
            sid = client.post("/api/sessions", json={"scenario": "moons"}).json()["id"]
            r = client.post(f"/api/sessions/{sid}/run", json={"iterations": iterations})
            r.raise_for_status()
            ids.append(sid)
        return ids


async def rewind_vs_line(url: str, sid: str, moments: int, rounds: int) -> dict[str, float]:
    with httpx.Client(base_url=url, timeout=30) as client:
        fresh = client.post("/api/sessions", json={"scenario": "moons"}).json()["id"]
    conn = await Connection.open(url)
    rng = random.Random(0)
    line: list[float] = []
    rewind: list[float] = []
    for i in range(rounds + 20):
        t0 = time.perf_counter()
        status, _ = await conn.request("POST", f"/api/sessions/{fresh}/next?since={NO_HISTORY}")
        t1 = time.perf_counter()
        assert status == 200
        to = rng.randint(0, moments)
        status, _ = await conn.post_json(
            f"/api/sessions/{sid}/rewind?since={NO_HISTORY}", f'{{"to": {to}}}'
        )
        t2 = time.perf_counter()
        assert status == 200
        if i >= 20:
            line.append(t1 - t0)
            rewind.append(t2 - t1)
    await conn.close()
    return {"line": pct(line, 0.5), "rewind": pct(rewind, 0.5), "rewind_p99": pct(rewind, 0.99)}


async def line_vs_health(url: str, rounds: int) -> dict[str, float]:
    with httpx.Client(base_url=url, timeout=30) as client:
        sid = client.post("/api/sessions", json={"scenario": "moons"}).json()["id"]
    conn = await Connection.open(url)
    health: list[float] = []
    line: list[float] = []
    for i in range(rounds + 50):
        t0 = time.perf_counter()
        assert (await conn.request("GET", "/healthz"))[0] == 200
        t1 = time.perf_counter()
        status, _ = await conn.request("POST", f"/api/sessions/{sid}/next?since={NO_HISTORY}")
        t2 = time.perf_counter()
        assert status == 200
        if i >= 50:
            health.append(t1 - t0)
            line.append(t2 - t1)
    await conn.close()
    return {"health": pct(health, 0.5), "line": pct(line, 0.5)}


async def first_requests(url: str, ids: list[str]) -> list[float]:
    conn = await Connection.open(url)
    times = []
    for sid in ids:
        t0 = time.perf_counter()
        status, _ = await conn.request("GET", f"/api/sessions/{sid}?since={NO_HISTORY}")
        times.append(time.perf_counter() - t0)
        assert status == 200
    await conn.close()
    return times


def store_bytes(data: Path, sid: str) -> int:
    with sqlite3.connect(data / "sessions.sqlite3") as db:
        row = db.execute(
            "SELECT (SELECT coalesce(sum(length(body)), 0) FROM events WHERE log = ?)"
            " + (SELECT coalesce(sum(length(state)), 0) FROM checkpoints WHERE log = ?)"
            " + (SELECT length(setup) FROM logs WHERE id = ?)",
            (sid, sid, sid),
        ).fetchone()
    return int(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sessions")
    args = parser.parse_args()
    rounds, restarts = (100, 5) if args.quick else (400, 20)
    rows: list[tuple[str, str, str, str, str]] = []

    def add(measure: str, measured: str, ratio: float, target: str, ok: bool) -> None:
        rows.append((measure, measured, f"{ratio:.2f}", target, "yes" if ok else "**no**"))

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        env = {"LOOP_STEPPER_DATA": str(data), "MALLOC_ARENA_MAX": "2"}
        with server_process(env) as (url, _):
            ids = long_sessions(url, restarts, 200)  # 200 iterations of 5 lines: 1000 moments
            r = asyncio.run(rewind_vs_line(url, ids[0], 1000, rounds))
            ratio = r["rewind"] / r["line"]
            add(
                "rewind to a random moment of a 1000-line moons timeline ÷ a moons line, p50",
                f"{r['rewind'] * 1e3:.2f} ms ÷ {r['line'] * 1e3:.2f} ms "
                f"(rewind p99 {r['rewind_p99'] * 1e3:.2f} ms)",
                ratio,
                "≤ 3",
                ratio <= 3,
            )
            lat = asyncio.run(line_vs_health(url, rounds))
            ratio = lat["line"] / lat["health"]
            add(
                "moons line ÷ `GET /healthz`, p50, store in a file (bare keep-alive connection)",
                f"{lat['line'] * 1e3:.2f} ms ÷ {lat['health'] * 1e3:.2f} ms",
                ratio,
                "≤ 1.5",
                ratio <= 1.5,
            )
            nbytes = store_bytes(data, ids[1])
        with server_process(env) as (url, _):
            times = asyncio.run(first_requests(url, ids))
            p99 = pct(times, 0.99)
            add(
                f"first request after a restart, {len(ids)} sessions of 1000 lines, p99",
                f"{p99 * 1e3:.1f} ms (p50 {pct(times, 0.5) * 1e3:.1f} ms)",
                p99 / 0.05,
                "≤ 50 ms",
                p99 <= 0.05,
            )
        add(
            "store bytes per 1000 moons lines (events, keyframes, setup)",
            f"{nbytes / 1024:.0f} KiB",
            nbytes / 1e6,
            "≤ 1 MB",
            nbytes <= 1e6,
        )
        with server_process({"LOOP_STEPPER_DATA": ":memory:"}) as (url, _):
            mem = asyncio.run(line_vs_health(url, rounds))
            ratio = mem["line"] / mem["health"]
            add(
                "moons line ÷ `GET /healthz`, p50, store `:memory:` (for comparison)",
                f"{mem['line'] * 1e3:.2f} ms ÷ {mem['health'] * 1e3:.2f} ms",
                ratio,
                "",
                True,
            )
    head = ("measure", "measured", "ratio", "target", "met")
    print("\n" + markdown(head, rows))
    print(f"\n{os.cpu_count()} cores, Python {sys.version.split()[0]}; loopback, one run.")


if __name__ == "__main__":
    main()
