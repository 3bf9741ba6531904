"""A lecture's events as changes (``?changes=1``, issue 38): a follower that puts back what each
event left out from the event before has, after every change, the whole Session a follower
without ``changes`` gets; an event after a gap is whole again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from support.digits import DIGITS, MLP
from support.held import restore
from tests.web.test_lectures import Events, lecture, new

BODY = {"model": MLP, "data": DIGITS, "standardize": True, "batch_size": 64, "lr": 0.1}


@contextmanager
def follow(base: str, code: str, **params: Any) -> Iterator[Events]:
    with (
        httpx.Client(base_url=base, timeout=15) as c,
        c.stream("GET", f"/api/lectures/{code}/events", params=params) as r,
    ):
        assert r.status_code == 200
        yield Events(r.iter_lines())


def test_a_follower_of_changes_has_every_whole_session(client: httpx.Client, base_url: str) -> None:
    sid = new(client, **BODY)["id"]
    code = lecture(client, sid)
    with follow(base_url, code) as plain, follow(base_url, code, changes=1) as changes:
        _, first, whole = plain.next()
        _, first_too, held = changes.next()
        assert first == first_too and "unchanged" not in held["session"]
        assert held == whole
        session = held["session"]
        actions = [("POST", "next", None)] * 6 + [
            ("POST", "rewind", {"to": 2}),
            ("PATCH", "", {"lr": 0.05}),
            ("POST", "run", {"iterations": 1}),
            ("POST", "reset", None),
            ("POST", "forward", None),
        ]
        for method, path, body in actions:
            url = f"/api/sessions/{sid}/{path}".rstrip("/")
            assert client.request(method, url, json=body).status_code == 200
            _, n, whole = plain.next()
            _, m, change = changes.next()
            assert n == m
            if path in ("forward", "next"):
                assert "unchanged" in change["session"]
            session = restore(change["session"], session)
            assert {**change, "session": session} == whole, path


def test_a_change_is_small_and_a_follower_back_after_a_gap_catches_up(
    client: httpx.Client, base_url: str
) -> None:
    sid = new(client, **BODY)["id"]
    code = lecture(client, sid)
    with follow(base_url, code, changes=1) as changes:
        _, _, first = changes.next()
        session = first["session"]
        client.post(f"/api/sessions/{sid}/forward")
        _, last, forward = changes.next()
        assert forward["session"]["unchanged"] == [
            "params",
            "grad",
            "optimizer_state",
            "buffers",
            "spec",
        ]
        session = restore(forward["session"], session)
        whole = client.get(f"/api/lectures/{code}").json()
        assert len(json.dumps(forward)) * 10 < len(json.dumps(whole))
    for _ in range(4):  # missed while away
        client.post(f"/api/sessions/{sid}/next")
    with (
        httpx.Client(base_url=base_url, timeout=15) as c,
        c.stream(
            "GET",
            f"/api/lectures/{code}/events",
            params={"changes": 1},
            headers={"Last-Event-ID": str(last)},
        ) as r,
    ):
        resumed = Events(r.iter_lines())
        for _ in range(4):  # each one missed, as a change of the one before it
            _, n, event = resumed.next()
            assert n == last + 1
            last = n
            session = restore(event["session"], session)
    now = client.get(f"/api/lectures/{code}").json()
    assert {k: v for k, v in session.items() if k != "history"} == {
        k: v for k, v in now.items() if k != "history"
    }
