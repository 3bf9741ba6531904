"""Every kind of parameter, recorded against plain PyTorch: a parametrization's real leaves
(``weight_norm``, ``spectral_norm``, ``torch.nn.utils.parametrize``), tied weights
shown once, a parameter added during the cell and a layer replaced during it; and only the
user's thread and process traced (DataLoader workers forked or spawned, another thread)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loop_stepper.recorder import Trace, record
from loop_stepper.stores import tensors
from tests.recorder import same

ROOT = Path(__file__).resolve().parents[2]

HEAD = """\
import threading
import torch
from torch import nn
import torch.nn.functional as F
from torch.nn.utils import parametrize

torch.manual_seed(0)
x, y = torch.randn(32, 6), torch.randn(32, 2)
"""
LOOP = """
for i in range(3):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
CASES = {
    "weight_norm": (
        "model = nn.Sequential(nn.utils.parametrizations.weight_norm(nn.Linear(6, 4)), "
        "nn.Tanh(), nn.Linear(4, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        [
            "model.0.bias",
            "model.0.parametrizations.weight.original0",
            "model.0.parametrizations.weight.original1",
            "model.2.weight",
            "model.2.bias",
        ],
    ),
    "spectral_norm": (
        "model = nn.Sequential(nn.utils.parametrizations.spectral_norm(nn.Linear(6, 4)), "
        "nn.Tanh(), nn.Linear(4, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        [
            "model.0.bias",
            "model.0.parametrizations.weight.original",
            "model.2.weight",
            "model.2.bias",
        ],
    ),
    "parametrize": (
        "class Symmetric(nn.Module):\n"
        "    def forward(self, X):\n"
        "        return X.triu() + X.triu(1).transpose(-1, -2)\n"
        "layer = nn.Linear(6, 6)\n"
        "parametrize.register_parametrization(layer, 'weight', Symmetric())\n"
        "model = nn.Sequential(layer, nn.Tanh(), nn.Linear(6, 2))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        # the shortest name: through ``layer``, the cell's own name for the first layer
        ["layer.bias", "layer.parametrizations.weight.original", "model.2.weight", "model.2.bias"],
    ),
    "tied": (
        "class Tied(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.inp = nn.Linear(6, 6, bias=False)\n"
        "        self.out = nn.Linear(6, 6, bias=False)\n"
        "        self.out.weight = self.inp.weight\n"
        "        self.head = nn.Linear(6, 2)\n"
        "    def forward(self, x):\n"
        "        return self.head(torch.tanh(self.out(torch.tanh(self.inp(x)))))\n"
        "model = Tied()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        ["model.inp.weight", "model.head.weight", "model.head.bias"],
    ),
}


def plain(source: str) -> tuple[dict[str, Any], str]:
    space: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "<plain>", "exec"), space)
    return same.state(space), printed.getvalue()


def recorded(source: str) -> tuple[Trace, dict[str, Any], str, dict[str, Any]]:
    space: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trace = record(source, space, iterations=None)
    return trace, same.state(space), printed.getvalue(), space


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_parametrized_or_tied_model_shows_its_real_leaves_once(case: str) -> None:
    build, names = CASES[case]
    source = HEAD + build + LOOP
    trace, state, printed, space = recorded(source)
    assert (state, printed) == plain(source)
    assert trace.ended == "end" and trace.internal_error is None
    last = trace.moments[-1]
    assert sorted(p["name"] for p in last["params"]) == sorted(names)
    for p in last["params"]:
        root, _, path = p["name"].partition(".")
        value = space[root].get_parameter(path)
        assert repr(p["value"]) == repr(tensors.shown(value)), p["name"]
        assert repr(p["grad"]) == repr(tensors.shown(value.grad)), p["name"]
    steps = [m for m in trace.moments if m["code"] == "opt.step()"]
    assert len(steps) == 3 and all("params" in m["writes"] for m in steps)


def test_a_parameter_added_and_a_layer_replaced_during_the_cell() -> None:
    source = (
        HEAD
        + "model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))\n"
        + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + LOOP
        + "model.scale = nn.Parameter(torch.ones(2))\n"
        + "opt.add_param_group({'params': [model.scale]})\n"
        + "model[2] = nn.Linear(4, 2)\n"
        + "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
        + LOOP.replace("model(x)", "model(x) * model.scale")
    )
    trace, state, printed, space = recorded(source)
    assert (state, printed) == plain(source)
    wanted = ["model.0.weight", "model.0.bias", "model.scale", "model.2.weight", "model.2.bias"]
    last = trace.moments[-1]
    assert sorted(p["name"] for p in last["params"]) == sorted(wanted)
    model = space["model"]
    for p in last["params"]:
        value = model.get_parameter(p["name"].removeprefix("model."))
        assert repr(p["value"]) == repr(tensors.shown(value)), p["name"]
    added = next(i for i, m in enumerate(trace.moments) if m["code"].startswith("model.scale ="))
    first = next(m for m in trace.moments[added:] if m["code"] == "loss.backward()")
    assert "model.scale" in [p["name"] for p in first["params"]]  # trained from then on
    replaced = max(i for i, m in enumerate(trace.moments) if m["code"].startswith("opt = torch"))
    assert all(  # the old layer, held by the old optimizer alone, went with it
        not p["name"].startswith("opt.") for m in trace.moments[replaced:] for p in m["params"]
    )


THREADS_AND_WORKERS = """\
import threading
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(data, batch_size=16, num_workers={workers}{context})
done = []


def elsewhere():
    side = nn.Linear(3, 1)
    side(torch.randn(4, 3)).sum().backward()
    done.append(side.weight.grad is not None)


for xb, yb in loader:
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
worker = threading.Thread(target=elsewhere)
worker.start()
worker.join()
"""


def seen(trace: Trace) -> list[Any]:
    return [(m["line"], m["reads"], m["writes"], m["params"]) for m in trace.moments]


ALONE_AND_WORKERS = """\
import json, sys
from loop_stepper.recorder import record
from tests.recorder.test_parameters import THREADS_AND_WORKERS, seen
found = []
for workers, context in ((0, ""), (2, f", multiprocessing_context={sys.argv[1]!r}")):
    space = {"__name__": "__main__"}
    source = THREADS_AND_WORKERS.format(workers=workers, context=context)
    trace = record(source, space, iterations=None)
    found.append({"seen": seen(trace), "ended": trace.ended, "error": str(trace.error),
                  "internal": trace.internal_error is not None, "iterations": trace.iterations,
                  "elsewhere": any(m["function"] == "elsewhere" for m in trace.moments),
                  "names": [p["name"] for p in trace.moments[-1]["params"]], "done": space["done"]})
print(json.dumps(found))
"""


@pytest.mark.parametrize("start", ["fork", "spawn"])  # not "context": pytest-playwright's fixture
def test_only_the_users_thread_and_process_are_traced(start: str) -> None:
    """In a fresh interpreter, as a script runs it (a spawned worker imports ``__main__``
    again: another test's IPython shell must not be the one it finds)."""
    done = subprocess.run(
        [sys.executable, "-c", ALONE_AND_WORKERS, start],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    alone, workers = json.loads(done.stdout.strip().splitlines()[-1])
    assert workers["error"] == "None" and not workers["internal"], workers["error"]
    assert workers["ended"] == "end" and workers["iterations"] == 4
    assert workers["seen"] == alone["seen"]
    assert not workers["elsewhere"]  # another thread: untraced
    assert workers["names"] == ["model.weight", "model.bias"]
    assert workers["done"] == [True]  # the thread ran, untraced
