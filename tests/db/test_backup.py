"""backup, restore and check (app/db/backup.py), and the schema's version at start: a newer one
refused on both databases, an older SQLite file migrated after a copy beside it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from app.db import SCHEMA, Database, SqliteDatabase
from app.db import backup as admin
from app.db.schema import SQLITE, SchemaTooNew, statements
from app.db.sqlite import DatabaseBusy, hold_lock
from app.engine.optimizers import PLAIN_SGD
from app.log.records import Setup
from app.log.timeline import Timeline
from app.sessions.journal import Journal

ROOT = Path(__file__).resolve().parents[2]
NEURON = Setup("neuron", 0.05, 0, PLAIN_SGD)


def old_file(path: Path, version: int) -> None:
    """A database as release ``version`` left it, with one log in it."""
    with sqlite3.connect(path) as db:
        for target in range(1, version + 1):
            for statement in statements(target, SQLITE):
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {version}")
        db.execute("INSERT INTO logs (id, kind, setup, used) VALUES ('old', 'session', '{}', 1.5)")
    db.close()


def test_a_newer_schema_is_refused_untouched(make_db: Callable[..., Database]) -> None:
    store = make_db()
    store.create("a", NEURON)
    store.close()
    if isinstance(store, SqliteDatabase):
        with sqlite3.connect(store.path) as db:
            db.execute(f"PRAGMA user_version = {SCHEMA + 1}")
        db.close()
    else:
        with psycopg.connect(store.url, autocommit=True) as pg:  # type: ignore[attr-defined]
            pg.execute("UPDATE schema_version SET version = %s", (SCHEMA + 1,))
    with pytest.raises(SchemaTooNew, match=f"version {SCHEMA + 1}, newer than .*\\({SCHEMA}\\)"):
        make_db()
    if isinstance(store, SqliteDatabase):
        with sqlite3.connect(store.path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA + 1
            assert db.execute("SELECT id FROM logs").fetchall() == [("a",)]
        db.close()
        assert not list(Path(store.path).parent.glob("*.bak"))


def test_an_older_file_is_copied_beside_itself_then_migrated(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    old_file(path, 6)
    store = SqliteDatabase(path)
    assert store.exists("old")
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA
        assert db.execute("SELECT cuts, base FROM logs").fetchall() == [(0, None)]  # 7's columns
    db.close()
    kept = tmp_path / "sessions.sqlite3.v6.bak"
    with sqlite3.connect(kept) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 6
        assert db.execute("SELECT id, used FROM logs").fetchall() == [("old", 1.5)]
        columns = {row[1] for row in db.execute("PRAGMA table_info(logs)")}
        assert "cuts" not in columns
    db.close()
    report = admin.check(kept)
    assert report.ok and f"schema version 6 (this release: {SCHEMA})" in report.text()
    SqliteDatabase(path).close()  # opened again: nothing to migrate, no second copy
    assert sorted(p.name for p in tmp_path.glob("*.bak")) == ["sessions.sqlite3.v6.bak"]


def test_backup_check_and_restore(tmp_path: Path) -> None:
    data = tmp_path / "a"
    store = SqliteDatabase(admin.database_file(str(data)))
    for n in range(3):
        store.create(f"s{n}", NEURON)
    report = admin.backup(admin.database_file(str(data)), tmp_path / "copy.sqlite3")
    assert report.ok and "3 sessions" in report.text(), report.text()
    store.create("after", NEURON)  # after the backup: not in the copy
    with pytest.raises(DatabaseBusy, match="in use by a running server"):
        admin.restore(tmp_path / "copy.sqlite3", data)
    store.close()
    restored = admin.restore(tmp_path / "copy.sqlite3", data)
    assert restored.ok and "3 sessions" in restored.text()
    assert admin.check(data / "sessions.sqlite3.before-restore").text().count("4 sessions") == 1
    store = SqliteDatabase(admin.database_file(str(data)))
    assert [store.exists(i) for i in ("s0", "s1", "s2", "after")] == [True, True, True, False]
    store.close()


def test_a_server_does_not_start_during_a_restore(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    fd = hold_lock(path, exclusive=True)
    try:
        with pytest.raises(DatabaseBusy, match="being restored"):
            SqliteDatabase(path)
    finally:
        os.close(fd)
    SqliteDatabase(path).close()


def test_check_finds_a_damaged_file_and_restore_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite3"
    store = SqliteDatabase(path)
    for n in range(40):
        store.create(f"s{n:02}", NEURON)
    store.close()
    raw = bytearray(path.read_bytes())
    assert len(raw) >= 3 * 4096
    raw[4096 : 2 * 4096] = b"\xa5" * 4096  # page 2: garbage
    path.write_bytes(bytes(raw))
    report = admin.check(path)
    assert not report.ok and "FAILED" in report.text()
    with pytest.raises(admin.BackupError, match="failed its check"):
        admin.restore(path, tmp_path / "data")
    assert not (tmp_path / "data" / "sessions.sqlite3").exists()
    missing = admin.check(tmp_path / "nothing.sqlite3")
    assert not missing.ok and "no such file" in missing.text()


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LOOP_STEPPER_DATA": str(data)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_commands_report_and_exit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    old_file(data / "sessions.sqlite3", SCHEMA)
    done = cli(data, "check")
    assert done.returncode == 0 and "integrity_check: ok" in done.stdout, done.stderr
    assert "1 sessions" in done.stdout
    (tmp_path / "junk").write_text("not a database")
    done = cli(data, "check", str(tmp_path / "junk"))
    assert done.returncode == 1 and "NOT OK" in done.stdout
    done = cli(data, "restore", str(tmp_path / "junk"))
    assert done.returncode == 1 and "failed its check" in done.stderr
    with sqlite3.connect(data / "sessions.sqlite3") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA + 1}")
    db.close()
    started = cli(data, "--port", "1")  # refused before it would bind anything
    assert started.returncode == 1
    assert f"newer than this Loop Stepper's ({SCHEMA})" in started.stderr
    assert "Traceback" not in started.stderr


def test_pg_dump_and_pg_restore_as_deploy_md_says(postgres_url: str, tmp_path: Path) -> None:
    """docs/deploy.md's two commands: a dump restored into an empty database serves the same
    logs at the same schema version (nothing migrated again)."""
    from app.db.postgres import PostgresDatabase
    from support.postgres import bin_dir

    base, _ = postgres_url.rsplit("/", 1)
    names = [f"dump_{os.getpid()}_a", f"dump_{os.getpid()}_b"]
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        for name in names:
            pg.execute(f"DROP DATABASE IF EXISTS {name}")
            pg.execute(f"CREATE DATABASE {name}")
    source, target = (f"{base}/{name}" for name in names)
    store = PostgresDatabase(source)
    store.create("a", NEURON)
    timeline = Timeline(NEURON, Journal(store, "a"), every=3)
    timeline.run(2)
    store.append("a", timeline.drain())
    saved = store.load("a")
    store.close()
    dump = tmp_path / "loop-stepper.dump"
    for args in (
        ["pg_dump", "--format=custom", "--no-owner", f"--file={dump}", source],
        ["pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={target}", str(dump)],
    ):
        done = subprocess.run([str(bin_dir() / args[0]), *args[1:]], timeout=60)
        assert done.returncode == 0
    restored = PostgresDatabase(target)
    try:
        assert restored.schema_version() == SCHEMA
        again = restored.load("a")
        assert [e.to_json() for e in again.events] == [e.to_json() for e in saved.events]
        assert again.head == saved.head and len(again.events) > 0
        assert Timeline.restored(again, Journal(restored, "a")).view() == timeline.view()
    finally:
        restored.close()
