"""GET /api/sessions/{id}/tensor over HTTP (issue 28): a tensor's exact elements a page at a
time, read-only. No scenario has a tensor past 256 elements yet (the summaries are tested on a
widened Lab in tests/engine/test_tensors.py), so here the pages are moons' own tensors, held
to the Session's nested lists and to PyTorch's values."""

from __future__ import annotations

from typing import Any

import httpx
import torch

from support.oracle import Plain


def flat(nested: Any) -> list[Any]:
    return torch.tensor(nested, dtype=torch.float64).reshape(-1).tolist()


def get(client: httpx.Client, sid: str, **query: Any) -> httpx.Response:
    return client.get(f"/api/sessions/{sid}/tensor", params=query)


def test_pages_are_the_sessions_elements_and_change_nothing(client: httpx.Client) -> None:
    r = client.post("/api/sessions", json={"scenario": "moons", "optimizer": {"kind": "adam"}})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    none = get(client, sid, store="grad", name="2.weight").json()
    assert none == {
        "store": "grad",
        "name": "2.weight",
        "key": None,
        "shape": [16, 16],
        "dtype": "float64",
        "numel": 256,
        "start": 0,
        "stop": 256,
        "values": None,  # .grad is None before the first backward
    }
    run = client.post(f"/api/sessions/{sid}/run", json={"iterations": 2})
    assert run.status_code == 200, run.text
    session = run.json()
    timeline = client.get(f"/api/sessions/{sid}/timeline").json()
    weight = next(p for p in session["params"] if p["name"] == "2.weight")
    page = get(client, sid, store="params", name="2.weight").json()
    assert page["values"] == flat(weight["value"]) and (page["start"], page["stop"]) == (0, 256)
    # the lesson's loop in plain PyTorch, two iterations: the same numbers bit for bit
    plain = Plain("moons", lr=0.3, seed=0, optimizer="adam")
    for entry in ["forward", "loss", "zero_grad", "backward", "step"] * 2:
        plain.line(entry)
    exact = dict(plain.model.named_parameters())["2.weight"]
    assert page["values"] == exact.detach().reshape(-1).tolist()
    grad = get(client, sid, store="grad", name="2.weight", start=16, stop=32).json()
    assert grad["values"] == flat(weight["grad"])[16:32]  # row 1, row-major
    assert exact.grad is not None and grad["values"] == exact.grad[1].tolist()
    state = next(s["state"] for s in session["optimizer_state"] if s["name"] == "2.weight")
    sq = get(client, sid, store="state", name="2.weight", key="exp_avg_sq", start=250).json()
    assert sq["values"] == flat(state["exp_avg_sq"])[250:] and sq["stop"] == 256
    bias = get(client, sid, store="params", name="4.bias", start=1, stop=1).json()
    assert bias["values"] == [] and bias["shape"] == [2]
    # read-only: no event, the same moment, the same Session
    assert client.get(f"/api/sessions/{sid}/timeline").json() == timeline
    again = client.get(f"/api/sessions/{sid}").json()
    assert {k: v for k, v in again.items() if k != "history"} == {
        k: v for k, v in session.items() if k != "history"
    }


def test_bad_pages_are_clear_4xx(client: httpx.Client) -> None:
    r = client.post("/api/sessions", json={"scenario": "moons"})
    sid = r.json()["id"]
    before = client.get(f"/api/sessions/{sid}").json()
    refusals: list[tuple[dict[str, Any], int, list[str]]] = [
        ({"store": "params", "name": "2.weight", "start": 257}, 422, ["query", "start"]),
        ({"store": "params", "name": "2.weight", "stop": 257}, 422, ["query", "stop"]),
        ({"store": "params", "name": "2.weight", "start": 9, "stop": 8}, 422, ["query", "stop"]),
        ({"store": "params", "name": "2.weight", "start": -1}, 422, ["query", "start"]),
        ({"store": "params", "name": "2.weight", "key": "exp_avg"}, 422, ["query", "key"]),
        ({"store": "state", "name": "2.weight"}, 422, ["query", "key"]),
        ({"store": "weights", "name": "2.weight"}, 422, ["query", "store"]),
        ({"store": "params"}, 422, ["query", "name"]),
    ]
    for query, status, detail in refusals:
        answer = get(client, sid, **query)
        assert answer.status_code == status, (query, answer.text)
        assert answer.json()["detail"][0]["loc"] == detail, query
    unknown = get(client, sid, store="params", name="9.weight")
    assert unknown.status_code == 404
    assert unknown.json() == {
        "detail": "no parameter named '9.weight' (the Session's params name them)"
    }
    no_state = get(client, sid, store="state", name="2.weight", key="momentum_buffer")
    assert no_state.status_code == 404 and "none before a step" in no_state.json()["detail"]
    gone = get(client, "nope", store="params", name="2.weight")
    assert gone.status_code == 404 and gone.json()["detail"].startswith("no such session")
    assert client.get(f"/api/sessions/{sid}").json() == before
