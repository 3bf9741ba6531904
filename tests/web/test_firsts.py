"""A class's first clicks run once (issue 38): after one session of a setup ran its first line,
the other sessions of that setup, started as their log alone, answer their first line with its
event written and nothing built; what each then holds is bit for bit the Session its own Lab
has once built, and its next lines carry only their change."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.web.schemas import CreateSession
from app.web.setups import setup_of
from support.held import Holder
from support.serve import serve_app

MOONS = {"scenario": "moons", "seed": 41, "optimizer": {"kind": "sgd", "momentum": 0.5}}


@pytest.fixture()
def served() -> Iterator[tuple[str, Any]]:
    app = create_app(Settings(data=tempfile.mkdtemp(prefix="loop-stepper-firsts-")))
    with serve_app(app) as url:
        yield url, app.state


def started(state: Any, body: dict[str, Any], created: dict[str, Any]) -> dict[str, Any]:
    """A session of a setup created before, as ``POST /api/sessions`` starts one (its log
    alone) but before its warm-up could build it, as a class's are while it creates at once:
    its creation's answer is ``created``'s but the id."""
    sid = state.copies.start(setup_of(CreateSession(**body)))
    assert sid is not None and state.sessions.untouched(sid) is not None
    return {**created, "id": sid}


def comparable(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k not in ("id", "version")}


def create(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


def test_the_first_line_of_a_class_runs_once_and_each_holds_its_own_whole_session(
    served: tuple[str, Any],
) -> None:
    url, state = served
    with httpx.Client(base_url=url, timeout=30) as client:
        first = create(client, MOONS)  # built: its first line runs for real, and is kept
        others = [started(state, MOONS, first) for _ in range(6)]
        query: dict[str, str | int] = {"held": "start", "since": 0, "moment": 1}
        ran = client.post(f"/api/sessions/{first['id']}/next", params=query)
        assert ran.status_code == 200 and "unchanged" in ran.json()
        for k, created in enumerate(others):
            sid = created["id"]
            r = client.post(f"/api/sessions/{sid}/next", params=query)
            assert r.status_code == 200, r.text
            answer = r.json()
            # the shared path: nothing built, its event written, the kept answer with its id
            assert state.sessions.live(sid) is None and state.sessions.untouched(sid) is None
            assert answer["id"] == sid and answer["version"].endswith(".0")
            assert comparable(answer) == comparable(ran.json())
            holder = Holder(created)
            whole = holder.take(answer, "start")
            plain = client.get(f"/api/sessions/{sid}").json()  # built now: the line replayed
            assert comparable(whole) == comparable(plain)
            assert plain["moments"] == 1
            # sent again (its answer lost on the way): the same moment, nothing run twice
            again = client.post(f"/api/sessions/{sid}/next", params=query)
            assert again.status_code == 200 and again.json()["moments"] == 1
            # the next lines, holding the shared answer: only their change, and whole
            lines = ["loss", "zero_grad", "backward", "step"]
            for line in lines + ["forward", *lines] * (k % 2):
                sent = holder.newest
                r = client.post(f"/api/sessions/{sid}/{line}", params={"held": sent})
                answer = r.json()
                assert "unchanged" in answer, line
                whole = holder.take(answer, sent)
                assert comparable(whole) == comparable(client.get(f"/api/sessions/{sid}").json())


def test_another_first_line_and_a_question_are_their_own(served: tuple[str, Any]) -> None:
    url, state = served
    body = {**MOONS, "seed": 42}
    query: dict[str, str | int] = {"held": "start", "since": 0}
    with httpx.Client(base_url=url, timeout=30) as client:
        first = create(client, body)
        client.post(f"/api/sessions/{first['id']}/forward", params=query)
        other = started(state, body, first)
        # zero_grad first: not the line that was kept, so it runs on its own Lab
        r = client.post(f"/api/sessions/{other['id']}/zero_grad", params=query)
        assert state.sessions.live(other["id"]) is not None
        assert r.status_code == 200 and r.json()["last"]["line"] == "zero_grad"
        assert r.json()["iteration"] == 0 and r.json()["moments"] == 1
        # a self-study question's first line is never kept for the others
        quiz = create(client, {"quiz": True})
        client.post(f"/api/sessions/{quiz['id']}/next", params=query)
        plain = create(client, {"scenario": "neuron"})
        answer = client.post(f"/api/sessions/{plain['id']}/next", params=query).json()
        assert answer.get("quiz") is None and "program" in answer
