"""The first click after a class loads (issue 27 item 2): ``python bench/first_click.py`` (~1 min).

Starts the real server (``python -m app.cli``, bench/server.py's settings) on a free loopback
port; ``--clients`` students (300), each with its keep-alive connection open, create a moons
session at once; from the moment the burst is answered each clicks Next line about once a
second at its own phase for ``--seconds``, latency from when each click was due (the issue's
measurement). A session of a setup created before is its log alone until its Lab is built in the
heavy-work pool after its answer (``warming``), so the first clicks are the ones that may wait
for those builds. Then a fresh class creates at once and each clicks the moment its own answer
is in, during the burst (what that costs, for context).

Prints the first clicks' p99 ÷ the later clicks' p99 (target ≤ 3), both as the client waited and
as the app's own time (``Server-Timing``), over ``--rounds`` rounds on the same server. Nothing
is asserted: the numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classroom import Client, close, crowd, line  # noqa: E402
from bench.server import pct, server  # noqa: E402
from support.table import markdown  # noqa: E402

Row = tuple[str, str, str, str]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


async def after_the_burst(
    clients: list[Client], seconds: float
) -> tuple[list[float], list[float], list[float], list[float], int]:
    """The issue's class: every client creates at once; from the moment the last answer is in,
    each clicks about once a second at its own phase (the first clicks land while the class's
    Labs are still being built). Latencies from when each click was due and the app's own
    times, first clicks and later ones apart, and the errors (creates and clicks)."""
    answers = await asyncio.gather(
        *(c.call("POST", "/api/sessions", {"scenario": "moons"}) for c in clients)
    )
    errors = 0
    for c, (status, body, _) in zip(clients, answers, strict=True):
        if status == 201:
            data = json.loads(body)
            c.sid, c.since = data["id"], data["losses"]
        else:
            errors += 1
    first: list[float] = []
    first_took: list[float] = []
    later: list[float] = []
    later_took: list[float] = []
    rng = random.Random(0)
    start = time.perf_counter()

    async def one(client: Client, phase: float) -> None:
        nonlocal errors
        due = start + phase
        waited, took = first, first_took
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            errors += await line(client) != 200
            waited.append(time.perf_counter() - due)
            took.append(client.took)
            waited, took = later, later_took
            due += 1.0

    await asyncio.gather(*(one(c, rng.random()) for c in clients if c.sid))
    return first, first_took, later, later_took, errors


async def on_answers(clients: list[Client]) -> tuple[list[float], list[float], int]:
    """Every client creates at once and clicks the moment its own answer is in (during the
    burst): the clicks' latencies, their app's own times, and the errors."""
    errors = 0
    waited: list[float] = []
    took: list[float] = []

    async def one(client: Client) -> None:
        nonlocal errors
        status, body, _ = await client.call("POST", "/api/sessions", {"scenario": "moons"})
        if status != 201:
            errors += 1
            return
        data = json.loads(body)
        client.sid, client.since = data["id"], data["losses"]
        t0 = time.perf_counter()
        errors += await line(client) != 200
        waited.append(time.perf_counter() - t0)
        took.append(client.took)

    await asyncio.gather(*(one(c) for c in clients))
    return waited, took, errors


def clicks(times: list[float], took: list[float]) -> str:
    return (
        f"p50 {ms(pct(times, 0.5))} ms, p99 {ms(pct(times, 0.99))} ms (the app's own p99 "
        f"{ms(pct(took, 0.99))} ms), {len(times)} clicks"
    )


async def round_of(url: str, n: int, seconds: float) -> tuple[Row, ...]:
    clients = await crowd(url, n)
    first, first_took, later, later_took, errors = await after_the_burst(clients, seconds)
    await asyncio.gather(*(c.call("DELETE", f"/api/sessions/{c.sid}") for c in clients if c.sid))
    await close(clients)
    await asyncio.sleep(1)  # the deletes and keyframes settle
    clients = await crowd(url, n)
    during, during_took, during_errors = await on_answers(clients)
    await asyncio.gather(*(c.call("DELETE", f"/api/sessions/{c.sid}") for c in clients if c.sid))
    await close(clients)
    ratio = pct(first, 0.99) / pct(later, 0.99)
    own = pct(first_took, 0.99) / pct(later_took, 0.99)
    return (
        (f"{n} create at once; then each its first click", clicks(first, first_took), "", ""),
        (
            f"then once a second, {seconds:.0f} s in all",
            f"{clicks(later, later_took)}; {errors} errors in both",
            "",
            "",
        ),
        (
            "first-click p99 ÷ later-click p99",
            f"{ratio:.2f} as waited; {own:.2f} the app's own time",
            "≤ 3",
            "yes" if ratio <= 3 and errors == 0 else "**no**",
        ),
        (
            f"{n} create at once, each clicking on its own answer",
            f"{clicks(during, during_took)}, {during_errors} errors (as waited: behind the "
            "burst of creations itself)",
            "",
            "",
        ),
    )


async def bench(url: str, n: int, seconds: float, rounds: int) -> list[Row]:
    rows: list[Row] = []
    warm = Client(url)
    await warm.new_session()  # the setup created once before: the class's sessions start
    await warm.close()
    for _ in range(rounds):
        rows += await round_of(url, n, seconds)
        await asyncio.sleep(1)  # the round's deletes and keyframes settle
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=300, help="the class's size (300)")
    parser.add_argument("--seconds", type=float, default=10.0, help="later clicks' time (10)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh classes in a row (3)")
    parser.add_argument("--quick", action="store_true", help="60 clients, 3 s, one round")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    args = parser.parse_args()
    n, seconds, rounds = (60, 3.0, 1) if args.quick else (args.clients, args.seconds, args.rounds)
    extra = dict(item.split("=", 1) for item in args.env)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as data, server(data, extra) as (url, _):
        rows = asyncio.run(bench(url, n, seconds, rounds))
    load_after = os.getloadavg()
    head = ("moment", "measured", "target", "met")
    print("\n" + markdown(head, rows))
    print(
        f"\n{os.cpu_count()} cores, Python {sys.version.split()[0]}; server: python -m app.cli "
        f"(1 process); clients: aiohttp in this process, loopback. Load average before "
        f"{load_before[0]:.1f}, after {load_after[0]:.1f}."
    )


if __name__ == "__main__":
    main()
