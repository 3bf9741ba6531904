"""LTI 1.3's tables (migration 9) on SQLite and PostgreSQL: the tool's key kept once, a
nonce used once, a launch found again, registered platforms kept."""

from __future__ import annotations

import time
from collections.abc import Callable

from app.db import Database, StoredLaunch
from app.lti.keys import ToolKey, tool_key


def test_the_key_is_made_once_and_kept(make_db: Callable[..., Database]) -> None:
    first = tool_key(make_db("k"))
    again = tool_key(make_db("k"))  # another process on the same store, or a restart
    assert again.kid == first.kid and again.jwk() == first.jwk()
    assert make_db("k").lti_key(lambda: ("other", "pem")) == (first.kid, first.pem())
    other = ToolKey.made()
    assert tool_key(make_db("elsewhere")).kid != other.kid


def test_a_nonce_is_used_once_with_its_state(make_db: Callable[..., Database]) -> None:
    db = make_db()
    now = time.time()
    db.add_lti_nonce("n1", "s1", now + 600, "_parent")
    db.add_lti_nonce("n2", "s2", now - 1)  # expired
    assert db.lti_storage_target("s1") == "_parent" and db.lti_storage_target("s2") is None
    assert db.use_lti_nonce("n1", "s2") is False  # another login's state
    assert db.use_lti_nonce("n1", "s1") is True
    assert db.use_lti_nonce("n1", "s1") is False  # replayed
    assert db.lti_storage_target("s1") is None  # used: no storage page for it any more
    assert db.use_lti_nonce("n2", "s2") is False
    assert db.use_lti_nonce("never", "s1") is False
    db.add_lti_nonce("n3", "s3", now + 600)  # the expired one is deleted now
    assert make_db().use_lti_nonce("n3", "s3") is True  # another process sees it


def test_launches_and_platforms(make_db: Callable[..., Database]) -> None:
    db = make_db()
    roles = ("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",)
    launch = StoredLaunch(
        "https://lms",
        "d1",
        "link",
        "sub-1",
        "c1",
        "sess-1",
        roles,
        "https://lms/lineitems/7",
        "Ada",
    )
    assert db.lti_launch("https://lms", "d1", "link", "sub-1") is None
    db.save_lti_launch(launch)
    assert db.lti_launch("https://lms", "d1", "link", "sub-1") == launch
    assert db.lti_launch_of("sess-1") == launch and db.lti_launch_of("sess-2") is None
    moved = StoredLaunch("https://lms", "d1", "link", "sub-1", "c1", "sess-2", (), None, None)
    db.save_lti_launch(moved)  # the session was swept: the relaunch's new one replaces it
    assert db.lti_launch("https://lms", "d1", "link", "sub-1") == moved
    assert db.lti_launch_of("sess-1") is None
    db.save_lti_platform("https://lms", "c9", '{"client_id": "c9"}')
    db.save_lti_platform("https://lms", "c9", '{"client_id": "c9", "x": 1}')
    assert db.lti_platforms() == [("https://lms", "c9", '{"client_id": "c9", "x": 1}')]


def test_scores_wait_for_their_platform(make_db: Callable[..., Database]) -> None:
    db = make_db()
    now = time.time()
    body = '{"userId":"sub-1","scoreGiven":1,"scoreMaximum":2}'
    db.add_lti_score("s1", "https://lms", "c1", "https://lms/lineitems/7", body, now - 5)
    db.add_lti_score("s2", "https://lms", "c1", "https://lms/lineitems/7", body, now + 600)
    db.add_lti_score("s1", "https://lms", "c1", "https://lms/lineitems/7", "{}", now)  # again
    due = db.due_lti_scores()
    assert [(s.id, s.lineitem, s.body, s.tries) for s in due] == [
        ("s1", "https://lms/lineitems/7", body, 0)
    ]
    db.lti_score_failed("s1", now + 30)  # the platform is down: later
    assert db.due_lti_scores() == []
    db.lti_score_failed("s1", now - 1)
    assert [(s.id, s.tries) for s in make_db().due_lti_scores()] == [("s1", 2)]
    db.lti_score_sent("s1")
    assert db.due_lti_scores() == [] and db.due_lti_scores(limit=0) == []
