"""Lectures over HTTP: join codes, the followers' Session and its events (SSE, resumed with
Last-Event-ID across a restart), fork, questions and their bounds, self-study."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from app.lectures.lecture import ALPHABET
from app.lectures.quizzes import BURST, HIDDEN, MAX_VOTERS
from app.settings import Settings
from support.serve import schema_url, serve

FOLLOWER_SKIP = {"id", "quiz", "prediction"}


def new(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    data: dict[str, Any] = r.json()
    return data


def lecture(client: httpx.Client, sid: str) -> str:
    r = client.post(f"/api/sessions/{sid}/lecture")
    assert r.status_code == 201, r.text
    code: str = r.json()["code"]
    assert r.json()["url"] == f"/l/{code}"
    return code


def same(instructor: dict[str, Any], follower: dict[str, Any]) -> None:
    """The follower's Session is the instructor's minus the id (and the history it has, and
    what a question hides)."""
    skip = FOLLOWER_SKIP | {"history"} | (set(HIDDEN) - set(follower))  # during a question
    assert "id" not in follower
    assert {k: v for k, v in instructor.items() if k not in skip} == {
        k: v for k, v in follower.items() if k not in skip
    }


class Events:
    """An SSE client: each `session` event as (id, payload), keeping the follower's history."""

    def __init__(self, lines: Iterator[str]) -> None:
        self.lines = lines
        self.history: list[dict[str, Any]] = []
        self.comments = 0

    def next(self) -> tuple[str, int, dict[str, Any]]:
        fields: dict[str, str] = {}
        for line in self.lines:
            if line == "":
                if fields:
                    break
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            key, _, value = line.partition(": ")
            fields[key] = value
        kind = fields.get("event", "message")
        data = json.loads(fields["data"])
        if kind == "session":
            since = data["since"]
            self.history = [p for p in self.history if p["n"] < since] + data["session"]["history"]
            data["session"]["history"] = self.history
        return kind, int(fields.get("id", "0") or 0), data


@contextmanager
def follow(base: str, code: str, last: int | None = None) -> Iterator[Events]:
    headers = {} if last is None else {"Last-Event-ID": str(last)}
    with (
        httpx.Client(base_url=base, timeout=15) as c,
        c.stream("GET", f"/api/lectures/{code}/events", headers=headers) as r,
    ):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        yield Events(r.iter_lines())


def test_a_lecture_is_followed_live_with_only_new_history(
    client: httpx.Client, base_url: str
) -> None:
    s = new(client)
    sid = s["id"]
    code = lecture(client, sid)
    assert len(code) == 7 and set(code) <= set(ALPHABET)  # 32**7: 35 bits
    assert not set(code) & set("0O1I")
    assert lecture(client, sid) == code  # one lecture a session
    follower = client.get(f"/api/lectures/{code}").json()
    same(s, follower)
    assert client.get(f"/api/lectures/{code.lower()}").status_code == 200  # typed in lower case
    with follow(base_url, code) as events:
        kind, first, data = events.next()  # the whole Session first
        assert kind == "session" and data["since"] == 0
        same(s, data["session"])
        answers = []
        for _ in range(10):
            answers.append(client.post(f"/api/sessions/{sid}/next").json())
            kind, n, data = events.next()
            assert n == first + len(answers)  # one event a change, numbered
            same(answers[-1], data["session"])
            assert data["session"]["history"] == answers[-1]["history"]
            # a history point is sent once: the event carries only the new ones
        assert data["since"] == 2 and len(answers[-1]["history"]) == 2  # step: no new point
        r = client.post(f"/api/sessions/{sid}/rewind", json={"to": 3})
        _, n, data = events.next()
        same(r.json(), data["session"])
        assert data["session"]["history"] == r.json()["history"] == answers[1]["history"]
        r = client.patch(f"/api/sessions/{sid}", json={"lr": 0.05})
        _, n2, data = events.next()
        assert n2 == n + 1 and data["session"]["lr"] == 0.05
        client.get(f"/api/sessions/{sid}")  # reading changes nothing: no event
        client.get(f"/api/sessions/{sid}/timeline")
        r = client.post(f"/api/sessions/{sid}/reset")
        _, n3, data = events.next()
        assert n3 == n2 + 1 and data["since"] == 0 and data["session"]["history"] == []
        same(r.json(), data["session"])
        assert client.get(f"/api/sessions/{sid}/quiz").json()["followers"] == 1
    deadline = time.monotonic() + 5  # the follower left: the count drops
    while (
        client.get(f"/api/sessions/{sid}/quiz").json()["followers"] and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert client.get(f"/api/sessions/{sid}/quiz").json() == {
        "choices": {},
        "answers": 0,
        "followers": 0,
        "revealed": False,
        "answer": None,
        "explanation": None,
    }
    assert client.delete(f"/api/sessions/{sid}/lecture").status_code == 204
    assert client.get(f"/api/lectures/{code}").status_code == 404
    assert client.get(f"/api/lectures/{code}/events").status_code == 404
    assert client.delete(f"/api/sessions/{sid}/lecture").status_code == 404
    assert client.post(f"/api/sessions/{sid}/next").json()["moment"] == 1  # still drives


def test_a_follower_cannot_drive(client: httpx.Client) -> None:
    sid = new(client)["id"]
    code = lecture(client, sid)
    for method, path, body in [
        ("GET", "", None),
        ("PATCH", "", {"lr": 1.0}),
        ("DELETE", "", None),
        ("POST", "/next", None),
        ("POST", "/forward", None),
        ("POST", "/run", {"iterations": 1}),
        ("POST", "/reset", None),
        ("POST", "/rewind", {"to": 0}),
        ("POST", "/back", None),
        ("GET", "/timeline", None),
        ("POST", "/snapshot", None),
        ("GET", "/script", None),
        ("GET", "/output", None),
        ("POST", "/lecture", None),
        ("DELETE", "/lecture", None),
        ("POST", "/quiz", {"choices": ["correct", "zeros"]}),
        ("GET", "/quiz", None),
        ("POST", "/quiz/reveal", None),
    ]:
        for key in (code, code.lower()):
            r = client.request(method, f"/api/sessions/{key}{path}", json=body)
            assert r.status_code in (404, 409), (method, path, r.text)
            if r.status_code == 409:  # the quiz routes: no lecture runs on a session "code"
                assert "no lecture" in r.json()["detail"]
            else:
                assert "detail" in r.json()
    assert client.get(f"/api/sessions/{sid}").json()["moment"] == 0  # nothing moved
    assert client.get("/api/lectures/ABCDEFG").status_code == 404
    assert client.get(f"/api/lectures/{sid}").status_code == 404  # nor the id as a code


def test_a_question_hides_the_program_counts_and_reveals(
    client: httpx.Client, base_url: str
) -> None:
    sid = new(client, program=["forward", "loss", "backward", "step"])["id"]  # skip_zero_grad
    code = lecture(client, sid)
    r = client.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"})
    assert r.status_code == 409 and "no question" in r.json()["detail"]
    with follow(base_url, code) as events:
        events.next()
        choices = ["correct", "skip_zero_grad", "step_first"]
        r = client.post(f"/api/sessions/{sid}/quiz", json={"choices": choices})
        assert r.status_code == 201
        assert r.json()["choices"] == dict.fromkeys(choices, 0) and r.json()["followers"] == 1
        _, _, data = events.next()  # the question is a change too
        shown = data["session"]
        assert not set(HIDDEN) & set(shown)
        assert shown["quiz"] == {
            "choices": choices,
            "revealed": False,
            "answer": None,
            "explanation": None,
        }
        got = client.get(f"/api/lectures/{code}").json()
        assert not set(HIDDEN) & set(got) and "forward" not in json.dumps(got["quiz"])
        assert client.get(f"/api/sessions/{sid}").json()["program"][2] == "backward"  # owner
        client.post(f"/api/sessions/{sid}/next")
        _, _, data = events.next()
        assert not set(HIDDEN) & set(data["session"])
        assert client.post(f"/api/lectures/{code}/fork").status_code == 409
        a = client.post(f"/api/lectures/{code}/answers", json={"choice": "correct"}).json()
        b = client.post(f"/api/lectures/{code}/answers", json={"choice": "step_first"}).json()
        r = client.post(
            f"/api/lectures/{code}/answers", json={"choice": "skip_zero_grad", "voter": a["voter"]}
        )
        assert r.json() == a  # the same voter: replaced
        assert a["voter"] != b["voter"]
        bad = client.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"})
        assert bad.status_code == 422
        tally = client.get(f"/api/sessions/{sid}/quiz").json()
        assert tally["choices"] == {"correct": 0, "skip_zero_grad": 1, "step_first": 1}
        assert (tally["answers"], tally["followers"], tally["revealed"]) == (2, 1, False)
        r = client.post(f"/api/sessions/{sid}/quiz/reveal")
        assert r.json()["answer"] == "skip_zero_grad" and r.json()["revealed"] is True
        _, _, data = events.next()
        shown = data["session"]
        assert shown["program"] == ["forward", "loss", "backward", "step"]
        assert shown["preset"] == "skip_zero_grad" and shown["quiz"]["answer"] == "skip_zero_grad"
        assert "adds into .grad" in shown["quiz"]["explanation"]
    late = client.post(f"/api/lectures/{code}/answers", json={"choice": "correct"})
    assert late.status_code == 409  # revealed: no longer open


def test_answers_are_bounded(client: httpx.Client) -> None:
    sid = new(client)["id"]
    code = lecture(client, sid)
    client.post(f"/api/sessions/{sid}/quiz", json={"choices": ["correct", "zeros"]})
    voter = client.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"}).json()["voter"]
    codes = [
        client.post(
            f"/api/lectures/{code}/answers", json={"choice": "correct", "voter": voter}
        ).status_code
        for _ in range(int(BURST) + 2)
    ]
    assert codes[: int(BURST) - 1] == [200] * (int(BURST) - 1) and codes[-1] == 429
    for _ in range(MAX_VOTERS - 1):  # new voters up to the cap
        r = client.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"})
        assert r.status_code == 200
    r = client.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"})
    assert r.status_code == 429 and str(MAX_VOTERS) in r.json()["detail"]
    tally = client.get(f"/api/sessions/{sid}/quiz").json()
    assert tally["answers"] == MAX_VOTERS
    assert tally["choices"] == {"correct": 1, "zeros": MAX_VOTERS - 1}


def test_fork_gives_a_private_session_at_the_lectures_moment(client: httpx.Client) -> None:
    sid = new(client)["id"]
    code = lecture(client, sid)
    for _ in range(7):
        now = client.post(f"/api/sessions/{sid}/next").json()
    r = client.post(f"/api/lectures/{code}/fork")
    assert r.status_code == 201
    mine = r.json()
    assert mine["id"] not in (sid, code)
    assert (mine["moment"], mine["moments"]) == (7, 7)
    assert mine["params"] == now["params"] and mine["history"] == now["history"]
    client.post(f"/api/sessions/{sid}/next")  # the lecture moves on; mine stays
    assert client.get(f"/api/sessions/{mine['id']}").json()["moment"] == 7
    back = client.post(f"/api/sessions/{mine['id']}/rewind", json={"to": 4}).json()
    assert back["params"][0]["grad"] == [[-23.5]]  # its past is there to rewind into
    assert client.get(f"/api/lectures/{code}").json()["moment"] == 8


def test_self_study_question(client: httpx.Client) -> None:
    s = new(client, quiz=True)
    assert not set(HIDDEN) & set(s)
    assert s["quiz"]["revealed"] is False and "correct" in s["quiz"]["choices"]
    sid = s["id"]
    again = client.post(f"/api/sessions/{sid}/next").json()
    assert not set(HIDDEN) & set(again)
    r = client.post(f"/api/sessions/{sid}/quiz/answer", json={"choice": "correct"})
    answer = r.json()
    assert answer["correct"] is False and answer["preset"] != "correct"
    assert answer["explanation"]
    shown = client.get(f"/api/sessions/{sid}").json()
    assert shown["preset"] == answer["preset"] and shown["quiz"]["answer"] == answer["preset"]
    assert client.post("/api/sessions", json={"quiz": True, "program": ["forward"]}).status_code
    r = client.post(f"/api/sessions/{new(client)['id']}/quiz/answer", json={"choice": "zeros"})
    assert r.status_code == 409


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_followers_resume_across_a_restart_and_miss_nothing(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """On either store: the lecture, its events, question and answers outlive the server."""
    data = tempfile.mkdtemp(prefix="loop-stepper-lecture-")
    url = ""
    if kind == "postgres":
        url = schema_url(request.getfixturevalue("postgres_url"), f"lecture_{os.getpid()}")
    settings = Settings(data=data, database_url=url)
    with serve(settings) as base, httpx.Client(base_url=base, timeout=15) as c:
        sid = new(c)["id"]
        code = lecture(c, sid)
        c.post(f"/api/sessions/{sid}/quiz", json={"choices": ["correct", "zeros"]})
        voter = c.post(f"/api/lectures/{code}/answers", json={"choice": "zeros"}).json()["voter"]
        with follow(base, code) as events:
            _, last, _ = events.next()
            for _ in range(3):
                answer = c.post(f"/api/sessions/{sid}/next").json()
                _, last, got = events.next()
            same(answer, got["session"])
            history = events.history
        # three more changes the follower does not see (its connection is gone)
        missed = [c.post(f"/api/sessions/{sid}/next").json() for _ in range(3)]
    with serve(settings) as base, httpx.Client(base_url=base, timeout=15) as c:
        more = [c.post(f"/api/sessions/{sid}/next").json() for _ in range(2)]
        with follow(base, code, last) as events:
            events.history = history
            seen = [events.next() for _ in range(5)]
            assert [n for _, n, _ in seen] == list(range(last + 1, last + 6))  # none missed
            for (_, _, got), answer in zip(seen, missed + more, strict=True):
                same(answer, got["session"])
                assert got["session"]["history"] == answer["history"]
                assert not set(HIDDEN) & set(got["session"])  # the question is still open
        tally = c.get(f"/api/sessions/{sid}/quiz").json()
        assert tally["choices"] == {"correct": 0, "zeros": 1}
        r = c.post(f"/api/lectures/{code}/answers", json={"choice": "correct", "voter": voter})
        assert r.json()["voter"] == voter
        assert c.get(f"/api/sessions/{sid}/quiz").json()["choices"] == {"correct": 1, "zeros": 0}


def test_keepalive_and_the_end_of_a_lecture() -> None:
    settings = Settings(
        data=tempfile.mkdtemp(prefix="loop-stepper-lecture-"),
        lecture_keepalive=0.2,
        lecture_hours=1.5 / 3600,  # 1.5 s
    )
    with serve(settings) as base, httpx.Client(base_url=base, timeout=15) as c:
        sid = new(c)["id"]
        code = lecture(c, sid)
        started = time.monotonic()
        with follow(base, code) as events:
            events.next()
            kind, _, _ = events.next()
            assert kind == "end" and events.comments >= 2
        assert 1.0 < time.monotonic() - started < 5
        assert c.get(f"/api/lectures/{code}").status_code == 404
        assert c.post(f"/api/sessions/{sid}/next").status_code == 200
        assert lecture(c, sid) != code  # a new lecture, a new code


def test_deleting_the_session_ends_its_lecture(client: httpx.Client, base_url: str) -> None:
    sid = new(client)["id"]
    code = lecture(client, sid)
    with follow(base_url, code) as events:
        events.next()
        assert client.delete(f"/api/sessions/{sid}").status_code == 204
        assert client.get(f"/api/lectures/{code}").status_code == 404
    r = client.get(f"/api/lectures/{code}/events", headers={"Last-Event-ID": "0"})
    assert r.status_code == 404  # a reconnect: the lecture ended with its session
    assert r.json() == {"detail": "no such lecture (it may have ended)"}
    assert client.get(f"/api/lectures/{code}/events").status_code == 404
