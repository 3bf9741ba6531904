"""The class predicts together (issue 18) over HTTP on a real server: the instructor asks about
the line at the cursor, followers vote (one right, one wrong), vote again, the instructor's
next line reveals the truth with each round's share right; the followers' JSON (GET and SSE)
never carries the answer while the question is open; a vote after the reveal is a 409; a code
never drives; the report (with a "which bug" row) survives a restart."""

from __future__ import annotations

import csv
import io
import tempfile
from typing import Any

import httpx

from app.settings import Settings
from support.classroom import shaped, truth, wrong
from support.serve import serve

from .test_lectures import follow, lecture

SETUP = {"scenario": "neuron"}
REVEALED = {"answer", "explanation", "rounds"}
HEADER = "moment,stop,line,kind,prompt,answer,answered_1,correct_1,answered_2,correct_2"


def closed_keys(prediction: dict[str, Any]) -> None:
    """An open prediction: the question as asked and its round, nothing that tells."""
    assert prediction["open"] is True
    assert not REVEALED & set(prediction)
    assert all(set(c) <= {"id", "text", "value"} for c in prediction["choices"])


def per_id(q: dict[str, Any], *answers: str | list[str]) -> dict[str, int]:
    counts = {c["id"]: 0 for c in q["choices"]}
    for a in answers:
        for i in a if isinstance(a, list) else [a]:
            counts[i] += 1
    return counts


def vote(client: httpx.Client, code: str, choice: Any, voter: str) -> httpx.Response:
    return client.post(f"/api/lectures/{code}/predictions", json={"choice": choice, "voter": voter})


def report(client: httpx.Client, sid: str) -> list[dict[str, str]]:
    r = client.get(f"/api/sessions/{sid}/lecture/report")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert r.text.splitlines()[0] == HEADER
    return list(csv.DictReader(io.StringIO(r.text)))


def test_vote_discuss_vote_again_then_the_line_reveals(client: httpx.Client, base_url: str) -> None:
    sid = client.post("/api/sessions", json=SETUP).json()["id"]
    code = lecture(client, sid)
    for _ in range(3):  # forward, loss, zero_grad: the cursor is at backward
        assert client.post(f"/api/sessions/{sid}/next").status_code == 200
    with follow(base_url, code) as events:
        events.next()  # the whole Session as it connects
        asked = client.post(f"/api/sessions/{sid}/lecture/question")
        assert asked.status_code == 201, asked.text
        q = asked.json()["question"]
        assert q == client.get(f"/api/sessions/{sid}/question").json()  # the same question
        assert q["line"] == "backward"
        assert asked.json()["round"] == 1 and asked.json()["open"] is True
        assert asked.json()["rounds"] == [{"answers": 0, "counts": per_id(q)}]
        _, _, data = events.next()
        prediction = data["session"]["prediction"]
        closed_keys(prediction)
        assert {k: v for k, v in prediction.items() if k not in ("round", "open")} == q
        closed_keys(client.get(f"/api/lectures/{code}").json()["prediction"])

        right = truth(client, SETUP, 3, q)
        mine, theirs = shaped(q, right), wrong(q, right)
        assert vote(client, code, mine, "voter-right").status_code == 200
        assert vote(client, code, theirs, "voter-wrong").json() == {"voter": "voter-wrong"}
        live = client.get(f"/api/sessions/{sid}/lecture/question").json()
        assert live["rounds"] == [{"answers": 2, "counts": per_id(q, mine, theirs)}]
        assert "voter-right" not in str(live) and "answer" not in live  # counts only
        # not offered, or the wrong shape: 422, and nothing counted
        for bad in ("nope", ["nope"], 3, None, [mine] if not q["multiple"] else right[0]):
            r = vote(client, code, bad, "voter-bad1")
            assert r.status_code == 422, (bad, r.text)
        # a code never drives: it is not a session id
        for path in ("next", "lecture/question", "lecture/question/again", "lecture/report"):
            assert client.post(f"/api/sessions/{code}/{path}").status_code in (404, 405)
        assert client.get(f"/api/sessions/{code}/lecture/question").status_code == 409

        again = client.post(f"/api/sessions/{sid}/lecture/question/again")
        assert again.status_code == 200 and again.json()["round"] == 2
        _, _, data = events.next()
        closed_keys(data["session"]["prediction"])
        assert data["session"]["prediction"]["round"] == 2
        assert client.post(f"/api/sessions/{sid}/lecture/question/again").status_code == 409
        assert client.post(f"/api/lectures/{code}/fork").status_code == 409  # no peeking
        assert vote(client, code, mine, "voter-right").status_code == 200
        assert vote(client, code, mine, "voter-wrong").status_code == 200
        rounds = client.get(f"/api/sessions/{sid}/lecture/question").json()["rounds"]
        assert [r["answers"] for r in rounds] == [2, 2]
        assert rounds[1]["counts"] == per_id(q, mine, mine)  # round 1 kept as it was
        assert rounds[0]["counts"] == per_id(q, mine, theirs)

        ran = client.post(f"/api/sessions/{sid}/next")  # the instructor's next line
        assert ran.status_code == 200
        _, _, data = events.next()
        revealed = data["session"]["prediction"]
        assert revealed["open"] is False and revealed["answer"] == right
        assert revealed["rounds"] == [{"answers": 2, "correct": 1}, {"answers": 2, "correct": 2}]
        assert revealed["explanation"] and len(revealed["choices"]) == len(q["choices"])
        assert [c["misconception"] is None for c in revealed["choices"]] == [
            c["id"] in right for c in q["choices"]
        ]
        # the line's numbers: the worked example's weight.grad after backward
        assert data["session"]["params"] == ran.json()["params"]
        assert ran.json()["params"][0]["grad"] == [[-23.5]]
        assert client.get(f"/api/lectures/{code}").json()["prediction"] == revealed
    r = vote(client, code, mine, "voter-late1")
    assert r.status_code == 409 and "no prediction is open" in r.json()["detail"]
    assert client.post(f"/api/sessions/{sid}/lecture/question/again").status_code == 409
    done = client.get(f"/api/sessions/{sid}/lecture/question").json()
    assert done["answer"] == right and [r["correct"] for r in done["rounds"]] == [1, 2]
    rows = report(client, sid)
    assert rows == [
        {
            "moment": "3",
            "stop": "",  # not a session on a lesson
            "line": "backward",
            "kind": q["kind"],
            "prompt": q["prompt"],
            "answer": "; ".join(c["text"] for c in q["choices"] if c["id"] in right) or "nothing",
            "answered_1": "2",
            "correct_1": "1",
            "answered_2": "2",
            "correct_2": "2",
        }
    ]


def test_refusals_withdrawal_and_the_report_across_a_restart() -> None:
    data = tempfile.mkdtemp(prefix="class-predict-")
    with serve(Settings(data=data)) as base, httpx.Client(base_url=base, timeout=30) as c:
        sid = c.post("/api/sessions", json=SETUP).json()["id"]
        assert c.post(f"/api/sessions/{sid}/lecture/question").status_code == 409  # no lecture
        code = lecture(c, sid)
        assert c.get(f"/api/sessions/{sid}/lecture/question").status_code == 409  # none asked
        assert vote(c, code, "yes", "voter-0001").status_code == 409
        quiz = c.post(f"/api/sessions/{sid}/quiz", json={"choices": ["correct", "zeros"]})
        assert quiz.status_code == 201
        r = c.post(f"/api/sessions/{sid}/lecture/question")
        assert r.status_code == 409 and "which bug" in r.json()["detail"]
        for voter, choice in (("voter-0001", "correct"), ("voter-0002", "zeros")):
            assert c.post(f"/api/lectures/{code}/answers", json={"choice": choice, "voter": voter})
        assert c.post(f"/api/sessions/{sid}/quiz/reveal").status_code == 200
        # a rewind withdraws an open question (its line's state is gone)
        c.post(f"/api/sessions/{sid}/next")
        assert c.post(f"/api/sessions/{sid}/lecture/question").status_code == 201
        assert c.post(f"/api/sessions/{sid}/lecture/question").status_code == 409  # one open
        r = c.post(f"/api/sessions/{sid}/quiz", json={"choices": ["correct", "zeros"]})
        assert r.status_code == 409
        c.post(f"/api/sessions/{sid}/rewind", json={"to": 0})
        assert c.get(f"/api/lectures/{code}").json()["prediction"] is None
        # asked again at moment 0, one vote, then the server restarts
        q = c.post(f"/api/sessions/{sid}/lecture/question").json()["question"]
        right = truth(c, SETUP, 0, q)
        assert vote(c, code, shaped(q, right), "voter-0001").status_code == 200
    with serve(Settings(data=data)) as base, httpx.Client(base_url=base, timeout=30) as c:
        follower = c.get(f"/api/lectures/{code}").json()["prediction"]
        closed_keys(follower)
        live = c.get(f"/api/sessions/{sid}/lecture/question").json()
        assert live["question"] == q and live["rounds"][0]["answers"] == 1
        assert vote(c, code, wrong(q, right), "voter-0002").status_code == 200
        assert c.post(f"/api/sessions/{sid}/forward").status_code == 200  # any line call
        revealed = c.get(f"/api/lectures/{code}").json()["prediction"]
        assert revealed["answer"] == right and revealed["rounds"] == [{"answers": 2, "correct": 1}]
        rows = report(c, sid)
        # the bug quiz; the question withdrawn by the rewind (no answer, no share); the last
        assert [(r["kind"], r["moment"], r["line"]) for r in rows] == [
            ("bug", "0", ""),
            (rows[1]["kind"], "1", "loss"),
            (q["kind"], "0", "forward"),
        ]
        bug, withdrawn, last = rows
        assert (bug["prompt"], bug["answer"]) == ("Which bug is this?", "correct")
        assert (bug["answered_1"], bug["correct_1"], bug["answered_2"]) == ("2", "1", "")
        assert withdrawn["answer"] == "" and withdrawn["correct_1"] == ""
        assert (last["answered_1"], last["correct_1"], last["answered_2"]) == ("2", "1", "")
        # the report outlives the lecture
        assert c.delete(f"/api/sessions/{sid}/lecture").status_code == 204
        assert report(c, sid) == rows
