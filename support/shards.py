"""Several app processes behind Debian's nginx, as ``deploy/nginx.conf`` routes them.

Shared by ``tests/system/test_shards.py`` and ``bench/scale.py``. Each app process is started the way
the README starts one (``python -m app.cli``) on a free 127.0.0.1 port, with the environment
given (the tests give every process the same ``LOOP_STEPPER_DATABASE_URL``) and
``LOOP_STEPPER_SERVED_BY`` set to its name, so every answer says which process gave it
(``X-Served-By``). nginx runs ``deploy/nginx.conf`` as written, inside a minimal main config of
the test's (no daemon, its pid, logs and temporary files in a temporary folder), with only its
``server appN:8000`` lines replaced by the processes' addresses and ``listen 80`` by a free port.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from support.serve import free_port
from support.process import stop

ROOT = Path(__file__).resolve().parent.parent
NGINX = "/usr/sbin/nginx"
CONF = ROOT / "deploy" / "nginx.conf"
SERVER_LINE = re.compile(r"^(\s*)server app\d+:8000(.*;)$", re.MULTILINE)


@dataclass
class App:
    """One app process: its name (X-Served-By), its own URL and the process."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """``kill -9``: no shutdown, no flush, what a crash does."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            stop(self.proc)


@dataclass
class Cluster:
    url: str  # nginx
    apps: list[App] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # what every app was started with
    where: Path = Path()

    def app(self, name: str) -> App:
        return next(a for a in self.apps if a.name == name)


def start_app(name: str, env: dict[str, str], where: Path, port: int | None = None) -> App:
    """Start an app process (not yet waiting for it: see ``wait_up``)."""
    port = port or free_port()
    where.mkdir(parents=True, exist_ok=True)
    log = where / f"app-{name}.log"
    with log.open("ab") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "LOOP_STEPPER_SERVED_BY": name, **env},
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    return App(name, f"http://127.0.0.1:{port}", proc, log)


def wait_up(app: App, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{app.url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if app.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"app {app.name} did not start: {app.log.read_text()[-3000:]}")
        time.sleep(0.1)


def site(upstreams: list[str], port: int) -> str:
    """deploy/nginx.conf as written, its servers and its port replaced."""
    text = CONF.read_text()
    lines = SERVER_LINE.findall(text)
    assert len(lines) >= 2 and "listen 80;" in text, "deploy/nginx.conf changed its shape"
    indent, options = lines[0]
    servers = "\n".join(f"{indent}server {u}{options}" for u in upstreams)
    first = True

    def one(match: re.Match[str]) -> str:
        nonlocal first
        if first:
            first = False
            return servers
        return "\0"

    text = SERVER_LINE.sub(one, text).replace("\0\n", "")
    return text.replace("listen 80;", f"listen 127.0.0.1:{port};")


@contextmanager
def nginx(upstreams: list[str], where: Path, workers: int = 1) -> Iterator[str]:
    """Debian's nginx running deploy/nginx.conf in front of ``upstreams``; yields its URL."""
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o755)  # run as root, nginx's workers are "nobody": they write the temp files
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (where / sub).mkdir(mode=0o777, exist_ok=True)
        (where / sub).chmod(0o777)
    port = free_port()
    (where / "loop-stepper.conf").write_text(site(upstreams, port))
    (where / "nginx.conf").write_text(f"""
daemon off;
worker_processes {workers};
pid {where}/nginx.pid;
error_log {where}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {where}/body;
    proxy_temp_path {where}/proxy;
    fastcgi_temp_path {where}/fastcgi;
    uwsgi_temp_path {where}/uwsgi;
    scgi_temp_path {where}/scgi;
    include {where}/loop-stepper.conf;
}}
""")
    conf, log = str(where / "nginx.conf"), str(where / "error.log")
    args = [NGINX, "-p", str(where), "-e", log, "-c", conf]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                error = (where / "error.log").read_text() if (where / "error.log").exists() else ""
                raise RuntimeError(f"nginx did not start: {error[-2000:]}")
            time.sleep(0.05)
        yield url
    finally:
        stop(proc)


@contextmanager
def cluster(
    names: list[str], env: dict[str, str], where: Path, nginx_workers: int = 1
) -> Iterator[Cluster]:
    """The named app processes (started together) behind nginx."""
    with ExitStack() as stack:
        apps = [start_app(name, env, where) for name in names]
        found = Cluster("", apps, env, where)
        stack.callback(lambda: [a.stop() for a in found.apps])  # restarted ones too
        for app in apps:
            wait_up(app)
        found.url = stack.enter_context(
            nginx([a.url.removeprefix("http://") for a in apps], where / "nginx", nginx_workers)
        )
        yield found
