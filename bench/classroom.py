"""bench/crowd.py's clients: a student's browser (one keep-alive connection of its own, aiohttp),
a crowd of them opened before a burst, a follower's event stream, clicking once a second."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

EVENT_ID = re.compile(rb"id: (\d+)\n")


class Client:
    """One student's browser: one keep-alive connection of its own."""

    def __init__(self, url: str) -> None:
        self.http = aiohttp.ClientSession(
            url,
            connector=aiohttp.TCPConnector(limit=1, keepalive_timeout=300),
            timeout=aiohttp.ClientTimeout(total=120),
        )
        self.sid = ""
        self.since = 0
        self.took = 0.0  # the last answer's Server-Timing: the app's own seconds

    async def call(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, bytes, float]:
        """(status, body, seconds); status 0 when the connection failed or timed out."""
        t0 = time.perf_counter()
        try:
            async with self.http.request(method, path, json=body) as r:
                data = await r.read()
                status = r.status
                self.took = app_seconds(r.headers.get("Server-Timing", ""))
        except (aiohttp.ClientError, TimeoutError):
            status, data = 0, b""
        return status, data, time.perf_counter() - t0

    async def new_session(self) -> dict[str, Any]:
        status, body, _ = await self.call("POST", "/api/sessions", {"scenario": "moons"})
        assert status == 201, status
        data: dict[str, Any] = json.loads(body)
        self.sid, self.since = data["id"], data["losses"]
        return data

    async def close(self) -> None:
        await self.http.close()


def app_seconds(server_timing: str) -> float:
    """The seconds in ``app;dur=<ms>`` (0 without one)."""
    _, _, ms = server_timing.partition("app;dur=")
    return float(ms) / 1e3 if ms else 0.0


async def crowd(url: str, n: int) -> list[Client]:
    """``n`` clients, each with its connection open (one ``/healthz`` each)."""
    clients = [Client(url) for _ in range(n)]
    for k in range(0, n, 50):  # not a burst of its own: 50 at a time
        await asyncio.gather(*(c.call("GET", "/healthz") for c in clients[k : k + 50]))
    return clients


async def close(clients: list[Client]) -> None:
    await asyncio.gather(*(c.close() for c in clients))


class Follower:
    """One follower's event stream: when each event id arrived."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.arrived: dict[int, float] = {}
        self.first = 0.0

    async def run(self, code: str) -> None:
        async with self.client.http.get(
            f"/api/lectures/{code}/events", headers={"Accept": "text/event-stream"}
        ) as r:
            buffer = b""
            async for chunk in r.content.iter_any():
                now = time.perf_counter()
                buffer += chunk
                end = buffer.rfind(b"\n\n")
                if end < 0:
                    continue
                for match in EVENT_ID.finditer(buffer, 0, end):
                    self.arrived[int(match.group(1))] = now
                buffer = buffer[end + 2 :]
                self.first = self.first or now


async def every_second(
    clients: list[Client], seconds: float, click: Callable[[Client], Awaitable[int]]
) -> tuple[list[float], int, list[float]]:
    """Each client calls ``click`` once a second at its own phase; latency from when it was
    due. Returns the latencies, the errors (a status other than 200) and the app's own time
    for each (its Server-Timing)."""
    latencies: list[float] = []
    errors = 0
    took: list[float] = []
    rng = random.Random(0)
    start = time.perf_counter() + 0.5

    async def one(client: Client, phase: float) -> None:
        nonlocal errors
        due = start + phase
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            errors += await click(client) != 200
            latencies.append(time.perf_counter() - due)
            took.append(client.took)
            due += 1.0

    await asyncio.gather(*(one(c, rng.random()) for c in clients))
    return latencies, errors, took


async def line(client: Client) -> int:
    status, body, _ = await client.call(
        "POST", f"/api/sessions/{client.sid}/next?since={client.since}"
    )
    if status == 200:
        client.since = json.loads(body)["losses"]
    return status


async def health(client: Client) -> int:
    return (await client.call("GET", "/healthz"))[0]
