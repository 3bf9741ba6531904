"""The timeline over HTTP: rewind, back, the slider's list, snapshots; the worked example's
numbers at each moment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from app.settings import Settings

from support.serve import serve


def new(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    data: dict[str, Any] = r.json()
    return data


def grads(s: dict[str, Any]) -> list[Any]:
    return [p["grad"] for p in s["params"]]


def values(s: dict[str, Any]) -> list[Any]:
    return [p["value"] for p in s["params"]]


def same_moment(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Equal as answered, but for what names the session and how many moments exist."""
    skip = {"id", "moments"}
    assert {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


def test_rewind_and_back_give_the_worked_example_at_each_moment(client: httpx.Client) -> None:
    s = new(client)
    sid = s["id"]
    assert (s["moment"], s["moments"]) == (0, 0)
    answers = [s]
    for _ in range(10):  # two iterations, one line at a time
        answers.append(client.post(f"/api/sessions/{sid}/next").json())
    assert (answers[-1]["moment"], answers[-1]["moments"]) == (10, 10)
    r = client.post(f"/api/sessions/{sid}/rewind", json={"to": 4})  # just after backward
    assert r.status_code == 200
    s = r.json()
    same_moment(s, answers[4])
    assert (s["moment"], s["moments"]) == (4, 10)
    assert grads(s) == [[[-23.5]], [-8.0]] and values(s) == [[[0.0]], [0.0]]
    assert s["graph"]["status"] == "freed" and s["last"]["line"] == "backward"
    s = client.post(f"/api/sessions/{sid}/back").json()  # zero_grad: None, not zeros
    same_moment(s, answers[3])
    assert grads(s) == [None, None] and s["next_line"] == "backward"
    s = client.post(f"/api/sessions/{sid}/rewind", json={"to": 9}).json()  # forward again
    same_moment(s, answers[9])
    assert abs(grads(s)[0][0][0] + 3.875) < 1e-5 and abs(grads(s)[1][0] + 1.325) < 1e-5
    s = client.post(f"/api/sessions/{sid}/rewind", json={"to": 0}).json()
    same_moment(s, answers[0])
    # the next line after a rewind is what it was the first time
    s = client.post(f"/api/sessions/{sid}/next").json()
    same_moment(s, answers[1])
    assert s["moments"] == 1  # acting from the past discarded the moments after it


def test_the_timeline_lists_every_moment(client: httpx.Client) -> None:
    sid = new(client)["id"]
    client.post(f"/api/sessions/{sid}/run", json={"iterations": 2})
    r = client.get(f"/api/sessions/{sid}/timeline")
    assert r.status_code == 200
    t = r.json()
    assert t["moment"] == 10 and [m["n"] for m in t["moments"]] == list(range(11))
    assert t["moments"][0] == {"n": 0, "line": None, "iteration": 0, "loss": None}
    assert t["moments"][2] == {"n": 2, "line": "loss", "iteration": 1, "loss": 18.5}
    assert [m["line"] for m in t["moments"][1:6]] == [
        "forward",
        "loss",
        "zero_grad",
        "backward",
        "step",
    ]
    assert t["moments"][5]["loss"] == 18.5 and t["moments"][7]["loss"] < 1  # 0.5522...
    client.post(f"/api/sessions/{sid}/back")
    assert client.get(f"/api/sessions/{sid}/timeline").json()["moment"] == 9


def test_out_of_range_is_422_and_back_at_the_start_is_409(client: httpx.Client) -> None:
    sid = new(client)["id"]
    r = client.post(f"/api/sessions/{sid}/back")
    assert r.status_code == 409 and "start" in r.json()["detail"]
    client.post(f"/api/sessions/{sid}/next")
    for body in ({"to": 2}, {"to": -1}, {"to": "1"}, {"to": 1.5}, {}, {"to": 1, "x": 1}):
        r = client.post(f"/api/sessions/{sid}/rewind", json=body)
        assert r.status_code == 422, (body, r.text)
    detail = client.post(f"/api/sessions/{sid}/rewind", json={"to": 2}).json()["detail"]
    assert "moment 2 does not exist" in detail[0]["msg"]
    s = client.get(f"/api/sessions/{sid}").json()
    assert (s["moment"], s["moments"], s["iteration"]) == (1, 1, 1)  # nothing damaged
    assert client.post("/api/sessions/nope/rewind", json={"to": 0}).status_code == 404
    assert client.get("/api/sessions/nope/timeline").status_code == 404


def test_a_snapshot_opens_the_same_moment_with_its_past(client: httpx.Client) -> None:
    original = new(client, scenario="moons", skip_zero_grad=True)
    sid = original["id"]
    client.post(f"/api/sessions/{sid}/run", json={"iterations": 3})
    at = client.post(f"/api/sessions/{sid}/rewind", json={"to": 10}).json()
    r = client.post(f"/api/sessions/{sid}/snapshot")
    assert r.status_code == 201
    shared = r.json()
    assert (
        set(shared) == {"snapshot", "url"} and shared["url"] == f"/?snapshot={shared['snapshot']}"
    )
    assert sid not in r.text  # the token reveals nothing of the session
    opened = new(client, snapshot=shared["snapshot"])
    assert opened["id"] != sid
    same_moment(opened, at)
    assert opened["moments"] == 10  # its past comes along; the moments after it do not
    past = client.post(f"/api/sessions/{opened['id']}/rewind", json={"to": 5}).json()
    mine = client.post(f"/api/sessions/{sid}/rewind", json={"to": 5}).json()
    same_moment(past, mine)
    # driving the copy leaves the original where it was, and the snapshot frozen
    client.post(f"/api/sessions/{opened['id']}/run", json={"iterations": 2})
    assert client.get(f"/api/sessions/{sid}").json()["moments"] == 12  # 3 x 4 lines
    again = new(client, snapshot=shared["snapshot"])
    same_moment(again, at)


def test_bad_snapshots(client: httpx.Client) -> None:
    r = client.post("/api/sessions", json={"snapshot": "no-such-token"})
    assert r.status_code == 404
    r = client.post("/api/sessions", json={"snapshot": "x", "scenario": "moons"})
    assert r.status_code == 422
    assert client.post("/api/sessions/nope/snapshot").status_code == 404


def test_sessions_survive_a_restart(tmp_path: Path) -> None:
    """Another server on the same store answers every session as the last one did, graph
    included: forward and loss before, backward after gives the worked example."""
    settings = Settings(data=str(tmp_path))
    with serve(settings) as url, httpx.Client(base_url=url) as c:
        a = new(c)
        c.post(f"/api/sessions/{a['id']}/run", json={"iterations": 1})
        c.post(f"/api/sessions/{a['id']}/next")
        before = c.post(f"/api/sessions/{a['id']}/next").json()  # forward, loss
        b = new(c, scenario="moons")
        c.post(f"/api/sessions/{b['id']}/run", json={"iterations": 4})
        rewound = c.post(f"/api/sessions/{b['id']}/rewind", json={"to": 7}).json()
    with serve(settings) as url, httpx.Client(base_url=url) as c:
        assert c.get(f"/api/sessions/{a['id']}").json() == before
        assert c.get(f"/api/sessions/{b['id']}").json() == rewound
        c.post(f"/api/sessions/{a['id']}/zero_grad")
        s = c.post(f"/api/sessions/{a['id']}/backward").json()
        assert abs(grads(s)[0][0][0] + 3.875) < 1e-5 and abs(grads(s)[1][0] + 1.325) < 1e-5
