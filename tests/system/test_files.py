"""A server out of open files (issue 27): a login's 1,024 files and 1,500 students at once.
Every request gets an answer (waiting for a file, never dropped), and the log says the limit."""

from __future__ import annotations

import asyncio
import resource
import tempfile

import aiohttp

from app.cli import FILES_BESIDES, FILES_PER_SESSION, files_needed, raise_file_limit
from app.settings import Settings
from support.process import server_process

CLIENTS = 1500


async def burst(url: str) -> list[int]:
    """Each client its own keep-alive connection, all at once, held until every client has its
    answer (a lecture hall's open pages): a status each, or 0 for no answer at all. Measured
    with uvloop at 1,024 files: 497 of 1,500 dropped (issue 27); the connections past the limit
    must wait instead (the server's keep-alive timeout frees files for them)."""
    clients = [
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=120)
        )
        for _ in range(CLIENTS)
    ]

    async def one(http: aiohttp.ClientSession) -> int:
        try:
            async with http.get(f"{url}/healthz") as r:
                await r.read()
                return r.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    try:
        return list(await asyncio.gather(*(one(c) for c in clients)))
    finally:
        await asyncio.gather(*(c.close() for c in clients))


def test_1500_at_once_under_1024_files_all_answered(tmp_path: object) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # this process holds 1,500 connections of its own: it needs the files the server lacks
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    try:
        with (
            tempfile.TemporaryFile() as log,
            server_process({"LOOP_STEPPER_DATA": str(tmp_path)}, stderr=log, files=1024) as (
                url,
                _,
            ),
        ):
            statuses = asyncio.run(burst(url))
            log.seek(0)
            said = log.read().decode()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert statuses.count(0) == 0, f"{statuses.count(0)} connections closed without an answer"
    assert set(statuses) <= {200, 503}
    assert statuses.count(200) >= CLIENTS * 0.9
    assert "open files limit: 1024 (was 1024; hard limit 1024)" in said
    need = files_needed(Settings())
    assert need == FILES_PER_SESSION * 1000 + FILES_BESIDES
    assert f"open files limit 1024 is below the {need} a full server may need" in said


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
        raised, loop = raise_file_limit(Settings(max_sessions=10))
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (raised, hard) and raised == hard
        assert loop == "auto"  # 3 x 10 + 256 files covered: uvloop
        _, loop = raise_file_limit(Settings(max_sessions=hard))  # more than the hard limit
        assert loop == "asyncio"
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
