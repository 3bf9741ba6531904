"""A real server on a free loopback port, in a thread of this process (tests, benchmarks)."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings
from support.process import free_port

__all__ = ["free_port", "schema_url", "serve", "serve_app"]


@contextmanager
def serve(settings: Settings | None = None, port: int | None = None) -> Iterator[str]:
    """Run the app in uvicorn on 127.0.0.1 in a thread; yield its base URL. A given port
    lets a test restart "the same server" where a page expects it."""
    settings = settings or Settings(data=tempfile.mkdtemp(prefix="loop-stepper-store-"))
    with serve_app(create_app(settings), port) as url:
        yield url


@contextmanager
def serve_app(app: FastAPI, port: int | None = None) -> Iterator[str]:
    """``app`` (made by the caller, who may look inside it) in uvicorn, as ``serve`` runs it."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a shared machine's load can slow the warm-up
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def schema_url(url: str, schema: str) -> str:
    """``url`` with its tables in ``schema`` (made if need be): a database of one's own,
    for the price of a CREATE SCHEMA."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    return f"{url}?options=-csearch_path%3D{schema}"
