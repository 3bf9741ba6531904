"""The database's tables, as numbered migrations shared by both dialects.

Each migration is applied once, in order, in one transaction with the bump of the schema's
version: SQLite keeps the version in ``PRAGMA user_version``, PostgreSQL in a ``schema_version``
table (one row). A migration is written once, with the few types that differ between the two
left as placeholders (``Dialect``): what SQLite has always run is exactly what it runs now.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    int: str  # a seq or a count
    real: str  # seconds since the epoch
    blob: str  # a keyframe's bytes
    keyed: str  # after a table whose rows are only ever found by their primary key


SQLITE = Dialect(int="INTEGER", real="REAL", blob="BLOB", keyed=" WITHOUT ROWID")
POSTGRES = Dialect(int="BIGINT", real="DOUBLE PRECISION", blob="BYTEA", keyed="")

MIGRATIONS = {
    1: """
    CREATE TABLE logs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('session', 'snapshot')),
        setup TEXT NOT NULL,
        head {int},  -- NULL: the newest event (a line at the end writes only its event)
        first {int} NOT NULL DEFAULT 0,
        dropped {int} NOT NULL DEFAULT 0,
        base_points TEXT NOT NULL DEFAULT '[]',
        used {real} NOT NULL
    );
    CREATE INDEX logs_used ON logs (kind, used);
    CREATE TABLE events (
        log TEXT NOT NULL, seq {int} NOT NULL, body TEXT NOT NULL, PRIMARY KEY (log, seq)
    ){keyed};
    CREATE TABLE checkpoints (
        log TEXT NOT NULL, seq {int} NOT NULL, clean INTEGER NOT NULL, state {blob} NOT NULL,
        PRIMARY KEY (log, seq)
    ){keyed};
    """,
    # lectures (issue 11): a session followed under a join code; its question, answers and
    # the newest events (what a follower's Last-Event-ID resumes from, across a restart)
    2: """
    CREATE TABLE lectures (
        code TEXT PRIMARY KEY,
        session TEXT NOT NULL UNIQUE,
        seq {int} NOT NULL DEFAULT 0,
        losses {int} NOT NULL DEFAULT 0,
        expires {real} NOT NULL,
        quiz TEXT
    );
    CREATE TABLE lecture_events (
        code TEXT NOT NULL, seq {int} NOT NULL, body TEXT NOT NULL, PRIMARY KEY (code, seq)
    ){keyed};
    CREATE TABLE lecture_answers (
        code TEXT NOT NULL, voter TEXT NOT NULL, choice TEXT NOT NULL, PRIMARY KEY (code, voter)
    ){keyed};
    CREATE TABLE self_quizzes (
        session TEXT PRIMARY KEY, preset TEXT NOT NULL, revealed INTEGER NOT NULL DEFAULT 0
    ){keyed};
    """,
    # owner epochs (issue 12): the process that last claimed a session (by replaying it) is
    # the only one whose appends are taken; a claim bumps it, every append checks it
    3: """
    ALTER TABLE logs ADD COLUMN owner {int} NOT NULL DEFAULT 0;
    """,
    # lectures across processes (issue 12): the whole view after each lecture's newest event,
    # what a follower on another process than the instructor's starts from (app/lectures/relay.py)
    4: """
    CREATE TABLE lecture_views (
        code TEXT PRIMARY KEY, seq {int} NOT NULL, body TEXT NOT NULL
    ){keyed};
    """,
    # the class predicts (issue 18): every question put to a lecture's class (the line's
    # prediction, and the "which bug" quiz as kind 'bug'), each round's votes; the report is
    # read from these. One self-contained step: renumber it freely when merging.
    5: """
    CREATE TABLE lecture_questions (
        code TEXT NOT NULL,
        n {int} NOT NULL,
        session TEXT NOT NULL,
        moment {int} NOT NULL,
        line TEXT NOT NULL,
        kind TEXT NOT NULL,
        round {int} NOT NULL DEFAULT 1,
        open INTEGER NOT NULL DEFAULT 1,
        body TEXT NOT NULL,
        PRIMARY KEY (code, n)
    ){keyed};
    CREATE INDEX lecture_questions_session ON lecture_questions (session);
    CREATE TABLE lecture_votes (
        code TEXT NOT NULL, n {int} NOT NULL, round {int} NOT NULL, voter TEXT NOT NULL,
        choice TEXT NOT NULL, PRIMARY KEY (code, n, round, voter)
    ){keyed};
    """,
    # the replay points are keyframes (a "checkpoint" is the lesson's line): one word a concept
    6: """
    ALTER TABLE checkpoints RENAME TO keyframes;
    """,
    # forks share their past (issue 20): a fork's events up to ``upto`` (and keyframes before
    # it) are read from ``base``, a frozen copy of the lecture at that moment made once for the
    # whole class (``is_base``); the fork's own rows are only what it did since. ``cuts``
    # counts the writes that changed a log's past (a cut, a reset, forgetting): a base made at
    # one head and count still holds the log's past up to that head
    7: """
    ALTER TABLE logs ADD COLUMN cuts {int} NOT NULL DEFAULT 0;
    ALTER TABLE logs ADD COLUMN base TEXT;
    ALTER TABLE logs ADD COLUMN upto {int};
    ALTER TABLE logs ADD COLUMN is_base INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX logs_base ON logs (base);
    """,
    # CSV datasets (issue 28): an uploaded file's bytes under their SHA-256 (the same file is
    # the same row), found only by that id; kept, never swept (app/db/datasets.py says why).
    # One self-contained step: renumber it freely when merging.
    8: """
    CREATE TABLE datasets (
        id TEXT PRIMARY KEY, body {blob} NOT NULL, rows {int} NOT NULL, created {real} NOT NULL
    ){keyed};
    """,
    # LTI 1.3 (issue 30): the tool's signing keys; platforms from dynamic registration (one
    # row an issuer and client_id, the PyLTI1p3 tool-config entry as JSON); the nonces handed
    # out at login with their state, expiry and whether a launch used them; each launch by a
    # user on a resource link (its session, roles, AGS lineitem); scores waiting for a
    # platform that was down.
    9: """
    CREATE TABLE lti_keys (
        kid TEXT PRIMARY KEY, pem TEXT NOT NULL, created {real} NOT NULL
    ){keyed};
    CREATE TABLE lti_platforms (
        issuer TEXT NOT NULL, client_id TEXT NOT NULL, body TEXT NOT NULL,
        created {real} NOT NULL, PRIMARY KEY (issuer, client_id)
    ){keyed};
    CREATE TABLE lti_nonces (
        nonce TEXT PRIMARY KEY, state TEXT NOT NULL, expires {real} NOT NULL,
        used INTEGER NOT NULL DEFAULT 0, target TEXT
    ){keyed};
    CREATE INDEX lti_nonces_expires ON lti_nonces (expires);
    CREATE TABLE lti_launches (
        issuer TEXT NOT NULL, deployment TEXT NOT NULL, link TEXT NOT NULL, sub TEXT NOT NULL,
        client_id TEXT NOT NULL, session TEXT NOT NULL, roles TEXT NOT NULL,
        lineitem TEXT, name TEXT, used {real} NOT NULL,
        PRIMARY KEY (issuer, deployment, link, sub)
    ){keyed};
    CREATE INDEX lti_launches_session ON lti_launches (session);
    CREATE TABLE lti_scores (
        id TEXT PRIMARY KEY, issuer TEXT NOT NULL, client_id TEXT NOT NULL,
        lineitem TEXT NOT NULL, body TEXT NOT NULL, tries {int} NOT NULL DEFAULT 0,
        due {real} NOT NULL
    ){keyed};
    CREATE INDEX lti_scores_due ON lti_scores (due);
    """,
    # prepared lessons (issue 29): a user's lesson document under its id, with its edit token's
    # SHA-256 (never the token); a student's last answer to a lesson's custom question
    10: """
    CREATE TABLE lessons (
        id TEXT PRIMARY KEY, body TEXT NOT NULL, edit_hash TEXT NOT NULL, created {real} NOT NULL
    ){keyed};
    CREATE TABLE lesson_answers (
        session TEXT NOT NULL, stop {int} NOT NULL, choices TEXT NOT NULL,
        correct INTEGER NOT NULL, PRIMARY KEY (session, stop)
    ){keyed};
    """,
}
SCHEMA = max(MIGRATIONS)


def statements(version: int, dialect: Dialect) -> list[str]:
    """Migration ``version``'s statements, in ``dialect``."""
    text = MIGRATIONS[version].format(
        int=dialect.int, real=dialect.real, blob=dialect.blob, keyed=dialect.keyed
    )
    return [s.strip() for s in text.split(";") if s.strip()]


class SchemaTooNew(Exception):
    """The database was written by a newer Loop Stepper: this one would misread its tables."""

    def __init__(self, found: int) -> None:
        super().__init__(
            f"the database's schema is version {found}, newer than this Loop Stepper's "
            f"({SCHEMA}): it was written by a newer release. Run that release, or restore a "
            "backup made by this one (loop-stepper restore FILE)."
        )
        self.found = found


def too_new(version: int) -> None:
    """Refuse a database from a newer release before touching it (both dialects)."""
    if version > SCHEMA:
        raise SchemaTooNew(version)
