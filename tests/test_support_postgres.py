"""The tests' PostgreSQL (support/postgres.py) answers SQL on the URL it gives."""

from __future__ import annotations

import psycopg


def test_the_server_answers(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as db:
        row = db.execute("SELECT current_setting('fsync'), 6 * 7, version()").fetchone()
    assert row is not None and row[0] == "off" and row[1] == 42 and "PostgreSQL 15" in row[2]
