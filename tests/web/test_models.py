"""Your own model and data over HTTP (issue 28): sessions from specs, their check, their errors.

The numbers are held to the scenarios the specs reproduce, or to plain PyTorch and
scikit-learn written from the issue's steps 1-5 (``plain_digits``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

from support.digits import CNN, DIGITS, MLP, cnn, mlp

LOOP = ["forward", "loss", "zero_grad", "backward", "step"]
JSON = {"Content-Type": "application/json"}  # json.dumps keeps 2.0 a float (as a page sends)


def spec_of(client: httpx.Client, name: str) -> dict[str, Any]:
    scenarios = {s["name"]: s for s in client.get("/api/scenarios").json()}
    spec = scenarios[name]["spec"]
    assert isinstance(spec, dict)
    return spec


def lines(client: httpx.Client, sid: str, entries: list[str]) -> dict[str, Any]:
    session: dict[str, Any] = {}
    for entry in entries:
        r = client.post(f"/api/sessions/{sid}/{entry}")
        assert r.status_code == 200, r.text
        session = r.json()
    return session


def numbers(session: dict[str, Any]) -> list[Any]:
    # the names differ: a spec's model is an nn.Sequential ("0.weight" for "weight")
    return [session["loss"]] + [(p["value"], p["grad"]) for p in session["params"]]


@pytest.mark.parametrize("name", ["neuron", "moons"])
def test_a_scenarios_spec_makes_the_scenario_bit_for_bit(client: httpx.Client, name: str) -> None:
    spec = spec_of(client, name)
    mine = client.post("/api/sessions", json=spec)
    theirs = client.post("/api/sessions", json={"scenario": name})
    assert mine.status_code == theirs.status_code == 201, mine.text
    assert mine.json()["scenario"] == "custom" and mine.json()["spec"]["model"] == spec["model"]
    a = lines(client, mine.json()["id"], LOOP * 3 + LOOP[:4])
    b = lines(client, theirs.json()["id"], LOOP * 3 + LOOP[:4])
    assert numbers(a) == numbers(b)
    assert a["params"][0]["grad"] is not None
    if name == "neuron":  # seed 000's numbers: after the first backward, .grad is -23.5 / -8
        first = lines(client, client.post("/api/sessions", json=spec).json()["id"], LOOP[:4])
        assert [p["grad"] for p in first["params"]] == [[[-23.5]], [-8.0]]


def test_the_parabola_stays_its_own_kind(client: httpx.Client) -> None:
    assert spec_of_none(client) is None


def spec_of_none(client: httpx.Client) -> Any:
    return {s["name"]: s for s in client.get("/api/scenarios").json()}["parabola"]["spec"]


def test_check_answers_each_layers_shape_and_parameters(client: httpx.Client) -> None:
    r = client.post("/api/models/check", json={"model": CNN, "data": DIGITS})
    assert r.status_code == 200, r.text
    checked = r.json()
    shapes = [layer["output_shape"] for layer in checked["layers"]]
    assert shapes == [[None, 1, 8, 8], [None, 8, 6, 6], [None, 8, 6, 6], [None, 8, 3, 3],
                      [None, 72], [None, 10]]  # fmt: skip
    assert [layer["params"] for layer in checked["layers"]] == [0, 8 * 9 + 8, 0, 0, 0, 730]
    assert checked["params"] == 80 + 730 and checked["classes"] == 10
    assert checked["task"] == "classification" and checked["input_shape"] == [None, 64]
    assert checked["rows"] == {"train": 1347, "validation": 450}  # 1797 rows, a quarter held out


def refused(r: httpx.Response) -> tuple[list[Any], str]:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    return detail["loc"], detail["msg"]


def test_a_mismatched_layer_is_named_with_both_shapes(client: httpx.Client) -> None:
    model = [
        {"type": "Linear", "out_features": 16},
        {"type": "ReLU"},
        {"type": "Linear", "in_features": 32, "out_features": 2},
    ]
    body = {"model": model, "data": {"kind": "sklearn", "name": "make_moons", "args": {}}}
    for path in ("/api/models/check", "/api/sessions"):
        loc, msg = refused(client.post(path, json=body))
        assert loc == ["body", "model", 2]
        assert msg == "layer 2, Linear: expects 32 features, gets 16"


@pytest.mark.parametrize(
    ("change", "loc", "words"),
    [
        ({"model": [{"type": "Evil"}]}, ["body", "model", 0], "no layer type 'Evil'"),
        (
            {"model": [{"type": "Linear", "out_features": 2, "device": "cuda"}]},
            ["body", "model", 0],
            "no argument 'device'",
        ),
        (
            {
                "model": [
                    {"type": "Linear", "out_features": 400},
                    {"type": "Linear", "out_features": 400},
                ]
            },
            ["body", "model"],
            "the model has 161600 parameters by layer 1: at most 100000",
        ),
        ({"model": [{"type": "ReLU"}] * 33}, ["body", "model"], "at most 32 layers"),
        (
            {"data": {"kind": "sklearn", "name": "make_moons", "args": {"n_samples": 20000}}},
            ["body", "data", "args", "n_samples"],
            "at most 10000 rows",
        ),
        (
            {"data": {"kind": "sklearn", "name": "fetch_openml", "args": {}}},
            ["body", "data", "name"],
            "one of make_moons",
        ),
        ({"batch_size": 2000}, ["body", "batch_size"], "at most 1024"),
        ({"loss": {"type": "MSELoss"}}, ["body", "loss"], "MSELoss is for a regression"),
        (
            {"data": {"kind": "points", "X": [[1, 2], [3]], "y": [0, 1]}},
            ["body", "data", "X", 1],
            "row 1 of X: 2 finite numbers",
        ),
    ],
)
def test_each_bound_and_malformed_spec_is_a_422_naming_where(
    client: httpx.Client, change: dict[str, Any], loc: list[Any], words: str
) -> None:
    body = {
        "model": [{"type": "Linear", "out_features": 2}],
        "data": {"kind": "sklearn", "name": "make_moons", "args": {"n_samples": 100}},
        **change,
    }
    got_loc, msg = refused(client.post("/api/sessions", json=body))
    assert got_loc == loc and words in msg, msg


def test_a_scenario_and_a_model_together_are_refused(client: httpx.Client) -> None:
    body = {"scenario": "moons", "model": MLP, "data": DIGITS}
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422 and "either a scenario or a model" in r.text


def plain_digits(
    make: Callable[[], list[nn.Module]], lr: float, steps: int
) -> tuple[nn.Module, float]:
    """Steps 1-5 for a standardized digits set in batches of 64, in plain PyTorch and
    scikit-learn: the oracle."""
    x, y = load_digits(return_X_y=True)
    x_train, _, y_train, _ = train_test_split(
        x.astype(np.float64), y, test_size=0.25, stratify=y, random_state=0
    )
    mean, std = x_train.mean(0), x_train.std(0)
    std = np.where(std == 0, 1.0, std)
    xt = torch.tensor((x_train - mean) / std).to(torch.float32)
    yt = torch.tensor(y_train.astype(np.int64))  # the classes 0-9 are their own indices
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = nn.Sequential(*make()).to(torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    order, start = rng.permutation(len(yt)), 0
    loss = torch.tensor(0.0)
    for _ in range(steps):
        if start >= len(yt):
            order, start = rng.permutation(len(yt)), 0
        idx = torch.from_numpy(order[start : start + 64])
        start += 64
        out = model(xt[idx])
        loss = nn.CrossEntropyLoss()(out, yt[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, float(loss.detach())


def paged(client: httpx.Client, sid: str, store: str, name: str) -> list[float]:
    """A tensor's elements, page by page as the API hands them out."""
    values: list[float] = []
    while True:
        query: dict[str, str | int] = {"store": store, "name": name, "start": len(values)}
        page = client.get(f"/api/sessions/{sid}/tensor", params=query).json()
        values += page["values"]
        if page["stop"] >= page["numel"]:
            return values


@pytest.mark.parametrize(("layers", "make", "big"), [(MLP, mlp, "0.weight"), (CNN, cnn, None)])
def test_digits_models_are_plain_pytorchs_numbers(
    client: httpx.Client,
    server_threads: int,
    layers: list[dict[str, Any]],
    make: Callable[[], list[nn.Module]],
    big: str | None,
) -> None:
    body = {"model": layers, "data": DIGITS, "standardize": True, "batch_size": 64, "lr": 0.1}
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    session = lines(client, sid, LOOP * 3)
    model, loss = plain_digits(make, 0.1, 3)
    assert session["loss"] == loss
    for name, exact in model.named_parameters():
        assert paged(client, sid, "params", name) == exact.detach().reshape(-1).tolist(), name
        assert exact.grad is not None
        assert paged(client, sid, "grad", name) == exact.grad.reshape(-1).tolist(), name
    if big is not None:  # 128 x 64: a summary on the wire, not its 8192 elements
        shown = next(p for p in session["params"] if p["name"] == big)
        assert isinstance(shown["value"], dict) and shown["value"]["shape"] == [128, 64]
    out = client.get(f"/api/sessions/{sid}/output").json()
    assert out["kind"] == "confusion" and out["split"] == "validation"
    assert sum(map(sum, out["matrix"])) == 450 and len(out["classes"]) == 10
    assert 0 <= out["accuracy"] <= 1 and out["loss"] > 0


CSV = b"size,colour,price\n1.5,red,3\n2,blue,4.25\n3.5,red,7\n4,blue,8.5\n5,red,10\n6,blue,12\n"


def test_a_csv_spec_names_its_columns_and_its_file_comes_back(client: httpx.Client) -> None:
    up = client.post("/api/datasets", content=CSV, headers={"Content-Type": "text/csv"})
    assert up.status_code == 201, up.text
    dataset = up.json()["id"]
    assert client.get(f"/api/datasets/{dataset}/file").content == CSV
    model = [{"type": "Linear", "out_features": 2}]
    data = {"kind": "csv", "dataset": dataset, "target": "colour"}
    r = client.post("/api/models/check", json={"model": model, "data": data, "validation": 0})
    assert r.status_code == 200, r.text
    checked = r.json()
    assert checked["task"] == "classification" and checked["classes"] == 2
    assert checked["input_shape"] == [None, 2]  # size and price: the numeric columns
    assert checked["preview"] == {
        "kind": "scatter",
        "features": ["size", "price"],
        "rows": [[1.5, 3.0], [2.0, 4.25], [3.5, 7.0], [4.0, 8.5], [5.0, 10.0], [6.0, 12.0]],
        "targets": ["red", "blue", "red", "blue", "red", "blue"],
    }
    text = {**data, "target": "price", "features": ["colour"]}
    loc, msg = refused(client.post("/api/models/check", json={"model": model, "data": text}))
    assert loc == ["body", "data", "features", 0] and "'colour' is not numeric" in msg
    missing = {**data, "target": "weight"}
    loc, msg = refused(client.post("/api/models/check", json={"model": model, "data": missing}))
    assert loc == ["body", "data", "target"] and "one of the columns (size, colour, price)" in msg
    unknown = {**data, "dataset": "0" * 64}
    loc, msg = refused(client.post("/api/sessions", json={"model": model, "data": unknown}))
    assert loc == ["body", "data", "dataset"] and "upload it first" in msg
    # a regression on price, standardized: a session runs its lines on it
    reg = {"kind": "csv", "dataset": dataset, "target": "price", "features": ["size"]}
    body = {"model": [{"type": "Linear", "out_features": 1}], "data": reg, "validation": 0}
    created = client.post("/api/sessions", json={**body, "standardize": True})
    assert created.status_code == 201, created.text
    session = lines(client, created.json()["id"], LOOP)
    assert session["spec"]["task"] == "regression" and session["loss"] > 0
    out = client.get(f"/api/sessions/{created.json()['id']}/output").json()
    assert out["kind"] == "line" and len(out["line"]["x"]) == 50


def test_predict_first_and_explain_work_on_a_spec(client: httpx.Client) -> None:
    body = {"model": MLP, "data": DIGITS, "standardize": True, "batch_size": 8, "accumulate": 2}
    sid = client.post("/api/sessions", json=body).json()["id"]
    session = lines(client, sid, ["next"] * 6)  # zero_grad, then two forward-loss(-backward)
    asked = client.get(f"/api/sessions/{sid}/question")
    assert asked.status_code == 200, asked.text
    assert asked.json()["line"] == session["next_line"] == "backward"
    lines(client, sid, ["next"])
    explained = client.get(f"/api/sessions/{sid}/explain", params={"param": "4.bias", "index": 3})
    assert explained.status_code == 200, explained.text
    parts = explained.json()["parts"]
    assert len(parts) == 2  # two micro-batches added to 4.bias.grad[3]
    grad = client.get(f"/api/sessions/{sid}/tensor", params={"store": "grad", "name": "4.bias"})
    assert sum(p["value"] for p in parts) == pytest.approx(grad.json()["values"][3], rel=1e-5)


@pytest.mark.parametrize(
    ("y", "task"),
    [
        ([2, 3, 5, 6], "classification"),  # integers: four classes
        ([2.0, 3.0, 5.0, 6.0], "regression"),  # numbers written as floats
        ([2.5, 3, 5, 6], "regression"),
        (["a", "b", "a", "b"], "classification"),
    ],
)
def test_the_task_is_inferred_from_how_the_target_is_written(
    client: httpx.Client, y: list[Any], task: str
) -> None:
    data = {"kind": "points", "X": [[1], [2], [3], [4]], "y": y}
    out = 1 if task == "regression" else len(set(y))
    body = {"model": [{"type": "Linear", "out_features": out}], "data": data, "validation": 0}
    r = client.post("/api/models/check", content=json.dumps(body), headers=JSON)
    assert r.status_code == 200, r.text
    assert r.json()["task"] == task
