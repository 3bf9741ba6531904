"""Grades back to the LMS (LTI Assignment and Grade Services): a launched student's score
posted to their launch's line item, never in the click's path.

A prediction tells ``Grades.scored`` (session, asked, correct): it only appends to a queue.
The sender thread turns each into a score kept in the db (``lti_scores``: the launch's
lineitem, the AGS score JSON) and posts the due ones, oldest first, to ``<lineitem>/scores``
with a bearer token from the platform's client-credentials grant (a JWT assertion signed by
the tool's key, scope ``…/lti-ags/scope/score``), cached until it expires. A platform that is
down or refuses: its scores wait in the db and are tried again with a backoff (1 s, 2 s, 4 s…
up to 5 minutes), in the order they were given; after ``MAX_TRIES`` a score is dropped.
Several processes on one database may both send a score: AGS keeps the latest by timestamp.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import json
import logging
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from app.db import Database
from app.lti.config import Platform
from app.lti.keys import ToolKey

log = logging.getLogger("loop_stepper.lti")

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# the predict-first questions a setup's or snapshot's link counts (its line item's
# scoreMaximum): ten predictions, two iterations of the five lines; a lesson's link counts the
# lesson's own questions
QUESTIONS = 10
TIMEOUT = 10.0
MAX_ANSWER = 64 * 1024
POLL = 1.0  # seconds between looks at the db (scores another process kept)
BACKOFF = 1.0  # the first retry's wait, doubled each try up to BACKOFF_CAP
BACKOFF_CAP = 300.0
MAX_TRIES = 20
TOKEN_MARGIN = 30.0  # a token is used up to this many seconds before it expires


class PlatformError(Exception):
    """The platform did not take a request (down, refused, or answered nonsense)."""


def score_body(
    sub: str, asked: int, correct: int, maximum: int, when: float, completed: bool | None = None
) -> dict[str, Any]:
    """The AGS score of ``sub``: right answers so far out of ``maximum``; ``Completed`` once
    ``completed`` (by default: ``asked`` reached ``maximum``)."""
    done = asked >= maximum if completed is None else completed
    stamp = datetime.datetime.fromtimestamp(when, datetime.UTC).isoformat(timespec="milliseconds")
    return {
        "userId": sub,
        "scoreGiven": min(correct, maximum),
        "scoreMaximum": maximum,
        "activityProgress": "Completed" if done else "InProgress",
        "gradingProgress": "FullyGraded",
        "timestamp": stamp,
    }


def http_post(url: str, body: bytes, headers: dict[str, str]) -> bytes:
    """POST ``body``; the answer's body on a 2xx, else ``PlatformError``."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:  # an http(s) URL: the platform's config and its launches are checked for it
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return bytes(answer.read(MAX_ANSWER))
    except urllib.error.HTTPError as error:
        error.close()  # its socket
        raise PlatformError(f"{url} answered {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        raise PlatformError(f"{url}: {error}") from None


Post = Callable[[str, bytes, dict[str, str]], bytes]


def assertion(key: ToolKey, platform: Platform, now: float) -> str:
    """The client-credentials grant's JWT: the tool (its client_id) to the token endpoint."""
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.auth_token_url,
        "iat": int(now),
        "exp": int(now) + 300,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": key.kid})


@dataclass
class Token:
    bearer: str
    expires: float


class Grades:
    """The queue of scores, the platforms' tokens and the thread that sends."""

    def __init__(
        self,
        db: Database,
        key: ToolKey,
        platforms: Callable[[], list[Platform]],
        post: Post = http_post,
        clock: Callable[[], float] = time.time,
        backoff: float = BACKOFF,
    ) -> None:
        self.db, self.key, self._platforms = db, key, platforms
        self._post, self._clock, self.backoff = post, clock, backoff
        self._queue: collections.deque[tuple[str, int, int, int, bool | None, float]] = (
            collections.deque()
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._tokens: dict[tuple[str, str], Token] = {}
        self._thread: threading.Thread | None = None
        self._given = itertools.count()

    # -- in the click's path: only a note --------------------------------------------------

    def scored(
        self,
        session: str,
        asked: int,
        correct: int,
        maximum: int = QUESTIONS,
        completed: bool | None = None,
    ) -> None:
        """``session``'s score now: ``correct`` of ``maximum`` (``asked`` answered); a lesson
        says ``maximum`` (its questions) and ``completed`` (at its last stop)."""
        self._queue.append((session, asked, correct, maximum, completed, self._clock()))
        self._wake.set()

    # -- the sender ------------------------------------------------------------------------

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="lti-grades", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the sender; what is still queued is kept in the db (sent after a restart)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT * 2)
            self._thread = None
        try:
            self.keep()
        except Exception:  # the db closing: those scores are lost, the predictions are not
            log.exception("LTI grades: the queue could not be kept at shutdown")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.keep()
                self.send_due()
            except Exception:  # the db away a moment: try again at the next round
                log.exception("LTI grades: a round failed")
            self._wake.wait(POLL)
            self._wake.clear()

    def keep(self) -> int:
        """The queued scores of launched sessions into the db; the number kept."""
        kept = 0
        while self._queue:
            session, asked, correct, maximum, completed, when = self._queue.popleft()
            launch = self.db.lti_launch_of(session)
            if launch is None or launch.lineitem is None:
                continue  # not an LMS's session, or a link without a line item
            body = score_body(launch.sub, asked, correct, maximum, when, completed)
            # sorts by when, then by the order given (two in one microsecond)
            score_id = f"{when:.6f}-{next(self._given):012d}-{secrets.token_hex(6)}"
            self.db.add_lti_score(
                score_id, launch.issuer, launch.client_id, launch.lineitem, json.dumps(body), when
            )
            kept += 1
        return kept

    def send_due(self) -> int:
        """Post the due scores, oldest first; a platform that fails has all of its due
        scores moved to the same later time (so they keep their order). The number sent."""
        due = sorted(self.db.due_lti_scores(), key=lambda s: s.id)
        down: dict[tuple[str, str], float] = {}
        sent = 0
        for score in due:
            which = (score.issuer, score.client_id)
            if which in down:
                self.db.lti_score_failed(score.id, down[which])
                continue
            try:
                self._send(score.issuer, score.client_id, score.lineitem, score.body)
            except PlatformError as error:
                wait = min(BACKOFF_CAP, self.backoff * 2**score.tries)
                log.warning(
                    "LTI score for %s not sent (try %d): %s", score.issuer, score.tries + 1, error
                )
                if score.tries + 1 >= MAX_TRIES:
                    self.db.lti_score_sent(score.id)  # given up: dropped
                    continue
                down[which] = self._clock() + wait
                self.db.lti_score_failed(score.id, down[which])
                continue
            self.db.lti_score_sent(score.id)
            sent += 1
        return sent

    def _send(self, issuer: str, client_id: str, lineitem: str, body: str) -> None:
        platform = next(
            (p for p in self._platforms() if p.issuer == issuer and p.client_id == client_id),
            None,
        )
        if platform is None:
            raise PlatformError(f"the platform {issuer!r} ({client_id}) is no longer configured")
        bearer = self.token(platform)
        parts = urllib.parse.urlsplit(lineitem)
        url = urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))
        headers = {"Content-Type": SCORE_TYPE, "Authorization": f"Bearer {bearer}"}
        try:
            self._post(url, body.encode(), headers)
        except PlatformError:
            self._tokens.pop((platform.issuer, platform.client_id), None)  # maybe refused it
            raise

    def token(self, platform: Platform) -> str:
        """A bearer token for the score scope, from the cache until it (nearly) expires."""
        which = (platform.issuer, platform.client_id)
        now = self._clock()
        cached = self._tokens.get(which)
        if cached is not None and cached.expires > now:
            return cached.bearer
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion(self.key, platform, now),
            "scope": SCORE_SCOPE,
        }
        answer = self._post(
            platform.auth_token_url,
            urllib.parse.urlencode(form).encode(),
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        )
        try:
            data = json.loads(answer)
            bearer, life = data["access_token"], float(data.get("expires_in", 3600))
        except (ValueError, KeyError, TypeError):
            raise PlatformError("the token endpoint's answer is not a token") from None
        if not isinstance(bearer, str) or not bearer:
            raise PlatformError("the token endpoint's answer is not a token")
        self._tokens[which] = Token(bearer, now + max(0.0, life - TOKEN_MARGIN))
        return bearer
