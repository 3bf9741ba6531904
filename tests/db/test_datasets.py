"""CSV datasets in the store (issue 28), on SQLite and on PostgreSQL: the bytes read back
exactly, one row per file however often it is saved, kept across a reopen and by the sweep."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from app.db import Database
from app.spec.tables import dataset_id
from support.clock import Clock

Make = Callable[..., Database]


def test_a_dataset_reads_back_byte_for_byte(make_db: Make) -> None:
    store = make_db()
    # every byte value, a NUL and a BOM included: BYTEA / BLOB, never text
    body = b"\xef\xbb\xbfx,y\r\n1,2\r\n" + bytes(range(256))
    key = dataset_id(body)
    assert store.dataset(key) is None
    store.save_dataset(key, body, 1)
    got = store.dataset(key)
    assert type(got) is bytes and got == body
    assert hashlib.sha256(got).hexdigest() == key
    assert store.dataset(key[:32]) is None  # the whole id, not a prefix


def test_saving_a_file_again_keeps_one_row(make_db: Make) -> None:
    clock = Clock(1000.0)
    store = make_db(clock=clock)
    body = b"a\n1\n"
    store.save_dataset(dataset_id(body), body, 1)
    clock.now += 60
    store.save_dataset(dataset_id(body), body, 1)  # ON CONFLICT DO NOTHING: no error
    other = b"a\n2\n"
    store.save_dataset(dataset_id(other), other, 1)
    assert store.dataset(dataset_id(body)) == body and store.dataset(dataset_id(other)) == other
    rows = _rows(store)
    assert rows == sorted([(dataset_id(body), 1, 1000.0), (dataset_id(other), 1, 1060.0)])


def test_datasets_outlive_a_reopen_and_the_sweep(make_db: Make) -> None:
    clock = Clock(1000.0)
    store = make_db("kept", clock=clock, max_logs=1, max_bytes=1)
    body = b"a,b\n1,2\n" * 1000
    store.save_dataset(dataset_id(body), body, 1000)
    clock.now += 400 * 86_400.0  # past every retention
    store.sweep()
    store.close()
    again = make_db("kept", clock=clock)  # another process, or a restart, on the same store
    assert again.dataset(dataset_id(body)) == body


def _rows(store: Database) -> list[tuple[str, int, float]]:
    with store._read() as db:  # type: ignore[attr-defined]
        found = db.execute("SELECT id, rows, created FROM datasets ORDER BY id").fetchall()
    return sorted((str(i), int(r), float(c)) for i, r, c in found)
