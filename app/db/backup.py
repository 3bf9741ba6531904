"""An admin's ``loop-stepper backup FILE``, ``restore FILE`` and ``check [FILE]`` (SQLite).

- ``backup``: SQLite's online backup API, the whole file in one step: one read transaction, so
  the copy is the database at one moment even while a server writes (WAL: the server's writes go
  on meanwhile, they are not in the copy). Written beside ``FILE`` and renamed onto it, then
  checked: a half-written copy never carries the name.
- ``check``: ``PRAGMA integrity_check``, the schema's version against this release's, the
  tables a Loop Stepper database has, and how many logs it holds; a report and ``ok``.
- ``restore``: checks the file first, then takes the database's lock exclusively (refused while
  any server holds it: ``sqlite.py``), keeps the database it replaces as
  ``sessions.sqlite3.before-restore``, and puts the copy in its place.

PostgreSQL has its own tools (``pg_dump``, ``pg_restore``): docs/deploy.md#backup-and-restore.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from app.db.schema import SCHEMA
from app.db.sqlite import hold_lock

FILE = "sessions.sqlite3"  # the database's file in LOOP_STEPPER_DATA
TABLES = {"logs", "events", "keyframes", "lectures"}  # present since their migrations


class BackupError(Exception):
    """What an admin is told instead of a traceback: a missing file, a failed check."""


@dataclass
class Report:
    path: str
    ok: bool = True
    lines: list[str] = field(default_factory=list)

    def say(self, line: str, ok: bool = True) -> None:
        self.lines.append(line if ok else f"FAILED: {line}")
        self.ok = self.ok and ok

    def text(self) -> str:
        verdict = "ok" if self.ok else "NOT OK"
        return "\n".join([f"{self.path}: {verdict}", *(f"  {line}" for line in self.lines)])


def database_file(data: str) -> Path:
    """The SQLite file a server with ``LOOP_STEPPER_DATA=data`` uses."""
    return Path(data) / FILE


def _read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise BackupError(f"{path}: no such file")
    # read-only: a check or a backup never creates, migrates or changes the database
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def check(path: Path) -> Report:
    """Whether ``path`` is a whole Loop Stepper database this release can open."""
    report = Report(str(path))
    try:
        db = _read_only(path)
    except BackupError as error:
        report.say(str(error).removeprefix(f"{path}: "), ok=False)
        return report
    try:
        integrity = [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
        report.say(f"integrity_check: {'; '.join(integrity[:5])}", integrity == ["ok"])
        version = db.execute("PRAGMA user_version").fetchone()[0]
        report.say(
            f"schema version {version} (this release: {SCHEMA})"
            + (", migrated when a server starts" if 0 < version < SCHEMA else ""),
            0 < version <= SCHEMA,
        )
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        missing = sorted(TABLES - tables)
        report.say(f"tables missing: {', '.join(missing) or 'none'}", not missing)
        if not missing:
            count = db.execute("SELECT count(*) FROM logs WHERE kind = 'session'").fetchone()[0]
            report.say(f"{count} sessions")
    except sqlite3.DatabaseError as error:  # not a database at all, or unreadable
        report.say(str(error), ok=False)
    finally:
        db.close()
    return report


def _copy(source: sqlite3.Connection, target: Path) -> None:
    """``source``'s database at one moment into ``target``, atomically (a temporary file beside
    it, flushed, then renamed)."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    copy = sqlite3.connect(partial)
    try:
        source.backup(copy)  # pages=-1: all at once, one read transaction, one moment
        copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    finally:
        copy.close()
    with open(partial, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(partial, target)


def backup(source: Path, target: Path) -> Report:
    """Copy the database ``source`` (a server may be writing it) to ``target``; its check."""
    if target.resolve() == source.resolve():
        raise BackupError(f"{target}: the backup would replace the database itself")
    db = _read_only(source)
    try:
        _copy(db, target)
    finally:
        db.close()
    return check(target)


def restore(copy: Path, data: Path) -> Report:
    """Put ``copy`` in place of the database in ``data``; refused while a server uses it."""
    report = check(copy)
    if not report.ok:
        raise BackupError(f"not restored, the file failed its check:\n{report.text()}")
    data.mkdir(parents=True, exist_ok=True)
    target = data / FILE
    fd = hold_lock(target, exclusive=True)  # DatabaseBusy while a server holds it
    try:
        if target.exists():
            # the database replaced, WAL included (a server killed may have left one)
            current = sqlite3.connect(target)
            try:
                _copy(current, target.with_name(f"{FILE}.before-restore"))
            finally:
                current.close()
        source = _read_only(copy)
        try:
            _copy(source, target.with_name(f".{FILE}.restoring"))
        finally:
            source.close()
        # a -wal left beside the old file would be replayed into the new one: gone first
        for stale in (f"{target}-wal", f"{target}-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        os.replace(target.with_name(f".{FILE}.restoring"), target)
    finally:
        os.close(fd)
    return check(target)
