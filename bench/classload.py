"""A class on its own model (issue 38): ``python bench/classload.py`` (about 3 minutes).

For each setup (moons, the digits MLP, the digits CNN, a ~100k-parameter MLP) a fresh server
(``python -m app.cli``, one process, SQLite, bench/server.py's settings) on a free loopback port:

1. ``/healthz`` alone, probed every 20 ms: its idle p99;
2. one student alone: each line's answer on the wire (gzip, ``Content-Length``) and the app's own
   time (``Server-Timing``, the median of ``--lines`` loops), as the page asks (``?held=``), and
   the whole Session's size for comparison;
3. the class: the setup created once before (by the instructor); ``--students`` students
   (300), each with its keep-alive connection, create it at once; once all are answered, each
   clicks Next line within 200 ms (the first clicks), then once a second at its own phase for
   ``--seconds`` (20), as the page clicks (``?since=&held=&moment=``), latency from when each
   click was due (the later clicks from the third second on); ``/healthz`` probed every 20 ms
   beside them.

Prints one table of the rows and one of the issue's targets, ratios measured in this run.
Nothing is asserted: the numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classroom import Client, close  # noqa: E402
from bench.server import pct, server  # noqa: E402
from support.digits import CNN, DIGITS, MLP  # noqa: E402
from support.table import markdown  # noqa: E402

WIDE: list[dict[str, Any]] = [  # 64-480-128-10: 94,058 parameters, under the default cap of 100,000
    {"type": "Linear", "out_features": 480},
    {"type": "ReLU"},
    {"type": "Linear", "out_features": 128},
    {"type": "ReLU"},
    {"type": "Linear", "out_features": 10},
]


def digits(model: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": model, "data": DIGITS, "standardize": True, "batch_size": 64, "lr": 0.1}


SETUPS: dict[str, dict[str, Any]] = {
    "moons (2-16-16-2)": {"scenario": "moons"},
    "digits MLP (64-128-64-10)": digits(MLP),
    "digits CNN": digits(CNN),
    "MLP 64-480-128-10 (94k)": digits(WIDE),
}
LINES = ("forward", "loss", "zero_grad", "backward", "step")
SETTLE = 3.0  # seconds after the creations before the clicks count as the later ones


class Student(Client):
    """A student's browser as the page talks: it says what it holds, and the moment it makes."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.held = "none"
        self.moment: int | None = None
        self.size = 0  # the last answer's bytes on the wire
        self.ran = ""  # the line the last answer ran

    async def create(self, body: dict[str, Any]) -> bool:
        status, data, _ = await self.call("POST", "/api/sessions", body)
        if status != 201:
            return False
        created = json.loads(data)
        self.sid, self.since, self.held, self.moment = created["id"], created["losses"], "start", 0
        return True

    async def line(self, name: str = "next") -> int:
        query = f"since={self.since}&held={self.held}"
        if self.moment is not None:
            query += f"&moment={self.moment + 1}"
        try:
            async with self.http.post(f"/api/sessions/{self.sid}/{name}?{query}") as r:
                body = await r.read()
                status, self.size = r.status, int(r.headers.get("Content-Length", len(body)))
                timing = r.headers.get("Server-Timing", "")
        except (OSError, TimeoutError):
            return 0
        self.took = float(timing.partition("app;dur=")[2] or 0) / 1e3
        if status == 200:
            data = json.loads(body)
            self.since, self.held, self.moment = data["losses"], data["version"], data["moment"]
            self.ran = data["last"]["line"] if data.get("last") else ""
        return status


async def probe(
    client: Client, stop: asyncio.Event, every: float = 0.02
) -> list[tuple[float, float]]:
    """``/healthz`` every ``every`` seconds until ``stop``: when each was sent, its latency."""
    times: list[tuple[float, float]] = []
    while not stop.is_set():
        sent = time.perf_counter()
        _, _, took = await client.call("GET", "/healthz")
        times.append((sent, took))
        await asyncio.sleep(every)
    return times


async def idle_health(url: str, seconds: float = 4.0) -> list[float]:
    client = Client(url)
    stop = asyncio.Event()
    task = asyncio.create_task(probe(client, stop))
    await asyncio.sleep(seconds)
    stop.set()
    times = await task
    await client.close()
    return [took for _, took in times]


async def alone(url: str, body: dict[str, Any], loops: int) -> dict[str, Any]:
    """One student: each line's wire size and median app time, and the whole Session's size."""
    student = Student(url)
    assert await student.create(body)
    took: dict[str, list[float]] = {line: [] for line in LINES}
    sizes: dict[str, int] = {}
    for _ in range(loops):
        for line in LINES:
            assert await student.line(line) == 200
            took[line].append(student.took)
            sizes[line] = student.size
    async with student.http.get(f"/api/sessions/{student.sid}") as r:
        await r.read()
        whole = int(r.headers["Content-Length"])
    await student.close()
    return {
        "sizes": sizes,
        "took": {line: statistics.median(v) for line, v in took.items()},
        "whole": whole,
    }


async def a_class(url: str, body: dict[str, Any], n: int, seconds: float) -> dict[str, Any]:
    """The class creates at once, clicks within 200 ms, then once a second; /healthz beside."""
    students = [Student(url) for _ in range(n)]
    for k in range(0, n, 50):  # each with its connection open first, 50 at a time
        await asyncio.gather(*(s.call("GET", "/healthz") for s in students[k : k + 50]))
    prober, stop = Client(url), asyncio.Event()
    await prober.call("GET", "/healthz")
    # the instructor made the setup before the class (its model checked and built once, as
    # bench/first_click.py does): the class's sessions start as their logs alone
    assert (await prober.call("POST", "/api/sessions", body))[0] == 201
    health = asyncio.create_task(probe(prober, stop))
    rng = random.Random(0)
    first: list[float] = []
    later: list[float] = []
    took: list[float] = []
    first_took: list[float] = []
    by_line: dict[str, list[float]] = {}
    created = await asyncio.gather(*(s.create(body) for s in students))  # all at once
    created_took = [s.took for s in students]
    errors = created.count(False)
    start = time.perf_counter()  # the creations answered: the class's pages are loaded

    async def one(student: Student, pause: float, phase: float) -> None:
        """Its first click within 200 ms of the load, then once a second at its own phase; the
        clicks of the first ``SETTLE`` seconds are neither first nor later."""
        nonlocal errors
        due = start + pause
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        errors += await student.line() != 200
        first.append(time.perf_counter() - due)
        first_took.append(student.took)
        due = start + 1.0 + phase
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            errors += await student.line() != 200
            if due >= start + SETTLE:
                later.append(time.perf_counter() - due)
                took.append(student.took)
                by_line.setdefault(student.ran, []).append(student.took)
            due += 1.0

    await asyncio.gather(*(one(s, rng.random() * 0.2, rng.random()) for s in students if s.sid))
    stop.set()
    beside = [took for sent, took in await health if sent >= start + SETTLE]
    await asyncio.gather(*(s.call("DELETE", f"/api/sessions/{s.sid}") for s in students if s.sid))
    await close([*students, prober])
    return {
        "first": first,
        "later": later,
        "own": took,
        "first_own": first_took,
        "created_own": created_took,
        "class_took": {line: statistics.median(v) for line, v in by_line.items()},
        "beside": beside,
        "errors": errors,
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def kb(size: int) -> str:
    return f"{size / 1000:.1f}"


async def measure(url: str, body: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    idle = await idle_health(url)
    one = await alone(url, body, args.lines)
    class_ = await a_class(url, body, args.students, args.seconds)
    return {"idle": idle, **one, **class_}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300, help="the class (300)")
    parser.add_argument("--seconds", type=float, default=20.0, help="clicking time (20)")
    parser.add_argument("--lines", type=int, default=30, help="one student's loops (30)")
    parser.add_argument("--quick", action="store_true", help="60 students, 4 s, 5 loops")
    args = parser.parse_args()
    if args.quick:
        args.students, args.seconds, args.lines = 60, 4.0, 5
    load_before = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    for name, body in SETUPS.items():
        with tempfile.TemporaryDirectory() as data, server(data) as (url, _):
            results[name] = asyncio.run(measure(url, body, args))
    load_after = os.getloadavg()
    head = (
        "setup",
        "click p50 / p99 (ms)",
        "first click p99 (ms)",
        "/healthz p99 beside / idle (ms)",
        "answer on the wire, gzip (KB): forward, loss, zero_grad, backward, step; whole",
        "app time per line, one student (ms): forward, loss, zero_grad, backward, step",
        "app time per line in the class (ms, median), the same lines",
        "errors",
    )
    rows = []
    for name, r in results.items():
        rows.append(
            (
                name,
                f"{ms(pct(r['later'], 0.5))} / {ms(pct(r['later'], 0.99))}",
                ms(pct(r["first"], 0.99)),
                f"{ms(pct(r['beside'], 0.99))} / {ms(pct(r['idle'], 0.99))}",
                ", ".join(kb(r["sizes"][line]) for line in LINES) + f"; {kb(r['whole'])}",
                ", ".join(f"{r['took'][line] * 1e3:.2f}" for line in LINES),
                ", ".join(f"{r['class_took'].get(line, 0.0) * 1e3:.2f}" for line in LINES),
                str(r["errors"]),
            )
        )
    print("\n" + markdown(head, rows))
    print("\n" + markdown(("target", "measured", "met"), targets(results)))
    print(
        f"\n{args.students} students, {args.seconds:.0f} s; {os.cpu_count()} cores, Python "
        f"{sys.version.split()[0]}; server: python -m app.cli (1 process, SQLite), a fresh one "
        f"per setup; clients: aiohttp in this process, loopback. Load average before "
        f"{load_before[0]:.1f}, after {load_after[0]:.1f}."
    )


def targets(results: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    names = list(results)
    moons, models = results[names[0]], [names[1], names[2]]
    base = pct(moons["later"], 0.99)
    rows: list[tuple[str, str, str]] = []
    for name in models:
        r = results[name]
        p99 = pct(r["later"], 0.99)
        rows.append(
            (
                f"{name}: click p99 ≤ 30 ms and ≤ 3 x moons' ({ms(base)} ms)",
                f"{ms(p99)} ms, {p99 / base:.2f} x",
                yes(p99 <= 0.030 and p99 <= 3 * base),
            )
        )
        beside, idle = pct(r["beside"], 0.99), pct(r["idle"], 0.99)
        rows.append(
            (
                f"{name}: /healthz p99 beside ≤ 2 x idle",
                f"{ms(beside)} ÷ {ms(idle)} = {beside / idle:.2f}",
                yes(beside <= 2 * idle),
            )
        )
        first = pct(r["first"], 0.99)
        rows.append(
            (
                f"{name}: first-click p99 ≤ 3 x later p99",
                f"{ms(first)} ÷ {ms(p99)} = {first / p99:.2f}",
                yes(first <= 3 * p99),
            )
        )
    mlp = results[names[1]]
    small = max(mlp["sizes"][line] for line in ("forward", "loss", "zero_grad"))
    big = max(mlp["sizes"][line] for line in ("backward", "step"))
    rows.append(
        ("MLP forward / loss / zero_grad ≤ 3 KB", f"{kb(small)} KB at most", yes(small <= 3000))
    )
    rows.append(("MLP backward / step ≤ 10 KB", f"{kb(big)} KB at most", yes(big <= 10_000)))
    moons_max = max(moons["sizes"].values())
    moons_mean = statistics.mean(moons["sizes"].values())
    rows.append(
        (
            "moons ≤ 2 KB a line",
            f"{kb(moons_max)} KB at most, {kb(int(moons_mean))} KB on average",
            yes(moons_max <= 2000),
        )
    )
    for where, key in (("one student alone", "took"), ("in the class", "class_took")):
        mine, theirs = mlp[key], moons[key]
        ratio = statistics.mean(mine.get(line, 0.0) for line in LINES) / statistics.mean(
            theirs.get(line, 0.0) for line in LINES
        )
        worst = max(mine.get(line, 0.0) / theirs.get(line, 1.0) for line in LINES)
        rows.append(
            (
                f"MLP app time per line ≤ 1.5 x moons' ({where})",
                f"{ratio:.2f} x on average over the loop, {worst:.2f} x at worst (one line)",
                yes(ratio <= 1.5),
            )
        )
    return rows


def yes(met: bool) -> str:
    return "yes" if met else "**no**"


if __name__ == "__main__":
    main()
