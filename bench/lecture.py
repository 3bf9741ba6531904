"""Lecture benchmark, one command: ``python bench/lecture.py`` (about a minute, loopback only).

Starts the real server (``python -m app.cli``) in a subprocess; an instructor's session steps a
line every ``--interval`` seconds (as a clicking instructor does) over one keep-alive
connection, and N followers hold the lecture's Server-Sent Events open on raw asyncio
connections (httpx's pool is too slow past 100) in a process of their own, "the class": the
instructor's laptop does not read 300 students' streams (``--one-process`` puts them back in
the instructor's event loop, as this benchmark did at first). Measures:

1. the instructor's line latency, p50, with N followers ÷ the same lines without a lecture,
   paced like a clicking instructor and back to back (the worst case: each event's fan-out,
   about 50 µs a follower on the event loop, then lands on the next line);
2. from the instructor's answer arriving to the last follower receiving that line's event:
   p50, p99 (per line, the slowest follower);
3. server memory per follower: RSS with N followers connected minus before, ÷ N.

Prints a table of ratios and targets. Nothing is asserted: the numbers go in the README.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import sys
import time
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from server import Connection, pct  # noqa: E402

from support.process import rss_kib, server_process  # noqa: E402

EVENT_ID = re.compile(rb"id: (\d+)\n")


class Follower:
    """One follower's event stream: when each event id arrived."""

    def __init__(self) -> None:
        self.arrived: dict[int, float] = {}
        self.first = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def run(self, url: str, code: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        self.writer = writer
        writer.write(
            f"GET /api/lectures/{code}/events HTTP/1.1\r\nHost: bench\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        buffer = b""
        while True:
            data = await reader.read(65536)
            if not data:
                return
            now = time.perf_counter()
            buffer += data
            end = buffer.rfind(b"\n\n")
            if end < 0:
                continue
            for match in EVENT_ID.finditer(buffer, 0, end):
                self.arrived[int(match.group(1))] = now
            buffer = buffer[end + 2 :]
            self.first.set()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()


class Class:
    """N followers of one lecture, in this process's event loop."""

    def __init__(self, url: str) -> None:
        self.url, self.crowd = url, list[Follower]()

    async def join(self, code: str, n: int) -> None:
        self.crowd = [Follower() for _ in range(n)]
        for i, f in enumerate(self.crowd):
            f.task = asyncio.create_task(f.run(self.url, code))
            if i % 50 == 49:
                await asyncio.sleep(0.05)  # connect in waves, as a class does
        await asyncio.wait_for(asyncio.gather(*(f.first.wait() for f in self.crowd)), 60)

    async def arrived(self) -> list[dict[int, float]]:
        return [f.arrived for f in self.crowd]

    async def leave(self) -> None:
        for f in self.crowd:
            f.close()


def class_process(pipe: Pipe, url: str) -> None:
    """The class in a process of its own, driven over ``pipe``: (method, args) -> result.
    Arrival times are ``time.perf_counter()``: CLOCK_MONOTONIC, the same in every process."""

    async def serve() -> None:
        room = Class(url)
        while True:
            method, args = await asyncio.to_thread(pipe.recv)
            pipe.send(await getattr(room, method)(*args))
            if method == "leave":
                return

    asyncio.run(serve())


class Remote:
    """The Class's methods, run in the class's process."""

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe

    async def call(self, method: str, *args: Any) -> Any:
        self.pipe.send((method, args))
        return await asyncio.to_thread(self.pipe.recv)

    async def join(self, code: str, n: int) -> None:
        await self.call("join", code, n)

    async def arrived(self) -> list[dict[int, float]]:
        result: list[dict[int, float]] = await self.call("arrived")
        return result

    async def leave(self) -> None:
        await self.call("leave")


async def instructor_lines(
    conn: Connection, sid: str, lines: int, interval: float
) -> list[tuple[float, float]]:
    """``lines`` lines, one every ``interval`` s: (sent, answered) per line."""
    times = []
    for _ in range(lines):
        t0 = time.perf_counter()
        status, _ = await conn.request("POST", f"/api/sessions/{sid}/next?since=100000")
        t1 = time.perf_counter()
        assert status == 200, status
        times.append((t0, t1))
        await asyncio.sleep(max(0.0, interval - (t1 - t0)))
    return times


async def bench(
    url: str, pid: int, followers: int, lines: int, interval: float, room: Class | Remote
) -> dict[str, float]:
    conn = await Connection.open(url)
    conn.writer.write(
        b"POST /api/sessions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    head = await conn.reader.readuntil(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head.lower()).group(1))  # type: ignore[union-attr]
    sid = json.loads(await conn.reader.readexactly(length))["id"]

    await instructor_lines(conn, sid, 20, 0)  # warm-up
    alone = await instructor_lines(conn, sid, lines, interval)
    alone_fast = await instructor_lines(conn, sid, lines, 0)

    status, body = await conn.request("POST", f"/api/sessions/{sid}/lecture")
    assert status == 201, status
    code = json.loads(body)["code"]
    before = rss_kib(pid)
    await room.join(code, followers)
    await asyncio.sleep(1.0)
    after = rss_kib(pid)

    async def watched(pace: float) -> tuple[list[tuple[float, float]], list[float], int]:
        start = max((await room.arrived())[0])
        times = await instructor_lines(conn, sid, lines, pace)
        await asyncio.sleep(1.0)
        crowd = await room.arrived()
        delays, missing = [], 0
        for k, (_, answered) in enumerate(times, start=start + 1):
            got = [a for a in (f.get(k) for f in crowd) if a is not None]
            missing += followers - len(got)
            if got:
                delays.append(max(got) - answered)
        return times, delays, missing

    paced, delays, missing = await watched(interval)
    fast, fast_delays, fast_missing = await watched(0)
    await room.leave()
    await conn.close()

    def p50(times: list[tuple[float, float]]) -> float:
        return pct([b - a for a, b in times], 0.5)

    return {
        "alone_p50": p50(alone),
        "crowd_p50": p50(paced),
        "alone_fast_p50": p50(alone_fast),
        "crowd_fast_p50": p50(fast),
        "fan_p50": pct(delays, 0.5),
        "fan_p99": pct(delays, 0.99),
        "fast_fan_p99": pct(fast_delays, 0.99),
        "missing": missing + fast_missing,
        "kb_per_follower": (after - before) / followers,
    }


WHERE = {True: "in the instructor's process", False: "in a process of their own"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--followers", type=int, default=300)
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.25, help="s between lines")
    parser.add_argument(
        "--one-process", action="store_true", help="followers in the instructor's event loop"
    )
    args = parser.parse_args()
    env = {"LOOP_STEPPER_MAX_SESSIONS": "5000", "MALLOC_ARENA_MAX": "2"}
    with server_process(env) as (url, pid):
        if args.one_process:
            r = asyncio.run(bench(url, pid, args.followers, args.lines, args.interval, Class(url)))
        else:
            mine, theirs = multiprocessing.get_context("spawn").Pipe()
            room = multiprocessing.get_context("spawn").Process(
                target=class_process, args=(theirs, url), daemon=True
            )
            room.start()
            try:
                remote = Remote(mine)
                r = asyncio.run(bench(url, pid, args.followers, args.lines, args.interval, remote))
            finally:
                room.join(10)
    n = args.followers
    rows = [
        (
            f"instructor's line p50, {n} followers ÷ no lecture (a line every {args.interval} s)",
            f"{r['crowd_p50'] * 1e3:.2f} ms ÷ {r['alone_p50'] * 1e3:.2f} ms",
            r["crowd_p50"] / r["alone_p50"],
            "≤ 2",
        ),
        (
            f"instructor's line p50, {n} followers ÷ no lecture (lines back to back)",
            f"{r['crowd_fast_p50'] * 1e3:.2f} ms ÷ {r['alone_fast_p50'] * 1e3:.2f} ms",
            r["crowd_fast_p50"] / r["alone_fast_p50"],
            "(worst case)",
        ),
        (
            f"instructor's answer → last of {n} followers' event (a line every {args.interval} s)",
            f"p50 {r['fan_p50'] * 1e3:.1f} ms, p99 {r['fan_p99'] * 1e3:.1f} ms; back to back "
            f"p99 {r['fast_fan_p99'] * 1e3:.1f} ms; {r['missing']:.0f} events missing",
            r["fan_p99"] / 0.2,
            "p99 ≤ 200 ms, none missing",
        ),
        (
            "server memory per follower (RSS delta ÷ followers)",
            f"{r['kb_per_follower']:.1f} KB",
            r["kb_per_follower"] / 50,
            "≤ 50 KB",
        ),
    ]
    head = ("measure", "measured", "ratio", "target")
    print(f"\n| {' | '.join(head)} |")
    print(f"|{'|'.join('---' for _ in head)}|")
    for measure, measured, ratio, target in rows:
        print(f"| {measure} | {measured} | {ratio:.2f} | {target} |")
    print(
        f"\n{os.cpu_count()} cores, Python {sys.version.split()[0]}; server: python -m app.cli "
        f"(uvicorn, 1 process); {args.lines} lines, one every {args.interval} s; followers "
        f"{WHERE[args.one_process]}, loopback. Ratios are "
        "measured ÷ target (or ÷ the baseline)."
    )


if __name__ == "__main__":
    main()
