"""Mixed precision over HTTP: the setup and its 422s, the scaler's store, dtypes in answers,
the program under a GradScaler, rewinds, and the float16_without_scaler preset."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import torch

from app.web.answers import SessionOut
from support.oracle import Plain
from tests.web.test_api import line, new

SCALED = ["forward", "loss", "zero_grad", "backward", "step", "scaler_update"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"scenario": "moons", "amp": "bfloat16"}, "amp needs a float32 model"),
        ({"scenario": "parabola", "amp": "float16"}, "amp needs a float32 model"),
        ({"amp": "bfloat16", "grad_scaler": True}, "grad_scaler goes with"),
        ({"grad_scaler": False}, "grad_scaler goes with"),
        ({"amp": "float8"}, "bfloat16"),
        ({"amp": "float16", "quiz": True}, "without amp"),
    ],
)
def test_bad_amp_setup_is_422(client: httpx.Client, body: dict[str, Any], words: str) -> None:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422 and words in str(r.json()["detail"]), r.text


def test_float16_with_a_scaler_skips_its_first_steps(client: httpx.Client) -> None:
    s = new(client, amp="float16")
    assert s["amp"] == {"dtype": "float16", "scaler": True} and s["program"] == SCALED
    assert s["code"][3:] == ["scaler.scale(loss).backward()", "scaler.step(optimizer)",
                             "scaler.update()"]  # fmt: skip
    assert s["scaler"] == {
        "scale": 65536.0,
        "growth_tracker": 0,
        "skipped_steps": 0,
        "found_inf": None,
    }
    sid = s["id"]
    for _ in range(4):  # forward, loss, zero_grad, backward
        s = line(client, sid, "next")
    assert s["last"]["reads"] == ["loss", "graph", "grad", "scaler"]
    s = line(client, sid, "next")  # scaler.step: inf found, skipped
    assert s["last"]["writes"] == ["scaler"] and s["scaler"]["found_inf"] is True
    assert [p["value"] for p in s["params"]] == [[[0.0]], [0.0]]
    s = line(client, sid, "next")
    assert s["scaler"]["scale"] == 32768.0 and s["scaler"]["found_inf"] is None
    r = client.post(f"/api/sessions/{sid}/run", json={"iterations": 7})
    s = r.json()
    SessionOut.model_validate({**s})
    assert s["scaler"] == {
        "scale": 2048.0,
        "growth_tracker": 3,
        "skipped_steps": 5,
        "found_inf": None,
    }
    plain = Plain("neuron", 0.05, 0, dtype=torch.float32, amp="float16")
    for _ in range(8):
        for entry in SCALED:
            plain.line(entry)
    assert [p["value"] for p in s["params"]] == [q.tolist() for q in plain.model.parameters()]
    assert s["loss"] == plain.loss.item() if plain.loss is not None else False
    # a second scaler.step before update: PyTorch's words, nothing changed
    for entry in ["forward", "loss", "backward", "step"]:
        line(client, sid, entry)
    r = client.post(f"/api/sessions/{sid}/step")
    assert r.status_code == 409
    assert r.json()["detail"] == "step() has already been called since the last update()."
    # the script writes the GradScaler (tests/export/test_real_loop.py runs such scripts)
    r = client.get(f"/api/sessions/{sid}/script")
    assert r.status_code == 200 and 'scaler = torch.amp.GradScaler("cpu")' in r.text
    assert "scaler.step(optimizer)" in r.text and "scaler.update()" in r.text
    # rewind to the middle of the skipped steps: the scaler's store comes back exactly
    before = client.post(f"/api/sessions/{sid}/rewind", json={"to": 11}).json()
    assert before["scaler"]["scale"] == 32768.0 and before["scaler"]["found_inf"] is True


def test_toggles_keep_the_scalers_update(client: httpx.Client) -> None:
    sid = new(client, amp="float16")["id"]
    r = client.patch(f"/api/sessions/{sid}", json={"skip_zero_grad": True})
    assert r.json()["program"] == ["forward", "loss", "backward", "step", "scaler_update"]
    r = client.patch(f"/api/sessions/{sid}", json={"skip_zero_grad": False})
    assert r.json()["preset"] == "correct"


def test_bfloat16_moons_shows_each_tensors_dtype(client: httpx.Client) -> None:
    s = new(client, scenario="moons", dtype="float32", amp="bfloat16")
    assert s["amp"] == {"dtype": "bfloat16", "scaler": False} and s["scaler"] is None
    assert s["program"] == ["forward", "loss", "zero_grad", "backward", "step"]
    s = line(client, s["id"], "forward")
    assert s["graph"]["out_dtype"] == "bfloat16" and s["loss_dtype"] is None
    s = line(client, s["id"], "loss")
    assert s["loss_dtype"] == "float32"
    dtypes = {n["label"]: n["dtype"] for n in s["graph"]["nodes"]}
    assert dtypes["AddmmBackward0"] == "bfloat16" and dtypes["NllLossBackward0"] == "float32"
    assert {p["dtype"] for p in s["params"]} == {"float32"}
    plain = Plain("moons", 0.3, 0, dtype=torch.float32, amp="bfloat16")
    plain.line("forward")
    plain.line("loss")
    assert plain.loss is not None and s["loss"] == plain.loss.item()


def test_the_preset_float16_without_a_scaler(client: httpx.Client) -> None:
    presets = {p["name"]: p for p in client.get("/api/presets").json()}
    preset = presets["float16_without_scaler"]
    assert preset["setup"] == {"scenario": "neuron", "amp": "float16", "grad_scaler": False}
    assert preset["program"] == ["forward", "loss", "zero_grad", "backward", "step"]
    s = new(client, **preset["setup"])
    assert s["preset"] == "float16_without_scaler" and s["scaler"] is None
    assert s["code"][3:] == ["loss.backward()", "optimizer.step()"]
    r = client.post(f"/api/sessions/{s['id']}/run", json={"iterations": 2})
    assert r.json()["history"][1]["loss"] == pytest.approx(0.55404, abs=1e-5)
