"""``record`` against plain PyTorch: the user's own loop, recorded statement by statement, gives
plain PyTorch's numbers bit for bit at every moment, and leaves the user's model trained
exactly as the code says."""

from __future__ import annotations

import json
import math
from typing import Any, cast

import pytest
import torch
from torch import nn

from loop_stepper.recorder import MAX_MOMENTS, Trace, record
from loop_stepper.recorder.probe import observers

WORKED = """\
import torch
from torch import nn

x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
model = nn.Linear(1, 1)
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(2):
    out = model(x)
    loss = loss_fn(out, y)
    optimizer.zero_grad({zero})
    loss.backward()
    optimizer.step()
"""
LOOP_LINES = {13: "out", 14: "loss", 15: "zero_grad", 16: "backward", 17: "step"}


def worked(zero: str = "") -> str:
    return WORKED.format(zero=zero)


def plain_worked(zero_grad: bool = True, set_to_none: bool = True) -> list[dict[str, Any]]:
    """The worked example in plain PyTorch, the stores read after each of the five lines."""
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    rows: list[dict[str, Any]] = []
    loss = None

    def read() -> None:
        rows.append(
            {
                "params": [p.detach().tolist() for p in model.parameters()],
                "grads": [None if p.grad is None else p.grad.tolist() for p in model.parameters()],
                "loss": None if loss is None else loss.item(),
            }
        )

    for _ in range(2):
        out = model(x)
        read()
        loss = loss_fn(out, y)
        read()
        if zero_grad:
            optimizer.zero_grad(set_to_none=set_to_none)
        read()
        loss.backward()
        read()
        optimizer.step()
        read()
    return rows


def loop_moments(trace: Trace) -> list[dict[str, Any]]:
    return [
        {
            "params": [p["value"] for p in m["params"]],
            "grads": [p["grad"] for p in m["params"]],
            "loss": m["loss"],
        }
        for m in trace.moments
        if m["line"] in LOOP_LINES
    ]


def test_the_worked_example_is_plain_pytorch_at_every_moment() -> None:
    trace = record(worked())
    assert trace.error is None and trace.ended == "end" and trace.iterations == 2
    assert loop_moments(trace) == plain_worked()  # == on floats: bit for bit
    by_line = [(m["line"], m) for m in trace.moments if m["line"] in LOOP_LINES]
    first = dict(by_line[:5])
    assert [p["name"] for p in first[13]["params"]] == ["model.weight", "model.bias"]
    assert first[14]["loss"] == 18.5
    assert [p["grad"] for p in first[16]["params"]] == [[[-23.5]], [-8.0]]
    w, b = (cast(Any, p["value"]) for p in first[17]["params"])
    assert (w[0][0], b[0]) == (pytest.approx(1.175, abs=1e-6), pytest.approx(0.4, abs=1e-6))
    assert first[13]["graph"]["status"] == "built"
    assert first[16]["graph"]["status"] == "freed"
    assert next(n["label"] for n in first[14]["graph"]["nodes"]) == "MseLossBackward0"
    assert all(m["iteration"] == i // 5 + 1 for i, (_, m) in enumerate(by_line))


def test_each_moment_says_what_its_statement_read_and_wrote() -> None:
    trace = record(worked())
    marks = {m["line"]: (m["reads"], m["writes"]) for m in trace.moments if m["iteration"] == 2}
    assert marks[13] == (["params"], ["graph"])
    assert marks[14] == (["graph"], ["graph", "loss"])
    assert marks[15] == ([], ["grad"])
    assert marks[16] == (["graph", "grad", "loss"], ["graph", "grad"])
    assert marks[17] == (["params", "grad"], ["params"])


def test_without_zero_grad_the_buffers_add_up() -> None:
    trace = record(worked().replace("    optimizer.zero_grad()\n", ""))
    assert loop_moments(trace) == [r for i, r in enumerate(plain_worked(False)) if i % 5 != 2]
    second = next(m for m in trace.moments if m["line"] == 15 and m["iteration"] == 2)
    grads: list[Any] = [p["grad"] for p in second["params"]]
    assert grads[0][0][0] == pytest.approx(-27.375, abs=1e-5)
    assert grads[1][0] == pytest.approx(-9.325, abs=1e-5)


def test_zeros_are_not_none() -> None:
    zeros = record(worked("set_to_none=False"))
    assert loop_moments(zeros) == plain_worked(True, set_to_none=False)
    after = next(m for m in zeros.moments if m["line"] == 15 and m["iteration"] == 2)
    assert [p["grad"] for p in after["params"]] == [[[0.0]], [0.0]]
    none = next(m for m in record(worked()).moments if m["line"] == 15 and m["iteration"] == 2)
    assert [p["grad"] for p in none["params"]] == [None, None]


def test_the_users_objects_are_the_ones_trained() -> None:
    space: dict[str, Any] = {}
    record(worked(), space)
    plain = plain_worked()[-1]["params"]
    assert [p.detach().tolist() for p in space["model"].parameters()] == plain


IN_A_FUNCTION = """\
import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(64, 2)
Y = (X[:, 0] > 0).long()
data = torch.utils.data.TensorDataset(X, Y)
loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)
net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()

def train_epoch(model, loader, opt):
    total = 0.0
    for xb, yb in loader:
        out = model(xb)
        loss = loss_fn(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    return total

for epoch in range(EPOCHS):
    train_epoch(net, loader, opt)
"""


def test_moons_style_adam_with_a_dataloader_in_a_function() -> None:
    """A loop inside a function the cell defines: its statements are moments, the batches
    are the iterations, Adam's state is the fifth store; the numbers are plain PyTorch's."""
    source = IN_A_FUNCTION.replace("EPOCHS", "2")
    space: dict[str, Any] = {}
    trace = record(source, space, iterations=None)
    plain: dict[str, Any] = {}
    exec(source, plain)
    assert trace.ended == "end" and trace.iterations == 8  # 2 epochs of 4 batches
    final = [p.detach() for p in space["net"].parameters()]
    assert all(torch.equal(a, b) for a, b in zip(final, plain["net"].parameters(), strict=True))
    steps = [m for m in trace.moments if m["code"] == "opt.step()"]
    assert [m["function"] for m in steps] == ["train_epoch"] * 8
    assert [m["iteration"] for m in steps] == list(range(1, 9))
    state = steps[0]["optimizer_state"][0]["state"]
    assert set(state) == {"step", "exp_avg", "exp_avg_sq"}
    assert steps[0]["writes"] == ["params", "optimizer_state"]
    # the call of the function is a moment too, after its statements
    calls = [m for m in trace.moments if m["code"] == "train_epoch(net, loader, opt)"]
    assert len(calls) == 2 and calls[0]["function"] is None


def test_a_long_loop_stops_after_its_iterations_and_says_so() -> None:
    space: dict[str, Any] = {}
    trace = record(IN_A_FUNCTION.replace("EPOCHS", "100_000"), space, iterations=3)
    assert trace.ended == "stopped" and trace.iterations == 3
    assert trace.stopped is not None and "3 iterations" in trace.stopped
    assert "line 15" in trace.stopped  # the loop whose body calls backward
    assert len([m for m in trace.moments if m["code"] == "opt.step()"]) == 3
    assert int(space["opt"].state[space["net"][0].weight]["step"]) == 3


def test_to_the_end_is_bounded() -> None:
    source = worked().replace("range(2)", "range(1_000_000)")
    trace = record(source, iterations=None)
    assert trace.ended == "stopped" and len(trace.moments) == MAX_MOMENTS
    assert trace.stopped is not None and str(MAX_MOMENTS) in trace.stopped.replace(",", "")


def test_a_statement_that_raises_ends_the_recording_in_pytorchs_words() -> None:
    source = worked().replace("    loss.backward()\n", "    loss.backward()\n    loss.backward()\n")
    trace = record(source)
    assert trace.ended == "error" and trace.error is not None
    assert trace.error.startswith("Trying to backward through the graph a second time")
    assert (trace.error.type, trace.error.line, trace.error.code) == (
        "RuntimeError",
        17,
        "loss.backward()",
    )
    assert trace.moments[-1]["line"] == 16  # the moments before it are kept
    assert json.loads(trace.to_json())["error"]["line"] == 17
    assert observers() == [] and torch.autograd.backward.__module__ == "torch.autograd"


def test_a_million_parameters_give_kilobytes_a_moment() -> None:
    source = """\
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 1000)
y = torch.randint(0, 10, (8,))
for i in range(2):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    trace = record(source)
    weight: Any = trace.moments[-1]["params"][0]
    assert weight["value"]["summary"] is True and weight["value"]["numel"] == 1_000_000
    assert weight["grad"]["numel"] == 1_000_000
    per_moment = len(json.dumps(trace.packed())) / len(trace.moments)
    assert per_moment < 32_000  # kilobytes, not the 8 MB of a million floats
    assert len(trace.to_json()) / len(trace.moments) < 64_000


def test_nan_is_spelled_as_the_server_spells_it() -> None:
    source = "import torch\nw = torch.tensor([float('nan'), 1.0], requires_grad=True)\n"
    source += "loss = (w * 2).sum()\nloss.backward()\n"
    text = record(source).to_json()
    data = json.loads(text)  # the packed form: a moment's value is the index of its part
    assert data["parts"][data["moments"][-1]["params"][0]["value"]] == ["NaN", 1.0]
    assert data["moments"][-1]["loss"] == "NaN"
    last = Trace.from_json(text).moments[-1]  # and read back whole, the numbers floats again
    value: Any = last["params"][0]["value"]
    assert math.isnan(value[0]) and value[1] == 1.0
    assert last["loss"] is not None and math.isnan(last["loss"])


def test_syntax_errors_and_bad_iterations_are_pythons_own() -> None:
    with pytest.raises(SyntaxError):
        record("for x in:\n")
    with pytest.raises(ValueError, match="iterations"):
        record("x = 1", iterations=0)
