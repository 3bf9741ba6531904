"""A class presses "Try it yourself" at once: ``python bench/fork_burst.py [--forks 300]
[--lines 750]`` (loopback only, one run).

Starts the real server (``python -m app.cli``) in a subprocess with an empty store, drives a moons
lecture ``--lines`` lines in, opens ``--forks`` connections (one ``/healthz`` each), then sends
every fork at once while the instructor clicks Next line ten times from a browser of its own.
Prints the statuses, the forks' p50/p99/max, the instructor's lines during the burst, and the load
average (the machine may be shared). ``LOOP_STEPPER_*`` variables are passed to the server
(e.g. ``LOOP_STEPPER_HEAVY_WORKERS``). Nothing is asserted; ``bench/crowd.py`` has the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from support.process import cpu_seconds, server_process


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def burst(url: str, forks: int, lines: int, pid: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as own:
        sid = (await own.post("/api/sessions", json={"scenario": "moons"})).json()["id"]
        code = (await own.post(f"/api/sessions/{sid}/lecture")).json()["code"]
        for _ in range(lines):
            await own.post(f"/api/sessions/{sid}/next")
        limits = httpx.Limits(max_connections=forks + 8, max_keepalive_connections=forks + 8)
        async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as crowd:
            await asyncio.gather(*(crowd.get("/healthz") for _ in range(forks)))
            clicks: list[float] = []

            async def instructor() -> None:
                await asyncio.sleep(0.05)
                for _ in range(10):
                    t0 = time.perf_counter()
                    r = await own.post(f"/api/sessions/{sid}/next")
                    clicks.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text
                    await asyncio.sleep(0.1)

            async def fork() -> tuple[int, float]:
                t0 = time.perf_counter()
                r = await crowd.post(f"/api/lectures/{code}/fork")
                return r.status_code, time.perf_counter() - t0

            t0, cpu = time.perf_counter(), cpu_seconds(pid)
            answers, _ = await asyncio.gather(
                asyncio.gather(*(fork() for _ in range(forks))), instructor()
            )
            wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu
    took = [t for _, t in answers]
    statuses = dict(Counter(s for s, _ in answers))
    ms = {p: percentile(took, p) * 1000 for p in (50, 99, 100)}
    print(
        f"{forks} forks of a {lines}-line moons lecture: {statuses}, all in {wall:.2f} s; "
        f"p50 {ms[50]:.0f} ms, p99 {ms[99]:.0f} ms, max {ms[100]:.0f} ms"
    )
    print(f"server CPU during the burst: {cpu:.2f} s, {cpu / forks * 1000:.1f} ms a fork")
    print(
        f"the instructor's 10 lines meanwhile: p50 {percentile(clicks, 50) * 1000:.0f} ms, "
        f"max {max(clicks) * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forks", type=int, default=300)
    parser.add_argument("--lines", type=int, default=750)
    args = parser.parse_args()
    before = os.getloadavg()
    env = {k: v for k, v in os.environ.items() if k.startswith("LOOP_STEPPER_")}
    env.setdefault("LOOP_STEPPER_DATA", tempfile.mkdtemp(prefix="loop-stepper-bench-"))
    with server_process(env) as (url, pid):
        asyncio.run(burst(url, args.forks, args.lines, pid))
    print(f"load average before: {before[0]:.1f}, after: {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
