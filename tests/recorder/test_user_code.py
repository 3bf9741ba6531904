"""``record(source, globals())`` from a script: the functions the namespace holds that the user
wrote (a file of theirs) are recorded statement by statement, each moment naming its file and
line; PyTorch's and generated code run untraced; the numbers are plain PyTorch's."""

from __future__ import annotations

import importlib.util
import linecache
from pathlib import Path
from typing import Any

import torch
from torch import nn

from loop_stepper.recorder import Trace, record

HELPERS = """\
import torch
from torch import nn


def train(model, opt, x, y, n):
    for i in range(n):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()
"""
SETUP = """\
torch.manual_seed(1)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.2)
x = torch.randn(6, 2)
y = torch.randn(6, 1)
"""


def helpers(tmp_path: Path) -> Any:
    """``HELPERS`` as a module of the user's project, imported from its file."""
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS)
    spec = importlib.util.spec_from_file_location("helpers_of_the_user", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(n: int) -> tuple[nn.Linear, float]:
    space: dict[str, Any] = {"torch": torch, "nn": nn}
    exec(SETUP, space)
    model, opt, x, y = (space[k] for k in ("model", "opt", "x", "y"))
    for _ in range(n):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, loss.item()


def test_a_function_the_namespace_holds_from_the_users_file(tmp_path: Path) -> None:
    module = helpers(tmp_path)
    space: dict[str, Any] = {"torch": torch, "nn": nn, "train": module.train}
    trace = record(SETUP + "final = train(model, opt, x, y, 3)\n", space, iterations=None)
    path = module.train.__code__.co_filename
    assert path == str(tmp_path / "helpers.py")
    assert trace.sources == {path: HELPERS} and trace.titles == {path: "helpers.py"}
    inside = [(m["line"], m["code"], m["iteration"]) for m in trace.moments if m["file"] == path]
    body = [
        (7, "loss = nn.functional.mse_loss(model(x), y)"),
        (8, "opt.zero_grad()"),
        (9, "loss.backward()"),
        (10, "opt.step()"),
    ]
    assert inside == [(*s, i) for i in (1, 2, 3) for s in body] + [(11, "return loss.item()", 3)]
    assert trace.iterations == 3
    model, final = plain(3)
    assert space["final"] == final and torch.equal(space["model"].weight, model.weight)
    last_step = [m for m in trace.moments if m["code"] == "opt.step()"][-1]
    assert [p["value"] for p in last_step["params"]] == [p.tolist() for p in model.parameters()]
    # the recorded source's own moments say so: no file
    assert [m["file"] for m in trace.moments[:5]] == [None] * 5


def test_pytorchs_and_generated_code_run_untraced() -> None:
    space: dict[str, Any] = {"torch": torch, "nn": nn, "mse": nn.functional.mse_loss}
    exec("def made(a):\n    b = a * 2\n    return b\n", space)  # compiled as <string>
    trace = record(SETUP + "z = made(x)\nloss = mse(model(x), y)\n", space)
    assert {m["file"] for m in trace.moments} == {None} and trace.sources == {}
    assert [m["code"] for m in trace.moments[-2:]] == ["z = made(x)", "loss = mse(model(x), y)"]


def test_a_cell_whose_text_does_not_parse_runs_untraced() -> None:
    """A cell's code whose text in linecache is not Python (changed under its name) is skipped,
    and it still runs, with its own numbers."""
    name = "<ipython-input-77-deadbeef>"
    space: dict[str, Any] = {}
    exec(compile("def double(t):\n    u = t * 2\n    return u\n", name, "exec"), space)
    linecache.cache[name] = (9, None, ["def (:\n"], name)
    try:
        trace = record("import torch\nv = double(torch.ones(2))\n", space)
    finally:
        del linecache.cache[name]
    assert [m["code"] for m in trace.moments] == ["import torch", "v = double(torch.ones(2))"]
    assert trace.sources == {} and space["v"].tolist() == [2.0, 2.0]


def test_moments_inside_other_code_survive_the_json(tmp_path: Path) -> None:
    module = helpers(tmp_path)
    space: dict[str, Any] = {"torch": torch, "nn": nn, "train": module.train}
    trace = record(SETUP + "final = train(model, opt, x, y, 5)\n", space, iterations=2)
    back = Trace.from_json(trace.to_json())
    assert back.moments == trace.moments and back.sources == trace.sources
    assert back.titles == {module.train.__code__.co_filename: "helpers.py"}
    assert back.stopped == trace.stopped and "inside train() of helpers.py" in str(back.stopped)
