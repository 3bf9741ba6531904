"""The editable loop, presets, optimizers, accumulation and the parabola, over HTTP."""

from __future__ import annotations

from typing import Any, get_args

import httpx
import pytest

from app.engine.entries import ENTRIES
from app.web.answers import SessionOut
from app.web.schemas import Entry
from support.oracle import Plain
from tests.web.test_api import line, new, values


def patch(client: httpx.Client, sid: str, body: dict[str, Any]) -> httpx.Response:
    return client.patch(f"/api/sessions/{sid}", json=body)


def test_presets_are_listed_with_explanations(client: httpx.Client) -> None:
    presets = {p["name"]: p for p in client.get("/api/presets").json()}
    assert presets["backward_twice_retain"]["program"][3] == "backward(retain_graph=True)"
    assert "-47" in presets["backward_twice_retain"]["explanation"]
    assert set(presets) >= {"correct", "skip_zero_grad", "step_first", "zero_grad_before_step",
                            "backward_twice", "zeros"}  # fmt: skip


def test_program_edit_shows_its_python_and_its_toggles(client: httpx.Client) -> None:
    sid = new(client)["id"]
    program = ["forward", "loss", "zero_grad(set_to_none=False)", "step", "backward"]
    s = patch(client, sid, {"program": program}).json()
    assert s["program"] == program and s["preset"] is None
    assert s["code"] == [
        "out = model(X)",
        "loss = loss_fn(out, y)",
        "optimizer.zero_grad(set_to_none=False)",
        "optimizer.step()",
        "loss.backward()",
    ]
    assert s["toggles"] == {"skip_zero_grad": False, "step_first": True}
    s = patch(client, sid, {"skip_zero_grad": True}).json()
    assert s["program"] == ["forward", "loss", "step", "backward"]
    assert s["preset"] is None  # both bugs at once is no single preset
    s = patch(client, sid, {"skip_zero_grad": False, "step_first": False}).json()
    assert s["preset"] == "correct"


@pytest.mark.parametrize(
    "body",
    [
        {"program": []},
        {"program": ["forward"] * 21},
        {"program": ["forward", "exec('rm -rf /')"]},
        {"program": ["backward(retain_graph=False)"]},
        {"program": "forward"},
        {"program": ["forward"], "skip_zero_grad": True},
    ],
)
def test_bad_programs_are_422(client: httpx.Client, body: dict[str, Any]) -> None:
    sid = new(client)["id"]
    before = client.get(f"/api/sessions/{sid}").json()
    r = patch(client, sid, body)
    assert r.status_code == 422 and "detail" in r.json()
    assert client.get(f"/api/sessions/{sid}").json() == before


def test_a_program_at_creation(client: httpx.Client) -> None:
    program = ["forward", "loss", "backward(retain_graph=True)", "backward", "step"]
    s = new(client, program=program)
    assert s["program"] == program and s["steps"] == 0
    s = line(client, s["id"], "run", {"iterations": 1})
    assert values(s, "grad") == [[[-47.0]], [-16.0]] and s["steps"] == 1
    r = client.post("/api/sessions", json={"program": program, "skip_zero_grad": True})
    assert r.status_code == 422 and "either a program or toggles" in r.json()["detail"][0]["msg"]


def test_run_stops_at_the_failing_line(client: httpx.Client) -> None:
    sid = new(client)["id"]
    preset = {p["name"]: p for p in client.get("/api/presets").json()}["backward_twice"]
    patch(client, sid, {"program": preset["program"]})
    r = client.post(f"/api/sessions/{sid}/run", json={"iterations": 3})
    assert r.status_code == 409 and r.json()["line"] == "backward"
    assert "second time" in r.json()["detail"]
    s = client.get(f"/api/sessions/{sid}").json()
    assert s["cursor"] == 4 and s["iteration"] == 1
    assert values(s, "grad") == [[[-23.5]], [-8.0]]


def test_optimizers_and_the_fifth_store(client: httpx.Client) -> None:
    s = new(client, optimizer={"kind": "adam", "betas": [0.8, 0.99]})
    assert s["optimizer"] == {"kind": "adam", "betas": [0.8, 0.99], "weight_decay": 0.0,
                              "momentum": None, "stateful": True}  # fmt: skip
    s = line(client, s["id"], "run", {"iterations": 2})
    plain = Plain("neuron", 0.05, optimizer="adam", betas=(0.8, 0.99))
    for _ in range(2):
        for name in ("forward", "loss", "zero_grad", "backward", "step"):
            plain.line(name)
    weight = next(plain.model.parameters())  # nn.Linear: weight, then bias
    state = s["optimizer_state"][0]["state"]
    assert state["step"] == 2.0
    assert state["exp_avg"] == plain.optimizer.state[weight]["exp_avg"].tolist()
    assert state["exp_avg_sq"] == plain.optimizer.state[weight]["exp_avg_sq"].tolist()
    assert values(s, "value") == [p.tolist() for p in plain.model.parameters()]
    assert "optimizer_state" in s["last"]["writes"]
    s = new(client, optimizer={"kind": "sgd", "momentum": 0.9})
    s = line(client, s["id"], "run", {"iterations": 1})
    assert s["optimizer_state"][0]["state"]["momentum_buffer"] == [[-23.5]]
    assert s["optimizer"]["stateful"] is True and new(client)["optimizer"]["stateful"] is False
    for bad in ({"kind": "rmsprop"}, {"kind": "sgd", "betas": [0.9, 0.9]},
                {"kind": "sgd", "momentum": 1.5}, {"kind": "adam", "betas": [0.9]}):  # fmt: skip
        assert client.post("/api/sessions", json={"optimizer": bad}).status_code == 422


def test_accumulate(client: httpx.Client) -> None:
    s = new(client, accumulate=2)
    assert s["program"][:4] == ["zero_grad", "forward", "loss", "backward"]
    assert s["code"][2] == "loss = loss_fn(out, y) / 2"
    s = line(client, s["id"], "run", {"iterations": 1})
    assert values(s, "value")[0][0][0] == pytest.approx(1.175)
    for bad in ({"accumulate": 3}, {"accumulate": 8}, {"scenario": "moons", "accumulate": 16}):
        r = client.post("/api/sessions", json=bad)
        assert r.status_code == 422 and "accumulate must be one of" in r.json()["detail"][0]["msg"]


def test_parabola_carries_its_theory(client: httpx.Client) -> None:
    s = new(client, scenario="parabola", skip_zero_grad=True)
    assert s["params"][0]["name"] == "theta" and s["params"][0]["value"] == [0.0]
    assert s["theory"]["without_zero_grad"]["period"] == pytest.approx(7.0, abs=0.05)
    s = patch(client, s["id"], {"lr": 0.3}).json()
    assert s["theory"]["without_zero_grad"]["regime"] == "grows"
    s = new(client, scenario="parabola", curvature=2, theta_star=-1)
    assert s["theory"]["eta_h"] == pytest.approx(0.1) and s["theory"]["theta_star"] == -1
    assert s["theory"]["curvature"] == 2
    r = client.post("/api/sessions", json={"scenario": "neuron", "curvature": 2})
    assert r.status_code == 422 and "parabola" in r.json()["detail"][0]["msg"]
    assert new(client)["theory"] is None


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"scenario": "moons", "optimizer": {"kind": "adam"}, "accumulate": 2},
        {"scenario": "parabola", "optimizer": {"kind": "sgd", "momentum": 0.5}},
        {"lr": 100},  # diverges: "NaN" and "Infinity" strings
        {
            "scenario": "moons",
            "dropout": 0.5,
            "batchnorm": True,
            "scheduler": {"kind": "step", "step_size": 1, "gamma": 0.9},
            "optimizer": {"kind": "adam"},
            "program": [
                "train",
                "forward",
                "loss",
                "zero_grad",
                "backward",
                "clip_grad_norm",
                "step",
                "scheduler_step",
                "log_tensor",
                "checkpoint",
                "eval",
                "resume",
            ],
        },
    ],
)
def test_answers_are_exactly_the_documented_session(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    """Line answers skip FastAPI's response validation, so check them against the model here
    (the keys a scenario's answer leaves out, as `spec`, stay out)."""
    sid = new(client, **body)["id"]
    for _ in range(3):
        s = line(client, sid, "run", {"iterations": 20})
        assert SessionOut.model_validate(s).model_dump(mode="json", exclude_unset=True) == s


def test_the_contract_names_every_engine_entry() -> None:
    """schemas.Entry is spelled out for the docs; it must stay the engine's list."""
    assert get_args(Entry) == tuple(ENTRIES)
