"""The names a recorded trace shows, on the patterns of real tutorials: each parameter the loop
trains, under the name by which the cell's namespace reaches it once the statement has
finished; a loop's variable, ``self`` or an optimizer's ``param_groups`` only where nothing
else reaches it; the graph's ``AccumulateGrad`` nodes under the same names."""

from __future__ import annotations

from typing import Any

from loop_stepper.recorder import Trace, record
from loop_stepper.stores import tensors
from tests.recorder.loops import makemore


def names_at(trace: Trace, code: str) -> list[list[str]]:
    return [[p["name"] for p in m["params"]] for m in trace.moments if m["code"] == code]


def leaves_of(moment: Any) -> set[str]:
    return {
        n["label"].removeprefix("AccumulateGrad: ")
        for n in moment["graph"]["nodes"]
        if n["label"].startswith("AccumulateGrad")
    }


D2L_SCRATCH = """\
import torch

class LinearRegressionScratch:
    def __init__(self, num_inputs, lr, sigma=0.01):
        self.w = torch.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)
        self.lr = lr

    def forward(self, X):
        return X @ self.w + self.b

torch.manual_seed(0)
X = torch.randn(32, 2)
y = X @ torch.tensor([[2.0], [-3.4]]) + 4.2
model = LinearRegressionScratch(2, lr=0.03)
for epoch in range(5):
    loss = ((model.forward(X) - y) ** 2 / 2).mean()
    loss.backward()
    with torch.no_grad():
        for param in [model.w, model.b]:
            param -= model.lr * param.grad
            param.grad.zero_()
"""


def test_d2l_scratch_regression_shows_both_w_and_b() -> None:
    """Two leaves no module names, reached by one backward: both shown (not one ``leaf0``),
    as the namespace reaches them, also in the graph."""
    space: dict[str, Any] = {}
    trace = record(D2L_SCRATCH, space, iterations=3)
    assert trace.iterations == 3 and trace.ended == "stopped"
    backward = [m for m in trace.moments if m["code"] == "loss.backward()"]
    assert [[p["name"] for p in m["params"]] for m in backward] == [["model.w", "model.b"]] * 3
    loss_line = next(m for m in trace.moments if m["code"].startswith("loss = "))
    assert leaves_of(loss_line) == {"model.w", "model.b"}
    plain: dict[str, Any] = {}
    exec(D2L_SCRATCH.replace("range(5)", "range(3)"), plain)
    last = {p["name"]: p["value"] for p in trace.moments[-1]["params"]}
    assert last == {"model.w": plain["model"].w.tolist(), "model.b": plain["model"].b.tolist()}


MAKEMORE_3 = """\
import torch
import torch.nn.functional as F

class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])

class BatchNorm1d:
    def __init__(self, dim, eps=1e-5):
        self.eps = eps
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)

    def __call__(self, x):
        xhat = (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, keepdim=True) + self.eps)
        self.out = self.gamma * xhat + self.beta
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]

class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []

g = torch.Generator().manual_seed(2147483647)
vocab, n_embd, block, n_hidden = 27, 4, 3, 16
C = torch.randn((vocab, n_embd), generator=g)
layers = [
    Linear(n_embd * block, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    Linear(n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
    Linear(n_hidden, vocab, bias=False), BatchNorm1d(vocab),
]
with torch.no_grad():
    layers[-1].gamma *= 0.1
    for layer in layers[:-1]:
        if isinstance(layer, Linear):
            layer.weight *= 5 / 3
parameters = [C] + [p for layer in layers for p in layer.parameters()]
for p in parameters:
    p.requires_grad = True

Xtr = torch.randint(0, vocab, (200, block), generator=g)
Ytr = torch.randint(0, vocab, (200,), generator=g)
for i in range(1000):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    x = C[Xtr[ix]].view(-1, n_embd * block)
    for layer in layers:
        x = layer(x)
    loss = F.cross_entropy(x, Ytr[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -0.1 * p.grad
"""


def test_makemore_part_3_shows_every_parameter_of_its_list_of_layers() -> None:
    """The user's own layer classes in a list: each tensor under ``layers[i].weight`` or
    ``layers[i].gamma`` (not ``parameters[5]``, not ``p``), all 10 of them, at the values of the
    same loop run plainly for 3 iterations."""
    space: dict[str, Any] = {}
    trace = record(MAKEMORE_3, space, iterations=3)
    assert trace.iterations == 3 and trace.ended == "stopped"
    expected = ["C", "layers[0].weight", "layers[1].gamma", "layers[1].beta"]
    expected += ["layers[3].weight", "layers[4].gamma", "layers[4].beta"]
    expected += ["layers[6].weight", "layers[7].gamma", "layers[7].beta"]
    for shown in names_at(trace, "loss.backward()"):
        assert sorted(shown) == sorted(expected)
    plain: dict[str, Any] = {}
    exec(MAKEMORE_3.replace("range(1000)", "range(3)"), plain)
    last = {p["name"]: p for p in trace.moments[-1]["params"]}
    assert len(last) == len(plain["parameters"]) == 10
    in_order = [expected[0], *expected[1:4], *expected[4:7], *expected[7:]]
    for name, tensor in zip(in_order, plain["parameters"], strict=True):
        assert last[name]["value"] == tensors.shown(tensor), name  # its elements, or summary


MAKEMORE_2 = makemore(hidden=10)


def test_makemore_part_2_requires_grad_in_a_loop_names_each_tensor_never_p() -> None:
    """``for p in parameters: p.requires_grad = True`` shows C, W1, b1, W2, b2 from that
    statement on, never ``p``; the graph's leaves go by the same names."""
    trace = record(MAKEMORE_2, iterations=3)
    assert trace.iterations == 3
    wanted = ["C", "W1", "b1", "W2", "b2"]
    made = [m for m in trace.moments if m["code"] == "p.requires_grad = True"]
    assert [[p["name"] for p in m["params"]] for m in made] == [wanted[:i] for i in range(1, 6)]
    assert names_at(trace, "loss.backward()") == [wanted] * 3
    assert all("p" not in [p["name"] for p in m["params"]] for m in trace.moments)
    backward = next(m for m in trace.moments if m["code"] == "loss.backward()")
    assert leaves_of(backward) == set(wanted)


def test_a_p_left_by_an_earlier_cell_is_named_by_what_else_reaches_it() -> None:
    """The cell that made the parameters ran before (its loop left ``p`` bound to ``b2``); the
    recorded cell's namespace reaches ``b2`` as ``b2`` too: never ``p``."""
    split = MAKEMORE_2.index("X = torch.randint")
    space: dict[str, Any] = {"__name__": "__main__"}
    exec(MAKEMORE_2[:split], space)  # the earlier cell, run plainly
    assert space["p"] is space["b2"]
    trace = record(MAKEMORE_2[split:], space, iterations=3)
    assert [p["name"] for p in trace.start["params"]] == ["C", "W1", "b1", "W2", "b2"]
    assert names_at(trace, "loss.backward()") == [["C", "W1", "b1", "W2", "b2"]] * 3


MODULE_IN_CELL = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(1.0))
        self.b = nn.Parameter(torch.tensor(2.0))
        self.c = nn.Parameter(torch.tensor(3.0))
        self.d = nn.Parameter(torch.tensor(4.0))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3

x = torch.linspace(-1, 1, 20)
y = torch.sin(x)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for t in range(50):
    loss = (model(x) - y).pow(2).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_module_built_in_the_cell_is_named_from_the_namespace() -> None:
    """While ``__init__`` runs its tensors go by ``self.a`` (nothing else reaches them yet);
    once ``model = Net()`` has finished, ``model.a … model.d``, never ``param_groups``."""
    trace = record(MODULE_IN_CELL, iterations=3)
    built = next(i for i, m in enumerate(trace.moments) if m["code"] == "model = Net()")
    inside = [m for m in trace.moments[:built] if m["function"] == "__init__"]
    assert [p["name"] for p in inside[-1]["params"]] == ["self.a", "self.b", "self.c", "self.d"]
    wanted = ["model.a", "model.b", "model.c", "model.d"]
    assert all([p["name"] for p in m["params"]] == wanted for m in trace.moments[built:])
    assert leaves_of(trace.moments[-1]) == set(wanted)


def test_a_tensor_no_name_reaches_has_a_name_of_its_own() -> None:
    """Two leaves reached only by a backward (built inside an expression): two names, not one
    for both."""
    source = """\
import torch
loss = (torch.ones(2, requires_grad=True) * torch.full((2,), 3.0, requires_grad=True)).sum()
loss.backward()
"""
    trace = record(source)
    shown = trace.moments[-1]["params"]
    assert len(shown) == 2 and len({p["name"] for p in shown}) == 2
    assert sorted(tuple(p["grad"]) for p in shown) == [(1.0, 1.0), (3.0, 3.0)]  # type: ignore[arg-type]
