"""Code from earlier cells is the user's code: a ``%%step`` cell calling ``train(...)`` or
``trainer.fit(...)`` that an earlier cell defined records the statements inside them, each moment
naming that cell and its line, with plain PyTorch's numbers. The cells run through a real
``InteractiveShell``, so the functions come from IPython's own cell files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from torch import nn

from loop_stepper.notebook.widget import Stepper

DEFINITIONS = """\
import torch
from torch import nn

def train(model, opt, x, y, n):
    for i in range(n):
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("trained", n)
    return loss.item()

class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)

    def fit(self, x, y, epochs):
        for epoch in range(epochs):
            loss = nn.functional.mse_loss(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return loss.item()
"""
DATA = """\
torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
"""
TRAIN_LINES = ["out = model(x)", "loss = nn.functional.mse_loss(out, y)", "opt.zero_grad()"]
TRAIN_LINES += ["loss.backward()", "opt.step()"]


def line_of(text: str, code: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == code)


def plain_train(n: int) -> tuple[nn.Linear, list[list[torch.Tensor]], float]:
    """The same two cells and ``train`` in plain PyTorch: the weights after each step."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 3)
    y = torch.randn(8, 1)
    after: list[list[torch.Tensor]] = []
    for _ in range(n):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        after.append([p.detach().clone() for p in model.parameters()])
    return model, after, loss.item()


@pytest.fixture()
def shell() -> Iterator[Any]:
    """A real shell whose first two cells defined ``train``, ``Trainer`` and the data."""
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "loop_stepper")
    for cell in (DEFINITIONS, DATA):
        assert ip.run_cell(cell, store_history=True).success
    yield ip
    InteractiveShell.clear_instance()


def test_a_function_of_an_earlier_cell_is_recorded_statement_by_statement(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    widget = shell.run_cell_magic("step", "--iterations all", "final = train(model, opt, x, y, 4)")
    trace = shell.user_ns["_step"]
    cell = shell.user_ns["train"].__code__.co_filename  # IPython's own name of the first cell
    assert cell.startswith("<ipython-input-1-") and trace.sources == {cell: DEFINITIONS}
    assert trace.titles == {cell: "In [1]"}
    inside = [m for m in trace.moments if m["file"] == cell]
    ending = ['print("trained", n)', "return loss.item()"]  # its last statements ran too
    assert [m["code"] for m in inside] == TRAIN_LINES * 4 + ending
    lines = [line_of(DEFINITIONS, c) for c in TRAIN_LINES + ending]
    assert (
        [m["line"] for m in inside] == lines[:5] * 4 + lines[5:] == [6, 7, 8, 9, 10] * 4 + [11, 12]
    )
    assert {m["function"] for m in inside} == {"train"}
    assert [m["iteration"] for m in inside[:20]] == [i for i in (1, 2, 3, 4) for _ in TRAIN_LINES]
    assert trace.iterations == 4 and trace.ended == "end"
    assert "trained 4" in capsys.readouterr().out
    assert trace.moments[-1]["file"] is None and trace.moments[-1]["line"] == 1
    # plain PyTorch's numbers, after every step and at the end
    model, after, final = plain_train(4)
    steps = [m for m in inside if m["code"] == "opt.step()"]
    assert [[p["value"] for p in m["params"]] for m in steps] == [
        [p.tolist() for p in ps] for ps in after
    ]
    assert [p["name"] for p in steps[0]["params"]] == ["model.weight", "model.bias"]
    assert shell.user_ns["final"] == final
    assert torch.equal(shell.user_ns["model"].weight, model.weight)
    # the widget holds the cell's text and the moments pointing into it
    assert widget.trace["sources"] == {cell: DEFINITIONS}
    assert widget.trace["moments"][0]["file"] == cell


def test_stopping_inside_the_function_says_so(shell: Any) -> None:
    shell.run_cell_magic("step", "--iterations 2", "final = train(model, opt, x, y, 100)")
    trace = shell.user_ns["_step"]
    assert trace.ended == "stopped" and trace.iterations == 2
    assert [m["code"] for m in trace.moments] == TRAIN_LINES * 2
    assert trace.stopped.startswith("stopped after 2 iterations of the loop at line 5")
    assert "inside train() of In [1]" in trace.stopped
    assert "the rest of that call did not run" in trace.stopped
    assert "final" not in shell.user_ns  # the call never returned
    model, _, _ = plain_train(2)
    assert torch.equal(shell.user_ns["model"].weight, model.weight)


def test_a_class_based_trainer_of_an_earlier_cell(shell: Any) -> None:
    cell = "trainer = Trainer(model, 0.1)\nloss = trainer.fit(x, y, 3)\n"
    shell.run_cell_magic("step", "--iterations all", cell)
    trace = shell.user_ns["_step"]
    first = shell.user_ns["Trainer"].fit.__code__.co_filename
    inits = [m for m in trace.moments if m["function"] == "__init__"]
    assert [(m["file"], m["line"]) for m in inits] == [
        (first, line_of(DEFINITIONS, "self.model = model")),
        (first, line_of(DEFINITIONS, "self.opt = torch.optim.SGD(model.parameters(), lr=lr)")),
    ]
    fits = [m for m in trace.moments if m["function"] == "fit"]
    assert len(fits) == 3 * 4 + 1 and {m["file"] for m in fits} == {first}
    assert trace.iterations == 3 and [m["iteration"] for m in fits[-5:-1]] == [3] * 4
    _, after, final = plain_train(3)
    assert shell.user_ns["loss"] == final
    steps = [m for m in fits if m["code"] == "self.opt.step()"]
    assert [p["value"] for p in steps[-1]["params"]] == [p.tolist() for p in after[-1]]


def test_the_widgets_text_is_a_summary(shell: Any) -> None:
    shell.run_cell_magic("step", "--iterations 2", "final = train(model, opt, x, y, 100)")
    widget: Stepper = shell.run_cell_magic("step", "--iterations 2", "train(model, opt, x, y, 9)")
    text = repr(widget)
    trace = shell.user_ns["_step"]
    loss = [m["loss"] for m in trace.moments if m["code"] == TRAIN_LINES[1]]
    assert text.splitlines()[:3] == [
        "Loop Stepper: 10 moments of a cell of 1 line, 2 iterations, stopped early, 0 diagnoses",
        "  the cell: train(model, opt, x, y, 9)",
        f"  loss: {loss[0]:.4g} at first, {loss[-1]:.4g} at last",
    ]
    assert "  10 moments inside train() of In [1]" in text.splitlines()
    bundle = widget._repr_mimebundle_()
    assert bundle is not None
    data, _ = bundle
    assert data["text/plain"] == text and "object at 0x" not in text
    printed: list[str] = []

    class Printer:
        def text(self, said: str) -> None:
            printed.append(said)

    widget._repr_pretty_(Printer(), False)
    assert printed == [text]


def test_a_bug_inside_an_earlier_cells_function_is_named_there(shell: Any) -> None:
    """``train`` without its ``zero_grad``: the doctor names the backward of the first cell,
    at the moment inside ``train`` that ran it, not the call in the recorded cell."""
    forgetful = DEFINITIONS.replace("        opt.zero_grad()\n", "")
    assert shell.run_cell(forgetful, store_history=True).success
    shell.run_cell_magic("step", "--iterations 3", "train(model, opt, x, y, 3)")
    trace = shell.user_ns["_step"]
    cell = shell.user_ns["train"].__code__.co_filename
    assert cell.startswith("<ipython-input-3-")
    backward = line_of(forgetful, "loss.backward()")
    assert [(d["bug"], d["file"], d["line"]) for d in trace.diagnoses] == [
        ("skip_zero_grad", cell, backward)
    ]
    moment = trace.moments[trace.diagnoses[0]["moment"]]
    assert (moment["file"], moment["line"], moment["code"]) == (cell, backward, "loss.backward()")
    assert moment["iteration"] == trace.diagnoses[0]["iteration"] == 2
