"""LTI 1.3 (issue 30): what the tool keeps of an LMS (migration 9). The same SQL on both
dialects, mixed into both databases over their ``_tx`` and ``_read``; what it means is
``app/lti/``.

- ``lti_keys``: the tool's RSA signing key (PEM), made at first start. Several processes
  starting at once may each make one: every one keeps the oldest row, so they all sign with it.
- ``lti_platforms``: platforms added by dynamic registration (a tool-config entry as JSON).
- ``lti_nonces``: each nonce handed out at login, with its state and expiry; a launch uses it
  once (``use_lti_nonce``). Expired ones are deleted at the next login.
- ``lti_launches``: one row a user (``sub``) on a resource link of a deployment: their session,
  roles, the AGS lineitem and a name when given. A second launch finds the same session.
- ``lti_scores``: scores for a platform that was down, retried at ``due`` (``tries`` so far);
  sent, a score's row is deleted (AGS, the second round).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from app.db.sql import Cursor


@dataclass(frozen=True)
class StoredLaunch:
    """A user's launch on a resource link, as kept."""

    issuer: str
    deployment: str
    link: str
    sub: str
    client_id: str
    session: str
    roles: tuple[str, ...]
    lineitem: str | None
    name: str | None


@dataclass(frozen=True)
class PendingScore:
    """A score kept for its platform: the AGS score JSON (``body``) for ``lineitem``."""

    id: str
    issuer: str
    client_id: str
    lineitem: str
    body: str
    tries: int


_LAUNCH = "issuer, deployment, link, sub, client_id, session, roles, lineitem, name"


def _launch(row: tuple[str | None, ...]) -> StoredLaunch:
    issuer, deployment, link, sub, client_id, session = (str(v) for v in row[:6])
    roles = tuple(str(r) for r in json.loads(str(row[6])))
    return StoredLaunch(issuer, deployment, link, sub, client_id, session, roles, row[7], row[8])


class LtiTables:
    clock: Callable[[], float]

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    def lti_key(self, make: Callable[[], tuple[str, str]]) -> tuple[str, str]:
        """The tool's key (kid, PEM): the oldest kept, or ``make()``'s, kept now if there is
        none (made inside the transaction: only ever at a first start)."""
        with self._tx() as db:
            found = db.execute("SELECT kid, pem FROM lti_keys ORDER BY created, kid").fetchone()
            if found is None:
                found = make()
                db.execute(
                    "INSERT INTO lti_keys (kid, pem, created) VALUES (?, ?, ?) "
                    "ON CONFLICT (kid) DO NOTHING",
                    (found[0], found[1], self.clock()),
                )
                found = db.execute("SELECT kid, pem FROM lti_keys ORDER BY created, kid").fetchone()
        return str(found[0]), str(found[1])

    def lti_platforms(self) -> list[tuple[str, str, str]]:
        """(issuer, client_id, tool-config entry as JSON) of each registered platform."""
        with self._read() as db:
            rows = db.execute(
                "SELECT issuer, client_id, body FROM lti_platforms ORDER BY created"
            ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    def save_lti_platform(self, issuer: str, client_id: str, body: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO lti_platforms (issuer, client_id, body, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (issuer, client_id) DO UPDATE SET body = excluded.body",
                (issuer, client_id, body, self.clock()),
            )

    def add_lti_nonce(
        self, nonce: str, state: str, expires: float, target: str | None = None
    ) -> None:
        """Hand out ``nonce`` for the login of ``state`` (``target``: the platform's storage
        frame, when it offered one); forget the expired ones."""
        with self._tx() as db:
            db.execute("DELETE FROM lti_nonces WHERE expires < ?", (self.clock(),))
            db.execute(
                "INSERT INTO lti_nonces (nonce, state, expires, target) VALUES (?, ?, ?, ?)",
                (nonce, state, expires, target),
            )

    def lti_storage_target(self, state: str) -> str | None:
        """The storage frame the login of ``state`` was offered, if any (unused, unexpired)."""
        with self._read() as db:
            row = db.execute(
                "SELECT target FROM lti_nonces WHERE state = ? AND used = 0 AND expires >= ?",
                (state, self.clock()),
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def use_lti_nonce(self, nonce: str, state: str) -> bool:
        """True once: ``nonce`` was handed out with ``state``, has not expired and no launch
        used it before (the one UPDATE decides, whichever process asks)."""
        with self._tx() as db:
            done = db.execute(
                "UPDATE lti_nonces SET used = 1 "
                "WHERE nonce = ? AND state = ? AND used = 0 AND expires >= ?",
                (nonce, state, self.clock()),
            )
            return done.rowcount == 1

    def lti_launch(self, issuer: str, deployment: str, link: str, sub: str) -> StoredLaunch | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_LAUNCH} FROM lti_launches "
                "WHERE issuer = ? AND deployment = ? AND link = ? AND sub = ?",
                (issuer, deployment, link, sub),
            ).fetchone()
        return None if row is None else _launch(tuple(row))

    def lti_launch_of(self, session: str) -> StoredLaunch | None:
        """The launch that made ``session``, or None (a session made without an LMS)."""
        with self._read() as db:
            row = db.execute(
                f"SELECT {_LAUNCH} FROM lti_launches WHERE session = ?", (session,)
            ).fetchone()
        return None if row is None else _launch(tuple(row))

    def save_lti_launch(self, launch: StoredLaunch) -> None:
        """Keep ``launch`` (a relaunch updates its session, roles, lineitem and name)."""
        with self._tx() as db:
            db.execute(
                f"INSERT INTO lti_launches ({_LAUNCH}, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (issuer, deployment, link, sub) DO UPDATE SET "
                "client_id = excluded.client_id, session = excluded.session, "
                "roles = excluded.roles, lineitem = excluded.lineitem, name = excluded.name, "
                "used = excluded.used",
                (
                    launch.issuer,
                    launch.deployment,
                    launch.link,
                    launch.sub,
                    launch.client_id,
                    launch.session,
                    json.dumps(list(launch.roles)),
                    launch.lineitem,
                    launch.name,
                    self.clock(),
                ),
            )

    # -- scores for a platform that was down (AGS, the second round) -----------------------

    def add_lti_score(
        self, score_id: str, issuer: str, client_id: str, lineitem: str, body: str, due: float
    ) -> None:
        """Keep a score to post to ``lineitem`` at ``due`` (a second add of an id: nothing)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO lti_scores (id, issuer, client_id, lineitem, body, due) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (score_id, issuer, client_id, lineitem, body, due),
            )

    def due_lti_scores(self, limit: int = 100) -> list[PendingScore]:
        """The scores due now, the longest waiting first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, issuer, client_id, lineitem, body, tries FROM lti_scores "
                "WHERE due <= ? ORDER BY due, id LIMIT ?",
                (self.clock(), limit),
            ).fetchall()
        return [
            PendingScore(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]))
            for r in rows
        ]

    def lti_score_sent(self, score_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM lti_scores WHERE id = ?", (score_id,))

    def lti_score_failed(self, score_id: str, due: float) -> None:
        """The platform refused or was down: one try more, the next at ``due``."""
        with self._tx() as db:
            db.execute(
                "UPDATE lti_scores SET tries = tries + 1, due = ? WHERE id = ?", (due, score_id)
            )
