"""What each statement of a recorded loop read and wrote, from what happened to the tensors: a
step written by hand (``p.data += -lr * p.grad``, which bumps no version of ``p``'s own) writes
the parameters and reads their ``.grad``; a backward writes ``.grad`` and the graph, never the
parameters, also the first one that meets them. A loop that steps by hand counts its passes as
iterations, also with a backward written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from loop_stepper.recorder import Trace, record
from loop_stepper.stores import tensors
from tests.recorder.loops import makemore

CORPUS = Path(__file__).resolve().parent.parent / "doctor" / "corpus"

MAKEMORE = makemore()


def marks(trace: Trace, code: str) -> list[tuple[list[str], list[str]]]:
    return [(m["reads"], m["writes"]) for m in trace.moments if m["code"] == code]


def test_a_data_update_writes_params_and_reads_grad_and_backward_never_writes_params() -> None:
    trace = record(MAKEMORE, iterations=3)
    assert trace.iterations == 3 and trace.ended == "stopped"
    update = marks(trace, "p.data += -0.1 * p.grad")
    assert len(update) == 15
    assert all(w == ["params"] and set(r) == {"params", "grad"} for r, w in update)
    backward = marks(trace, "loss.backward()")
    assert backward == [(["graph", "grad", "loss"], ["graph", "grad"])] * 3  # the first too
    assert all(w == ["grad"] for _, w in marks(trace, "p.grad = None")[5:])
    assert marks(trace, "p.requires_grad = True") == [([], [])] * 5  # naming is no write


def test_a_data_update_of_a_big_tensor_is_drawn_anew() -> None:
    """W1 holds 600 elements: drawn as a summary, kept by the tensor's version, which ``.data``
    does not bump; after each update the moment shows the new values' summary, plain
    PyTorch's."""
    space: dict[str, Any] = {}
    trace = record(MAKEMORE, space, iterations=1)
    w1 = [
        next(p["value"] for p in m["params"] if p["name"] == "W1")
        for m in trace.moments
        if m["code"] == "p.data += -0.1 * p.grad"
    ]
    assert w1[0] != w1[1]  # the statement that moved W1 (the second of five) shows it moved
    assert w1[1] == w1[-1] == tensors.shown(space["W1"])
    plain: dict[str, Any] = {}
    exec(makemore(iterations=1), plain)
    assert torch.equal(space["W1"], plain["W1"])


D2L_SGD = """\
import torch

torch.manual_seed(0)
X = torch.randn(40, 2)
y = X @ torch.tensor([[2.0], [-3.4]]) + 4.2
w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


for epoch in range(10):
    l = ((X @ w + b - y) ** 2 / 2).sum()
    l.backward()
    sgd([w, b], 0.03, 40)
"""


def test_a_no_grad_update_in_a_function_writes_params_and_clearing_writes_grad() -> None:
    trace = record(D2L_SGD, iterations=3)
    assert trace.iterations == 3
    update = marks(trace, "param -= lr * param.grad / batch_size")
    assert update == [(["params", "grad"], ["params"])] * 6
    assert marks(trace, "param.grad.zero_()") == [([], ["grad"])] * 6
    assert [n for n in (p["name"] for p in trace.moments[-1]["params"])] == ["w", "b"]


def test_a_hand_written_backward_loop_counts_its_iterations() -> None:
    """makemore part 4: no ``backward()``, the update under ``no_grad`` by gradients computed by
    hand; ``iterations=3`` stops after 3 passes (not at the 2,000-moment bound), where the
    plain loop of 3 passes ends."""
    source = (CORPUS / "correct" / "036_makemore_manual_backward.py").read_text()
    space: dict[str, Any] = {"__name__": "__main__"}
    trace = record(source, space, iterations=3)
    assert trace.ended == "stopped" and trace.iterations == 3
    assert trace.stopped is not None and "3 iterations of the loop at line 32" in trace.stopped
    update = [m for m in trace.moments if m["code"] == "p.data += -lr * grad"]
    assert [m["iteration"] for m in update] == [1] * 7 + [2] * 7 + [3] * 7
    # b1's update rounds away (its gradient is ~0 under batch norm): it writes nothing
    assert [m["writes"] == ["params"] for m in update] == [i % 7 != 2 for i in range(21)]
    plain: dict[str, Any] = {"__name__": "__main__"}
    exec(source.replace("range(120)", "range(3)"), plain)
    for name in ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias"):
        assert torch.equal(space[name], plain[name]), name
