"""A long day (issue 27 item 5): ``python bench/soak.py`` (defaults: 300 students, 30 minutes).

Starts the real server (bench/server.py's settings, one process, SQLite) with idle sessions
swept after ``--retain`` seconds, and plays a class on it: each student clicks about once a
second, mostly Next line, now and then a rewind, a step back, a new session of its own (its old
one left idle, to be swept) or a fork of the teacher's lecture; the teacher's session runs its
lines all along. Every ``--sample`` seconds: the server's resident memory, open files, threads,
the database's size on disk and its sessions. Prints one Markdown table (a row a sample) and a
verdict: after the warm-up (the first quarter), memory within +25 % and open files and threads
within a few of where they were, the database bounded (idle sessions swept), 0 errors.
``--lines`` ends the run after that many clicks (a compressed equivalent of a long day).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.classroom import Client, close, crowd  # noqa: E402
from bench.server import server  # noqa: E402
from support.process import rss_kib  # noqa: E402
from support.table import markdown  # noqa: E402

OK = {200, 201, 204}


@dataclass
class Sample:
    at: float  # seconds since the start
    rss_mib: float
    files: int
    threads: int
    db_mib: float
    sessions: int  # logs in the database
    clicks: int
    errors: int


def files_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def database(data: str) -> tuple[float, int]:
    """The SQLite files' size (MiB) and the logs in them, read without disturbing the server."""
    files = list(Path(data).glob("sessions.sqlite3*"))
    size = sum(f.stat().st_size for f in files) / 2**20
    try:
        with sqlite3.connect(f"file:{Path(data) / 'sessions.sqlite3'}?mode=ro", uri=True) as db:
            logs = int(db.execute("SELECT count(*) FROM logs").fetchone()[0])
    except sqlite3.Error:
        logs = -1
    return size, logs


class Class:
    """The students and the teacher, and what they have done."""

    def __init__(self, clients: list[Client], teacher: Client, code: str) -> None:
        self.clients, self.teacher, self.code = clients, teacher, code
        self.clicks = 0
        self.errors = 0
        self.created = len(clients) + 1  # sessions made: the class's, the teacher's, then more
        self.refusals: dict[str, int] = {}

    def count(self, what: str, status: int, allowed: set[int] = OK) -> None:
        self.clicks += 1
        if status not in allowed:
            self.errors += 1
            self.refusals[f"{what} {status}"] = self.refusals.get(f"{what} {status}", 0) + 1

    async def student(self, c: Client, rng: random.Random, until: float, lines: int) -> None:
        await asyncio.sleep(rng.random())
        while time.perf_counter() < until and self.clicks < lines:
            roll = rng.random()
            if roll < 0.80:
                status, body, _ = await c.call(
                    "POST", f"/api/sessions/{c.sid}/next?since={c.since}"
                )
                if status == 200:
                    c.since = json.loads(body)["losses"]
                self.count("next", status)
            elif roll < 0.88:
                status, _, _ = await c.call("POST", f"/api/sessions/{c.sid}/back")
                self.count("back", status, OK | {409})  # 409: at moment 0, nothing before
            elif roll < 0.93:
                status, _, _ = await c.call("POST", f"/api/sessions/{c.sid}/rewind", {"to": 0})
                self.count("rewind", status)
            elif roll < 0.97:
                status, body, _ = await c.call("POST", "/api/sessions", {"scenario": "moons"})
                self.count("create", status)
                if status == 201:  # the old session is left idle: the sweep's to delete
                    self.created += 1
                    data = json.loads(body)
                    c.sid, c.since = data["id"], data["losses"]
            else:
                status, body, _ = await c.call("POST", f"/api/lectures/{self.code}/fork")
                self.count("fork", status)
                if status == 201:
                    self.created += 1
                    data = json.loads(body)
                    c.sid, c.since = data["id"], data.get("losses", 0)
            await asyncio.sleep(0.5 + rng.random())

    async def teaching(self, until: float) -> None:
        while time.perf_counter() < until:
            status, _, _ = await self.teacher.call("POST", f"/api/sessions/{self.teacher.sid}/next")
            self.count("lecture next", status)
            await asyncio.sleep(2.0)


async def soak(
    url: str, pid: int, data: str, students: int, seconds: float, sample: float, lines: int
) -> tuple[list[Sample], Class]:
    teacher = Client(url)
    await teacher.new_session()
    status, body, _ = await teacher.call("POST", f"/api/sessions/{teacher.sid}/lecture")
    assert status == 201, (status, body)
    code = json.loads(body)["code"]
    clients = await crowd(url, students)
    for c in clients:
        await c.new_session()
    school = Class(clients, teacher, code)
    samples: list[Sample] = []
    start = time.perf_counter()
    until = start + seconds
    rng = random.Random(0)

    async def sampling() -> None:
        while True:
            size, logs = database(data)
            samples.append(
                Sample(
                    time.perf_counter() - start,
                    rss_kib(pid) / 1024,
                    files_of(pid),
                    threads_of(pid),
                    size,
                    logs,
                    school.clicks,
                    school.errors,
                )
            )
            if time.perf_counter() >= until or school.clicks >= lines:
                return
            await asyncio.sleep(min(sample, max(0.0, until - time.perf_counter())))

    await asyncio.gather(
        sampling(),
        school.teaching(until),
        *(school.student(c, random.Random(rng.random()), until, lines) for c in clients),
    )
    await close([*clients, teacher])
    return samples, school


@dataclass
class Verdict:
    rss_growth: float  # the last sample's memory over the first after warm-up
    files_growth: int
    threads_growth: int
    db_max_mib: float
    swept: bool  # the database held fewer sessions at some sample than were ever created
    errors: int

    @property
    def flat(self) -> bool:
        return (
            self.rss_growth <= 0.25
            and self.files_growth <= 20
            and self.threads_growth <= 4
            and self.errors == 0
        )


def verdict(samples: list[Sample], school: Class) -> Verdict:
    warm = samples[max(1, len(samples) // 4)]
    last = samples[-1]
    return Verdict(
        last.rss_mib / warm.rss_mib - 1,
        last.files - warm.files,
        last.threads - warm.threads,
        max(s.db_mib for s in samples),
        0 <= last.sessions < school.created,
        school.errors,
    )


def table(samples: list[Sample], v: Verdict) -> str:
    rows = [
        (
            f"{s.at:.0f}",
            f"{s.rss_mib:.0f}",
            str(s.files),
            str(s.threads),
            f"{s.db_mib:.1f}",
            str(s.sessions),
            str(s.clicks),
            str(s.errors),
        )
        for s in samples
    ]
    head = ("s", "RSS MiB", "open files", "threads", "db MiB", "db sessions", "clicks", "errors")
    text = markdown(head, rows)
    met = "yes" if v.flat else "**no**"
    return (
        f"{text}\n\nAfter warm-up: memory {v.rss_growth:+.0%}, open files {v.files_growth:+d}, "
        f"threads {v.threads_growth:+d}; database at most {v.db_max_mib:.1f} MiB, idle sessions "
        f"swept: {'yes' if v.swept else 'no'}; {v.errors} errors. Flat: {met}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--lines", type=int, default=10**9, help="stop after this many clicks")
    parser.add_argument("--sample", type=float, default=60, help="seconds between samples")
    parser.add_argument("--retain", type=float, default=120, help="seconds idle before a sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        extra = {
            "LOOP_STEPPER_RETAIN_DAYS": str(args.retain / 86400),
            "LOOP_STEPPER_SWEEP_INTERVAL": str(max(5.0, args.retain / 4)),
            "LOOP_STEPPER_IDLE_TIMEOUT": str(args.retain),
            "LOOP_STEPPER_EVICT_INTERVAL": "10",
        }
        with server(data, extra) as (url, pid):
            samples, school = asyncio.run(
                soak(url, pid, data, args.students, args.minutes * 60, args.sample, args.lines)
            )
    v = verdict(samples, school)
    print(table(samples, v))
    if school.refusals:
        print("\nrefused:", ", ".join(f"{k} x{n}" for k, n in sorted(school.refusals.items())))


if __name__ == "__main__":
    main()
