"""Server benchmarks, one command: ``python bench/server.py`` (about two minutes, loopback only).

Starts the real server (``python -m app.cli``: uvicorn, one process) in a subprocess and measures,
in one run, with an async httpx client:

1. a line request (moons, ``POST next?since=n``, asking like the page only for the loss points
   it lacks) against ``GET /healthz`` on the same server: p50, p99;
2. ``POST run`` for 150 moons iterations against the lesson's plain PyTorch loop (in this process,
   one torch thread, like the server), in interleaved pairs: the median of the pairs' ratios, by
   wall time and by CPU time;
3. memory per idle moons session: the server's RSS before and after creating N sessions;
4. a simulated classroom: N students, each with a moons session, clicking Next line once a second
   for a bounded time; latency from the moment the click was due (so a late client or a queue
   counts), p50/p99 and errors, for N = 50, 150, 300.

Prints a table of ratios and targets. Nothing is asserted: the numbers go in docs/benchmarks.md.
``--quick`` shortens every part (for a smoke run); ``--seconds`` sets the classroom duration.
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
from contextlib import AbstractContextManager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.plain import plain_loop  # noqa: E402
from support.process import cpu_seconds, rss_kib, server_process  # noqa: E402
from support.table import markdown  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def server(
    data: str, extra: dict[str, str] | None = None
) -> AbstractContextManager[tuple[str, int]]:
    """The server with the Dockerfile's settings (and ``extra``), on loopback, its store in
    ``data``."""
    env = {"LOOP_STEPPER_MAX_SESSIONS": "5000", "MALLOC_ARENA_MAX": "2", "LOOP_STEPPER_DATA": data}
    return server_process({**env, **(extra or {})})


class Connection:
    """One keep-alive HTTP/1.1 connection, as a student's browser holds one: no pool, no parsing
    beyond the status line and Content-Length, so the client costs far less CPU than the server
    (httpx.AsyncClient with 300 pooled connections spends ~4 ms of CPU per request and would be
    what saturates, not the server)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def request(self, method: str, path: str) -> tuple[int, bytes]:
        self.writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: 0\r\n\r\n".encode()
        )
        return await self._answer()

    async def post_json(self, path: str, body: str) -> tuple[int, bytes]:
        data = body.encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        return await self._answer()

    async def _answer(self) -> tuple[int, bytes]:
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        body = await self.reader.readexactly(length)
        return status, body

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def new_session(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/sessions", json={"scenario": "moons"})
    r.raise_for_status()
    sid: str = r.json()["id"]
    return sid


def losses(body: bytes) -> int:
    """The ``since`` for the next request: like the page, ask only for new loss points."""
    n: int = json.loads(body)["losses"]
    return n


async def line_vs_health(url: str, rounds: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        sid = await new_session(client)
        health: list[float] = []
        line: list[float] = []
        since = 0
        for i in range(rounds + 50):  # interleaved, so both see the same machine
            t0 = time.perf_counter()
            (await client.get("/healthz")).raise_for_status()
            t1 = time.perf_counter()
            r = await client.post(f"/api/sessions/{sid}/next", params={"since": since})
            t2 = time.perf_counter()
            r.raise_for_status()
            since = losses(r.content)
            if i >= 50:  # warm-up
                health.append(t1 - t0)
                line.append(t2 - t1)
        await client.delete(f"/api/sessions/{sid}")
    return {
        "health_p50": pct(health, 0.5),
        "health_p99": pct(health, 0.99),
        "line_p50": pct(line, 0.5),
        "line_p99": pct(line, 0.99),
    }


async def line_vs_health_lean(url: str, pid: int, rounds: int) -> dict[str, float]:
    """The same, over one bare keep-alive connection: almost no client time in the numbers.

    Also the server's own CPU time per request, for each kind alone: unlike latency, it does
    not move when other processes share the cores.
    """
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        sid = await new_session(client)
    conn = await Connection.open(url)
    health: list[float] = []
    line: list[float] = []
    since = 0
    for i in range(rounds + 50):
        t0 = time.perf_counter()
        assert (await conn.request("GET", "/healthz"))[0] == 200
        t1 = time.perf_counter()
        status, body = await conn.request("POST", f"/api/sessions/{sid}/next?since={since}")
        t2 = time.perf_counter()
        assert status == 200
        since = losses(body)
        if i >= 50:
            health.append(t1 - t0)
            line.append(t2 - t1)
    cpu: dict[str, float] = {}
    for kind, method, path in (
        ("health", "GET", "/healthz"),
        ("line", "POST", f"/api/sessions/{sid}/next?since="),
    ):
        before = cpu_seconds(pid)
        for _ in range(rounds):
            _, body = await conn.request(method, path + (str(since) if kind == "line" else ""))
            since = losses(body) if kind == "line" else since
        cpu[f"{kind}_cpu"] = (cpu_seconds(pid) - before) / rounds
    await conn.close()
    return {
        **cpu,
        "health_p50": pct(health, 0.5),
        "health_p99": pct(health, 0.99),
        "line_p50": pct(line, 0.5),
        "line_p99": pct(line, 0.99),
    }


async def run_vs_plain(url: str, pid: int, repeats: int) -> dict[str, float]:
    """Pairs, each the plain loop right before a served run, so that both see the same
    minute of this shared machine (the plain loop alone varied 45-110 ms between runs of one
    day): the median of the pairs' ratios, by wall time and by CPU time (the server's for its
    run, this process's for the plain loop; unlike wall time, CPU time leaves out the time a
    process waits for a core; the server's is read in clock ticks of 10 ms, so one pair's CPU
    ratio is good to about 10 %, the median of many finer)."""
    walls: list[float] = []
    cpus: list[float] = []
    plain: list[float] = []
    served: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for i in range(repeats + 1):
            sid = await new_session(client)
            await asyncio.sleep(0.05)  # the new session is brought into memory after its answer
            plain_wall, plain_cpu = plain_loop(150)
            c0, t0 = cpu_seconds(pid), time.perf_counter()
            r = await client.post(f"/api/sessions/{sid}/run", json={"iterations": 150})
            elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0
            r.raise_for_status()
            assert r.json()["iteration"] == 150
            if i:  # the first pair warms both up
                walls.append(elapsed / plain_wall)
                cpus.append(cpu / plain_cpu)
                plain.append(plain_wall)
                served.append(elapsed)
            await client.delete(f"/api/sessions/{sid}")
    return {
        "plain": statistics.median(plain),
        "served": statistics.median(served),
        "wall": statistics.median(walls),
        "cpu": statistics.median(cpus),
    }


async def memory_per_session(url: str, pid: int, n: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        warm = [await new_session(client) for _ in range(50)]  # allocator warm
        for sid in warm:
            await client.delete(f"/api/sessions/{sid}")
        await asyncio.sleep(0.5)
        before = rss_kib(pid)
        ids = [await new_session(client) for _ in range(n)]
        await asyncio.sleep(0.5)
        after = rss_kib(pid)
        for sid in ids:
            await client.delete(f"/api/sessions/{sid}")
    return {"per_session_kb": (after - before) * 1024 / n / 1000, "n": n}


async def classroom(url: str, pid: int, students: int, seconds: float) -> dict[str, float]:
    """Each student clicks Next line once a second, at its own phase, for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        sids = [await new_session(client) for _ in range(students)]
    connections = [await Connection.open(url) for _ in sids]
    start = time.perf_counter() + 1.0
    rng = random.Random(0)
    server_cpu, client_cpu = cpu_seconds(pid), time.process_time()

    async def student(sid: str, conn: Connection, phase: float) -> None:
        nonlocal errors
        due = start + phase
        since = 0
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            try:
                status, body = await asyncio.wait_for(
                    conn.request("POST", f"/api/sessions/{sid}/next?since={since}"), 10
                )
                errors += status != 200
                since = losses(body) if status == 200 else since
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                errors += 1
            latencies.append(time.perf_counter() - due)  # from when the click was due
            due += 1.0

    await asyncio.gather(
        *(student(sid, conn, rng.random()) for sid, conn in zip(sids, connections, strict=True))
    )
    server_cpu = cpu_seconds(pid) - server_cpu
    client_cpu = time.process_time() - client_cpu
    for conn in connections:
        await conn.close()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for sid in sids:
            await client.delete(f"/api/sessions/{sid}")
    return {
        "p50": pct(latencies, 0.5),
        "p99": pct(latencies, 0.99),
        "requests": len(latencies),
        "errors": errors,
        "server_ms": server_cpu / len(latencies) * 1e3,  # CPU per request
        "client_ms": client_cpu / len(latencies) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, shorter classroom")
    parser.add_argument("--seconds", type=float, default=None, help="classroom duration")
    args = parser.parse_args()
    rounds, repeats, n_mem = (200, 3, 200) if args.quick else (1000, 15, 1000)
    seconds = args.seconds or (5.0 if args.quick else 20.0)
    rows: list[tuple[str, str, str, str, str]] = []

    def add(measure: str, measured: str, ratio: float, target: str, ok: bool | None) -> None:
        rows.append(
            (
                measure,
                measured,
                f"{ratio:.2f}",
                target,
                {True: "yes", False: "**no**", None: ""}[ok],
            )
        )

    with tempfile.TemporaryDirectory() as data, server(data) as (url, pid):
        for label, lean in (("httpx.AsyncClient", False), ("bare keep-alive connection", True)):
            if lean:
                lat = asyncio.run(line_vs_health_lean(url, pid, rounds))
            else:
                lat = asyncio.run(line_vs_health(url, rounds))
            for q in ("p50", "p99"):
                ratio = lat[f"line_{q}"] / lat[f"health_{q}"]
                add(
                    f"moons `POST next` ÷ `GET /healthz`, {q} ({label})",
                    f"{lat[f'line_{q}'] * 1e3:.2f} ms ÷ {lat[f'health_{q}'] * 1e3:.2f} ms",
                    ratio,
                    "≤ 1.5" if q == "p50" else "",
                    ratio <= 1.5 if q == "p50" else None,
                )
        add(
            "moons `POST next` ÷ `GET /healthz`, server CPU per request",
            f"{lat['line_cpu'] * 1e3:.2f} ms ÷ {lat['health_cpu'] * 1e3:.2f} ms",
            lat["line_cpu"] / lat["health_cpu"],
            "",
            None,
        )
        run = asyncio.run(run_vs_plain(url, pid, repeats))
        pairs = f"median of {repeats} interleaved pairs"
        add(
            f"`POST run` 150 moons iterations ÷ the lesson's plain loop, time ({pairs})",
            f"{run['served'] * 1e3:.1f} ms ÷ {run['plain'] * 1e3:.1f} ms (medians)",
            run["wall"],
            "≤ 1.3",
            run["wall"] <= 1.3,
        )
        add(
            f"`POST run` 150 moons iterations ÷ the lesson's plain loop, CPU time ({pairs})",
            "the server's CPU for the run ÷ this process's for the plain loop",
            run["cpu"],
            "",
            None,
        )
        mem = asyncio.run(memory_per_session(url, pid, n_mem))
        kb = mem["per_session_kb"]
        add(
            f"memory per idle moons session (server RSS over {mem['n']:.0f} sessions)",
            f"{kb:.1f} KB",
            kb / 100,
            "≤ 100 KB",
            kb <= 100,
        )
        for n in (50, 150, 300):
            room = asyncio.run(classroom(url, pid, n, seconds))
            p99 = room["p99"] * 1e3
            add(
                f"classroom: {n} students x Next once a second, {seconds:.0f} s",
                f"p50 {room['p50'] * 1e3:.1f} ms, p99 {p99:.1f} ms, {room['requests']:.0f} "
                f"requests, {room['errors']:.0f} errors (server CPU "
                f"{room['server_ms']:.2f} ms/request, client {room['client_ms']:.2f})",
                p99 / 100,
                "p99 < 100 ms, 0 errors",
                p99 < 100 and room["errors"] == 0,
            )
    head = ("measure", "measured", "ratio", "target", "met")
    print("\n" + markdown(head, rows))
    print(
        f"\n{os.cpu_count()} cores, Python {sys.version.split()[0]}; server: python -m app.cli "
        "(uvicorn, 1 process); clients in this process, loopback. Memory and classroom ratios are "
        "measured ÷ target."
    )


if __name__ == "__main__":
    main()
