"""Predict first and Explain a number over HTTP, on a real server: the question changes
nothing, predict answers as next does (the same Session field by field, the same 409 in
PyTorch's words), predictions survive a restart, and the worked example explains itself."""

from __future__ import annotations

import tempfile
from typing import Any

import httpx
from support.serve import serve

from app.settings import Settings

CORRECT = ["forward", "loss", "zero_grad", "backward", "step"]


def create(client: httpx.Client, **body: Any) -> str:
    r = client.post("/api/sessions", json={"scenario": "neuron", **body})
    assert r.status_code == 201, r.text
    sid: str = r.json()["id"]
    return sid


def first(q: dict[str, Any]) -> str | list[str]:
    return [q["choices"][0]["id"]] if q["multiple"] else q["choices"][0]["id"]


def without_id(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "id"}


def test_predict_answers_as_next_and_asking_changes_nothing(client: httpx.Client) -> None:
    """Two sessions, one predicting, one clicking Next, through backward twice (the second
    raises): the same Session after every line, the same 409 body when the line raises."""
    program = ["forward", "loss", "zero_grad", "backward", "step", "backward"]
    body = {"scenario": "moons", "program": program, "optimizer": {"kind": "adam"}}
    live, twin = create(client, **body), create(client, **body)
    rights = []
    for n in range(len(program)):
        before = client.get(f"/api/sessions/{live}").json()
        q = client.get(f"/api/sessions/{live}/question").json()
        assert client.get(f"/api/sessions/{live}/question").json() == q
        assert client.get(f"/api/sessions/{live}").json() == before
        assert q["line"] == program[n] and set(q) >= {"kind", "prompt", "choices", "multiple"}
        said = client.post(f"/api/sessions/{live}/predict", json={"choice": first(q)})
        assert said.status_code == 200, said.text
        answer = said.json()
        rights.append(answer["correct"])
        nexted = client.post(f"/api/sessions/{twin}/next")
        chosen = first(q) if isinstance(first(q), list) else [first(q)]
        assert answer["correct"] == (sorted(chosen) == sorted(answer["answer"]))
        for c in answer["choices"]:
            assert (c["misconception"] is None) == (c["id"] in answer["answer"])
        if nexted.status_code == 409:
            assert answer["session"] is None and answer["error"] == nexted.json()
            assert "Trying to backward through the graph a second time" in nexted.json()["detail"]
            after = client.get(f"/api/sessions/{live}").json()
            assert without_id(after) == without_id(client.get(f"/api/sessions/{twin}").json())
        else:
            assert answer["error"] is None
            assert without_id(answer["session"]) == without_id(nexted.json())
    moments = client.get(f"/api/sessions/{live}/timeline").json()["moments"]
    assert moments[0]["predicted"] is None and len(moments) == len(program)
    assert [m["predicted"] for m in moments[1:]] == rights[:-1]  # the last line raised
    score = client.get(f"/api/sessions/{live}/score").json()
    assert (score["asked"], score["correct"]) == (len(program), sum(rights))
    assert score["by_line"]["backward"]["asked"] == 2


def test_worked_example_wrong_then_right_and_bad_choices(client: httpx.Client) -> None:
    sid = create(client)
    for _ in range(3):
        q = client.get(f"/api/sessions/{sid}/question").json()
        client.post(f"/api/sessions/{sid}/predict", json={"choice": first(q)})
    q = client.get(f"/api/sessions/{sid}/question").json()
    assert q["line"] == "backward"
    for bad in ("nope", ["a", "nope"], 3, None):
        r = client.post(f"/api/sessions/{sid}/predict", json={"choice": bad})
        assert r.status_code == 422, (bad, r.text)
    other = [q["choices"][0]["id"]] if not q["multiple"] else "a-string"
    assert client.post(f"/api/sessions/{sid}/predict", json={"choice": other}).status_code == 422
    assert client.get(f"/api/sessions/{sid}").json()["moment"] == 3  # nothing ran
    assert client.post("/api/sessions/nope/predict", json={"choice": "a"}).status_code == 404
    answer = client.post(f"/api/sessions/{sid}/predict", json={"choice": first(q)}).json()
    assert answer["session"]["moment"] == 4
    weight = answer["session"]["params"][0]
    assert weight["grad"] == [[-23.5]]


def test_predictions_survive_a_restart() -> None:
    data = tempfile.mkdtemp(prefix="loop-stepper-predict-")
    with serve(Settings(data=data)) as url, httpx.Client(base_url=url, timeout=30) as client:
        sid = create(client)
        for _ in range(5):
            q = client.get(f"/api/sessions/{sid}/question").json()
            client.post(f"/api/sessions/{sid}/predict", json={"choice": first(q)})
        score = client.get(f"/api/sessions/{sid}/score").json()
        moments = client.get(f"/api/sessions/{sid}/timeline").json()
    with serve(Settings(data=data)) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get(f"/api/sessions/{sid}/score").json() == score
        assert client.get(f"/api/sessions/{sid}/timeline").json() == moments
        # the script export skips predictions: they run nothing
        assert client.get(f"/api/sessions/{sid}/script").status_code == 200


def test_explain_over_http(client: httpx.Client) -> None:
    sid = create(client, program=["forward", "loss", "backward", "step"])
    for _ in range(3):
        client.post(f"/api/sessions/{sid}/next")
    r = client.get(f"/api/sessions/{sid}/explain", params={"param": "weight", "index": 0})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["value"] == -23.5 and data["param"] == "weight" and data["index"] == 0
    assert [e["contribution"] for e in data["parts"][0]["examples"]] == [-1, -3, -7.5, -12]
    for _ in range(4):
        client.post(f"/api/sessions/{sid}/next")
    data = client.get(f"/api/sessions/{sid}/explain?param=weight&index=0").json()
    assert next(p["value"] for p in data["parts"]) == -23.5
    assert round(data["parts"][1]["value"], 4) == -3.875
    for query in ("param=nope&index=0", "param=weight&index=1", "param=weight&index=-1",
                  "param=weight"):  # fmt: skip
        assert client.get(f"/api/sessions/{sid}/explain?{query}").status_code == 422, query
    fresh = create(client)
    r = client.get(f"/api/sessions/{fresh}/explain?param=bias&index=0")
    assert r.status_code == 409
    assert r.json()["detail"].endswith("is None: no backward has written it since it was emptied")
