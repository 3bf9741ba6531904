"""The fixtures: a real server on a free loopback port (support/serve.py), shared by the HTTP
and browser tests; PostgreSQL for the run; a database of each kind."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from app.db import Database, SqliteDatabase
from support.serve import schema_url, serve

# every server a test starts keeps its store in a folder of its own, never the user's
os.environ["LOOP_STEPPER_DATA"] = tempfile.mkdtemp(prefix="loop-stepper-tests-")


@pytest.fixture()
def server_threads() -> Iterator[int]:
    """torch in this process computes with the server's default intra-op thread count (1, as
    create_app sets it) during the test, whatever ran before; the count before is put back."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield 1
    finally:
        torch.set_num_threads(before)


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


_schemas = itertools.count()  # a PostgreSQL schema of its own for every database opened


@pytest.fixture(params=["sqlite", "postgres"])
def make_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Database]]:
    """Opens a store of each kind: ``make_db("name", **options)``; one name is one
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
