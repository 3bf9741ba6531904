"""The grades' sender (AGS) over a real store, against a scripted platform (the HTTP POST
replaced, everything else real: the tool's key signs, the db keeps): the token asked once and
reused until it expires, a failure moves a platform's scores later in their order, a refused
token is asked again, a score given up after its tries, a shutdown keeps what was queued."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from app.db import Database, StoredLaunch
from app.lti.config import Platform
from app.lti.grades import MAX_TRIES, SCORE_SCOPE, SCORE_TYPE, Grades, PlatformError
from app.lti.keys import ToolKey

ISSUER = "https://lms.example"
PLATFORM = Platform(
    ISSUER, "c1", f"{ISSUER}/auth", f"{ISSUER}/token", f"{ISSUER}/jwks", ("d1",), True
)
KEY = ToolKey.made()


class Platformish:
    """Answers the tool's POSTs as a platform would; ``down`` refuses them all."""

    def __init__(self) -> None:
        self.now = time.time()  # the assertions' iat and exp are real times
        self.down = False
        self.grants: list[dict[str, str]] = []
        self.scores: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.expires_in = 3600

    def clock(self) -> float:
        return self.now

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> bytes:
        if self.down:
            raise PlatformError(f"{url} answered 503")
        if url == PLATFORM.auth_token_url:
            form = dict(urllib.parse.parse_qsl(body.decode()))
            self.grants.append(form)
            n = len(self.grants)
            return json.dumps({"access_token": f"t{n}", "expires_in": self.expires_in}).encode()
        self.scores.append((url, json.loads(body), headers))
        return b""


@pytest.fixture()
def setup(make_db: Callable[..., Database]) -> tuple[Database, Platformish, Grades]:
    db = make_db()
    lms = Platformish()
    for n in (1, 2):
        db.save_lti_launch(
            StoredLaunch(
                ISSUER,
                "d1",
                f"l{n}",
                f"u{n}",
                "c1",
                f"s{n}",
                ("Learner",),
                f"{ISSUER}/li/{n}",
                None,
            )
        )
    db.clock = lms.clock  # type: ignore[attr-defined]  # the scores' due times
    grades = Grades(db, KEY, lambda: [PLATFORM], lms.post, lms.clock)
    return db, lms, grades


def due(db: Database) -> int:
    return len(db.due_lti_scores())


def test_scores_go_to_the_lineitem_with_one_cached_token(
    setup: tuple[Database, Platformish, Grades],
) -> None:
    db, lms, grades = setup
    grades.scored("s1", 1, 1)
    grades.scored("s2", 1, 0)
    grades.scored("not-launched", 1, 1)  # a session without the LMS: nothing
    assert grades.keep() == 2 and grades.send_due() == 2 and due(db) == 0
    assert [(u, b["userId"], b["scoreGiven"]) for u, b, _ in lms.scores] == [
        (f"{ISSUER}/li/1/scores", "u1", 1),
        (f"{ISSUER}/li/2/scores", "u2", 0),
    ]
    assert lms.scores[0][2] == {"Content-Type": SCORE_TYPE, "Authorization": "Bearer t1"}
    assert len(lms.grants) == 1
    grant = lms.grants[0]
    assert grant["grant_type"] == "client_credentials" and grant["scope"] == SCORE_SCOPE
    claims = jwt.decode(
        grant["client_assertion"], KEY.private.public_key(), algorithms=["RS256"],
        audience=PLATFORM.auth_token_url,
    )  # fmt: skip
    assert claims["iss"] == claims["sub"] == "c1" and claims["exp"] - claims["iat"] == 300
    lms.now += 3600 - 31  # still good (30 s margin)
    grades.scored("s1", 2, 2)
    grades.keep()
    grades.send_due()
    assert len(lms.grants) == 1 and lms.scores[-1][2]["Authorization"] == "Bearer t1"
    lms.now += 2  # within the margin: a new token
    grades.scored("s1", 3, 2)
    grades.keep()
    grades.send_due()
    assert len(lms.grants) == 2 and lms.scores[-1][2]["Authorization"] == "Bearer t2"


def test_a_platform_down_gets_its_scores_later_in_order(
    setup: tuple[Database, Platformish, Grades],
) -> None:
    db, lms, grades = setup
    grades.backoff = 1.0
    lms.down = True
    for n in range(1, 4):
        lms.now += 1
        grades.scored("s1", n, n)
    grades.keep()
    assert grades.send_due() == 0 and due(db) == 0  # all moved to 1 s later
    lms.now += 1
    assert grades.send_due() == 0  # the second try: 2 s later
    lms.now += 1.5
    assert grades.send_due() == 0 and lms.scores == []  # not due yet: nothing tried
    lms.down = False
    lms.now += 1
    assert grades.send_due() == 3
    assert [b["scoreGiven"] for _, b, _ in lms.scores] == [1, 2, 3]
    stamps = [b["timestamp"] for _, b, _ in lms.scores]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


def test_a_score_is_given_up_after_its_tries(
    setup: tuple[Database, Platformish, Grades],
) -> None:
    db, lms, grades = setup
    grades.backoff = 0.001
    lms.down = True
    grades.scored("s1", 1, 1)
    grades.keep()
    for _ in range(MAX_TRIES):
        lms.now += 1000
        grades.send_due()
    lms.now += 1000
    assert db.due_lti_scores() == []
    lms.down = False
    assert grades.send_due() == 0 and lms.scores == []


def test_a_refused_token_answer_and_a_shutdown(setup: tuple[Database, Platformish, Grades]) -> None:
    db, lms, grades = setup
    real = lms.post

    def no_token(url: str, body: bytes, headers: dict[str, str]) -> bytes:
        return b"<html>" if url == PLATFORM.auth_token_url else real(url, body, headers)

    grades._post = no_token
    grades.scored("s1", 1, 1)
    grades.keep()
    assert grades.send_due() == 0 and lms.scores == []
    grades._post = real
    lms.now += 10
    assert grades.send_due() == 1
    grades.scored("s2", 1, 1)  # queued, then the server stops before the sender's round
    grades.stop()
    assert len(db.due_lti_scores()) == 1  # kept: sent after the restart
