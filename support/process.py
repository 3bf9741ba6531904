"""The server as an instructor starts it (``python -m app.cli``), in a process of its own.

Shared by the tests and the benchmarks: their numbers (RSS, CPU time) must be the server's
alone, not the client's. Imports nothing of the app (a benchmark's client stays light).
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server_process(
    env: dict[str, str],
    stderr: IO[bytes] | int = subprocess.DEVNULL,
    files: int | None = None,
) -> Iterator[tuple[str, int]]:
    """Start the server on a free loopback port with ``env`` added; yield (url, pid).
    ``files``: its open files limit, soft and hard (as a login's ``ulimit -n`` would be)."""
    port = free_port()

    def limit() -> None:
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        preexec_fn=limit if files is not None else None,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a shared machine under load starts slowly
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
