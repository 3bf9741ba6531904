"""A throwaway PostgreSQL server for the tests: Debian's binaries, a temporary data directory,
a free 127.0.0.1 port, one database; ``postgres_server()`` yields its ``postgresql://`` URL and
stops it (and removes the directory) afterwards.

PostgreSQL refuses to run as root: when the tests run as root (CI, containers), every command
runs as the ``postgres`` user (``subprocess``'s ``user=``: the server's pid is the server's, so
stopping it needs no forwarding) and the directory is handed to it.

Started for speed, for tests only: ``fsync=off`` and ``full_page_writes=off`` (a crash of the
*machine* may corrupt this throwaway cluster; a killed process, what the tests do, loses
nothing PostgreSQL acknowledged), ``synchronous_commit=on`` kept as in production, so that a
test's "acknowledged" means what it means in production. Unix sockets off (TCP only), no
autovacuum. Startup takes about a second (initdb is most of it).

Without the binaries the fixture skips, unless ``LOOP_STEPPER_REQUIRE_POSTGRES=1`` (CI sets it),
which turns the skip into a failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

USER = "postgres"
DATABASE = "loop_stepper"


class NoPostgres(RuntimeError):
    """PostgreSQL's server binaries are not installed (Debian: ``apt-get install postgresql``)."""


def bin_dir() -> Path:
    """The newest Debian PostgreSQL's bin directory (``/usr/lib/postgresql/<major>/bin``), or
    ``LOOP_STEPPER_PG_BIN``."""
    given = os.environ.get("LOOP_STEPPER_PG_BIN")
    pattern = f"{given}/initdb" if given else "/usr/lib/postgresql/*/bin/initdb"
    found = sorted(glob.glob(pattern), key=lambda p: _major(Path(p).parent.parent.name))
    if not found:
        raise NoPostgres(
            f"PostgreSQL's server is not installed (no {pattern}; "
            "Debian: apt-get install postgresql)"
        )
    return Path(found[-1]).parent


def _major(name: str) -> int:
    return int(name) if name.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _as_user() -> dict[str, Any]:
    """Run as ``postgres`` when we are root (PostgreSQL will not run as root)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(USER)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextmanager
def postgres_server(database: str = DATABASE) -> Iterator[str]:
    """Start a PostgreSQL server; yield ``postgresql://user@127.0.0.1:port/database``."""
    bindir = bin_dir()
    root = Path(tempfile.mkdtemp(prefix="loop-stepper-pg-"))
    log = root / "server.log"
    as_user = _as_user()
    user = USER if as_user else pwd.getpwuid(os.geteuid()).pw_name
    if as_user:
        entry = pwd.getpwnam(USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    env.pop("PGDATA", None)
    try:
        server = _start(bindir, as_user, user, root, env, port := _free_port())
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        _wait_ready(bindir, as_user, port, user, server, log)
        subprocess.run(
            [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user, database],
            check=True,
            env=env,
            cwd=root,
            **as_user,
        )
        yield f"postgresql://{user}@127.0.0.1:{port}/{database}"
    finally:
        server.send_signal(signal.SIGINT)  # "fast" shutdown: ends the clients' connections
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        shutil.rmtree(root, ignore_errors=True)


def _start(
    bindir: Path, as_user: dict[str, Any], user: str, root: Path, env: dict[str, str], port: int
) -> subprocess.Popen[bytes]:
    """initdb, then the server on ``port`` (not yet ready)."""
    data, log = root / "data", root / "server.log"
    initdb = ["-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync"]
    made = subprocess.run(
        [str(bindir / "initdb"), *initdb, "--no-instructions"],
        check=False,
        env=env,
        capture_output=True,
        cwd=root,
        **as_user,
    )
    if made.returncode:
        raise RuntimeError(f"initdb failed: {made.stderr.decode(errors='replace')}")
    settings = [
        "listen_addresses=127.0.0.1",
        f"port={port}",
        "unix_socket_directories=",
        "fsync=off",
        "full_page_writes=off",
        "autovacuum=off",
        "max_connections=200",
        "shared_buffers=32MB",
    ]
    options = [arg for setting in settings for arg in ("-c", setting)]
    with open(log, "wb") as err:  # the child keeps its own copy of the descriptor
        server = subprocess.Popen(
            [str(bindir / "postgres"), "-D", str(data), *options],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=root,
            **as_user,
        )
    return server


def _wait_ready(
    bindir: Path,
    as_user: dict[str, Any],
    port: int,
    user: str,
    server: subprocess.Popen[bytes],
    log: Path,
) -> None:
    deadline = time.monotonic() + 60
    while True:
        ready = subprocess.run(
            [
                str(bindir / "pg_isready"),
                "-q",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                user,
            ],
            check=False,
            **as_user,
        )
        if ready.returncode == 0:
            return
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)


def required() -> bool:
    """CI sets ``LOOP_STEPPER_REQUIRE_POSTGRES=1``: a missing PostgreSQL fails, never skips."""
    return os.environ.get("LOOP_STEPPER_REQUIRE_POSTGRES", "") not in ("", "0")
