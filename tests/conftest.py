"""A real server on a free loopback port, shared by the HTTP and browser tests."""

from __future__ import annotations

import itertools
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from app.main import create_app
from app.settings import Settings
from app.db import SqliteDatabase, Database

# every server a test starts keeps its store in a folder of its own, never the user's
os.environ["LOOP_STEPPER_DATA"] = tempfile.mkdtemp(prefix="loop-stepper-tests-")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve(settings: Settings | None = None, port: int | None = None) -> Iterator[str]:
    """Run the app in uvicorn on 127.0.0.1 in a thread; yield its base URL. A given port
    lets a test restart "the same server" where a page expects it."""
    port = port or free_port()
    settings = settings or Settings(data=tempfile.mkdtemp(prefix="loop-stepper-store-"))
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    with serve() as url:
        yield url


@pytest.fixture()
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the whole run (support/postgres.py); skipped without Debian's
    ``postgresql`` unless LOOP_STEPPER_REQUIRE_POSTGRES=1 (CI), where that is a failure."""
    from support.postgres import NoPostgres, postgres_server, required

    try:
        server = postgres_server()
        url = server.__enter__()
    except NoPostgres as missing:
        if required():
            pytest.fail(f"LOOP_STEPPER_REQUIRE_POSTGRES is set: {missing}")
        pytest.skip(str(missing))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


_schemas = itertools.count()


def schema_url(url: str, schema: str) -> str:
    """``url`` with its tables in ``schema`` (made if need be): a database of one's own,
    for the price of a CREATE SCHEMA."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    return f"{url}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Database]]:
    """Opens a store of each kind: ``make_store("name", **options)``; one name is one
    database (a SQLite file, a PostgreSQL schema), so opening it twice is two processes'
    view of one store. Closed at the end of the test."""
    kind: str = request.param
    url = request.getfixturevalue("postgres_url") if kind == "postgres" else ""
    opened: list[Database] = []
    schemas: dict[str, str] = {}

    def make(name: str = "s", **options: Any) -> Database:
        store: Database
        if kind == "sqlite":
            store = SqliteDatabase(tmp_path / f"{name}.sqlite3", **options)
        else:
            from app.db.postgres import PostgresDatabase

            if name not in schemas:
                schemas[name] = schema_url(url, f"t{next(_schemas)}_{os.getpid()}_{name}")
            store = PostgresDatabase(schemas[name], **options)
        opened.append(store)
        return store

    make.kind = kind  # type: ignore[attr-defined]
    try:
        yield make
    finally:
        for store in opened:
            store.close()
