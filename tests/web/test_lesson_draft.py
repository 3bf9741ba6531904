"""A lesson drafted from a session (issue 29's "Make a lesson"): its setup makes the very same
session again, its stops carry the changes made on the way, and its ``expect`` of the moment
holds when the lesson is checked against a fresh session."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

MOONS = {
    "scenario": "moons",
    "dropout": 0.2,
    "batchnorm": True,
    "dtype": "float32",
    "amp": "float16",
    "grad_scaler": False,
    "optimizer": {"kind": "adam", "betas": [0.8, 0.99], "weight_decay": 0.01},
    "scheduler": {"kind": "step", "step_size": 2, "gamma": 0.5},
    "accumulate": 2,
}
SETUPS: list[dict[str, Any]] = [
    {"scenario": "neuron"},
    {"scenario": "neuron", "lr": 0.05, "skip_zero_grad": True, "seed": 7},
    {"scenario": "parabola", "curvature": 5, "theta_star": -2, "max_norm": 0.5},
    MOONS,
    {
        "model": [
            {"type": "Linear", "out_features": 4},
            {"type": "ReLU"},
            {"type": "Linear", "out_features": 2},
        ],
        "data": {"kind": "sklearn", "name": "make_moons", "args": {"n_samples": 40}},
        "optimizer": {"kind": "sgd", "momentum": 0.9, "weight_decay": 0.0},
        "scheduler": {"kind": "cosine", "T_max": 3},
    },
]


def without_id(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "id"}


@pytest.mark.parametrize("body", SETUPS, ids=["neuron", "toggled", "parabola", "moons", "spec"])
def test_the_drafts_setup_makes_the_same_session(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    first = client.post("/api/sessions", json=body)
    assert first.status_code == 201, first.text
    sid = first.json()["id"]
    for _ in range(6):  # a few lines in, so a wrong seed or optimizer shows in the numbers
        assert client.post(f"/api/sessions/{sid}/next").status_code == 200
    drafted = client.get(f"/api/sessions/{sid}/lesson/draft").json()
    again = client.post("/api/sessions", json=drafted["lesson"]["setup"])
    assert again.status_code == 201, again.text
    for _ in range(6):
        last = client.post(f"/api/sessions/{again.json()['id']}/next")
    assert without_id(last.json()) == without_id(client.get(f"/api/sessions/{sid}").json())
    assert drafted["lesson"]["stops"] == [] and drafted["here"]["at"] == 6


def test_a_change_on_the_way_is_a_stop_and_the_moments_claims_hold(client: httpx.Client) -> None:
    sid = client.post("/api/sessions", json={"scenario": "neuron", "lr": 0.05}).json()["id"]
    assert client.patch(f"/api/sessions/{sid}", json={"max_norm": 2.0}).status_code == 200
    for _ in range(4):  # forward, loss, zero_grad, backward
        client.post(f"/api/sessions/{sid}/next")
    assert client.patch(f"/api/sessions/{sid}", json={"lr": 0.5}).status_code == 200
    client.post(f"/api/sessions/{sid}/next")  # step, at lr 0.5
    drafted = client.get(f"/api/sessions/{sid}/lesson/draft").json()
    lesson, here = drafted["lesson"], drafted["here"]
    assert lesson["setup"]["lr"] == 0.05 and lesson["setup"]["max_norm"] == 2.0  # the start's
    assert [(s["at"], s["change"]) for s in lesson["stops"]] == [(4, {"lr": 0.5})]
    assert "`lr` is 0.5" in lesson["stops"][0]["note"]
    # seed 000's numbers: w, b from 0, 0 by lr 0.5 times (23.5, 8)
    assert here == {
        "at": 5,
        "expect": {
            "params": {"weight": [[11.75]], "bias": [4.0]},
            "grad": {"weight": [[-23.5]], "bias": [-8.0]},
            "loss": 18.5,
        },
    }
    lesson["title"] = "lr 0.5 from the first step"
    lesson["stops"].append({"at": 5, "title": "After step", "expect": here["expect"]})
    checked = client.post("/api/lessons/check", json=lesson)
    assert checked.status_code == 200, checked.text
    assert [s["holds"] for s in checked.json()["stops"]] == [True, True]
    # without the change the step is lr 0.05's: the check says so, with PyTorch's numbers
    lesson["stops"][0].pop("change")
    failed = client.post("/api/lessons/check", json=lesson).json()["stops"][1]
    assert failed["holds"] is False
    weight = next(f for f in failed["failures"] if f["claim"] == "params.weight")
    assert weight["expected"] == [[11.75]] and weight["actual"] == [[pytest.approx(1.175)]]
