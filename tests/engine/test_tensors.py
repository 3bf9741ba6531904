"""Big tensors (issue 28): the summary a Session sends for a tensor of more than 256 elements,
and its exact elements a page at a time. No scenario has one yet, so a moons Lab's model is
widened here (2-40-40-2: a 40 x 40 weight of 1600 elements); every number is checked against
torch and numpy computed here, element by element."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from app.engine import Lab
from app.engine.extras import Schedule
from app.engine.optimizers import PLAIN_SGD, OptimizerSpec
from app.engine.setup import Setup
from loop_stepper import stores
from loop_stepper.stores import tensors
from loop_stepper.stores.graph import Graph

ADAM = OptimizerSpec("adam")
MOMENTUM = OptimizerSpec("sgd", momentum=0.9)


def widened(optimizer: OptimizerSpec = PLAIN_SGD, hidden: int = 40) -> Lab:
    """A moons Lab whose three Linears are 2-hidden-hidden-2: the same data, loss and loop."""
    lab = Lab(Setup("moons", 0.1, 0, optimizer))
    sizes = ((2, hidden), (hidden, hidden), (hidden, 2))
    model = lab.model
    assert isinstance(model, nn.Sequential)
    with torch.random.fork_rng(devices=[]):  # other tests' draws stay as they were
        torch.manual_seed(7)
        for i, (n_in, n_out) in zip((0, 2, 4), sizes, strict=True):
            model[i] = nn.Linear(n_in, n_out).double()
    lab.named = dict(lab.model.named_parameters())
    lab.optimizer = optimizer.make(lab.model.parameters(), lab.lr)
    lab.schedule = Schedule(None, lab.optimizer)
    lab.autograd = Graph(lab.named)
    return lab


def cell_means(grid: torch.Tensor, side: int = 32) -> list[list[float]]:
    """Each block's mean, block by block with math.fsum (correctly rounded sums)."""
    n_rows, n_cols = grid.shape
    r, c = min(n_rows, side), min(n_cols, side)
    rows = [(i * n_rows // r, (i + 1) * n_rows // r) for i in range(r)]
    cols = [(j * n_cols // c, (j + 1) * n_cols // c) for j in range(c)]
    out = []
    for r0, r1 in rows:
        out.append(
            [
                math.fsum(grid[r0:r1, c0:c1].reshape(-1).tolist()) / ((r1 - r0) * (c1 - c0))
                for c0, c1 in cols
            ]
        )
    return out


def check_summary(shown: Any, tensor: torch.Tensor) -> None:
    """``shown`` is the summary of ``tensor``, every number computed again here."""
    t = tensor.detach().double()
    flat = t.reshape(-1).tolist()
    assert shown["summary"] is True
    assert shown["shape"] == list(tensor.shape) and shown["numel"] == tensor.numel()
    assert shown["min"] == min(flat) and shown["max"] == max(flat)
    assert shown["mean"] == float(t.mean())  # torch's own reductions, exactly
    assert shown["std"] == float(t.std())
    assert shown["norm"] == float(torch.linalg.vector_norm(t))
    # and again independently: correctly rounded sums
    n = len(flat)
    mean = math.fsum(flat) / n
    assert shown["mean"] == pytest.approx(mean, rel=1e-12, abs=1e-15)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in flat) / (n - 1))
    assert shown["std"] == pytest.approx(std, rel=1e-12)
    assert shown["norm"] == pytest.approx(math.sqrt(math.fsum(x * x for x in flat)), rel=1e-12)
    # 16 equal bins from min to max; a value counts in the bin whose edges hold it, the last
    # bin closed: every value in exactly one
    edges = shown["histogram"]["edges"]
    assert len(edges) == 17 and edges[0] == min(flat) and edges[-1] == max(flat)
    width = (max(flat) - min(flat)) / 16
    assert edges == pytest.approx([min(flat) + k * width for k in range(17)], rel=1e-12)
    counts = [
        sum(1 for x in flat if edges[k] <= x < edges[k + 1] or (k == 15 and x == edges[16]))
        for k in range(16)
    ]
    assert shown["histogram"]["counts"] == counts and sum(counts) == n
    assert shown["histogram"]["nonfinite"] == 0
    # the heat map: (first dimension, the rest), block means
    grid = t.reshape(1, -1) if t.dim() == 1 else t.reshape(t.shape[0], -1)
    heat = shown["heatmap"]
    assert heat["shape"] == list(grid.shape)
    expected = cell_means(grid)
    assert len(heat["cells"]) == len(expected) and len(heat["cells"][0]) == len(expected[0])
    for got, want in zip(heat["cells"], expected, strict=True):
        # a picture: four significant digits (the elements are exact, paged)
        assert got == pytest.approx(want, rel=5e-4, abs=1e-300)
        assert all(float(f"{g:.4g}") == g for g in got if math.isfinite(g))


def test_every_scenarios_tensors_are_sent_element_by_element() -> None:
    """The three scenarios' answers stay as they were: every tensor at most 256 elements
    (moons' 16 x 16 the largest), sent as its nested lists."""
    setups = [
        Setup("neuron", 0.05, 0, MOMENTUM),
        Setup("parabola", 0.05, 0, ADAM),
        Setup("moons", 0.3, 0, ADAM),
        Setup("moons", 0.3, 0, MOMENTUM, batchnorm=True, dropout=0.2),
    ]
    largest = 0
    for setup in setups:
        lab = Lab(setup)
        lab.run(3)
        view = lab.view()
        for shown, (name, p) in zip(view["params"], lab.named.items(), strict=True):
            assert shown["name"] == name
            assert shown["value"] == p.detach().tolist()
            assert p.grad is not None and shown["grad"] == p.grad.tolist()
            for key, held in lab.optimizer.state[p].items():
                row = next(r for r in view["optimizer_state"] if r["name"] == name)
                if isinstance(held, torch.Tensor):
                    assert row["state"][key] == held.tolist()
                    largest = max(largest, held.numel())
            largest = max(largest, p.numel())
    assert largest == tensors.LARGEST_SHOWN == 256


@pytest.mark.parametrize("optimizer", [MOMENTUM, ADAM], ids=["momentum", "adam"])
def test_a_big_tensor_is_sent_as_its_summary(optimizer: OptimizerSpec) -> None:
    lab = widened(optimizer)
    view = lab.view()
    big = lab.named["2.weight"]
    assert big.numel() == 1600
    by_name = {p["name"]: p for p in view["params"]}
    check_summary(by_name["2.weight"]["value"], big)
    assert by_name["2.weight"]["grad"] is None
    # the small ones stay lists: 0.weight is 80 elements, 2.bias 40
    assert by_name["0.weight"]["value"] == lab.named["0.weight"].detach().tolist()
    lab.run(2)
    view = lab.view()
    by_name = {p["name"]: p for p in view["params"]}
    assert big.grad is not None
    check_summary(by_name["2.weight"]["value"], big)
    check_summary(by_name["2.weight"]["grad"], big.grad)
    small = lab.named["4.weight"].grad
    assert small is not None and by_name["4.weight"]["grad"] == small.tolist()  # 2 x 40: 80
    state = next(r["state"] for r in view["optimizer_state"] if r["name"] == "2.weight")
    for key, held in lab.optimizer.state[big].items():
        if isinstance(held, torch.Tensor) and held.numel() > 1:
            check_summary(state[key], held)
    assert all(by_name[n]["value"] == lab.named[n].detach().tolist() for n in ("2.bias", "4.bias"))


def test_a_summary_is_bounded_whatever_the_shape() -> None:
    """Any rank becomes (first dimension, the rest); at most 32 x 32 cells of unequal blocks."""
    generator = torch.Generator().manual_seed(3)
    for shape in [(300,), (5000,), (33, 9), (100, 70), (8, 3, 5, 5), (70, 1, 2, 2), (2, 2, 2, 40)]:
        t = torch.randn(shape, dtype=torch.float32, generator=generator)
        s = tensors.summary(t)
        check_summary(s, t)
        rows, cols = tensors.as_2d(list(shape))
        assert s["heatmap"]["shape"] == [rows, cols]
        assert len(s["heatmap"]["cells"]) == min(rows, 32)
        assert len(s["heatmap"]["cells"][0]) == min(cols, 32)
        assert s["heatmap"]["rows"] == [i * rows // min(rows, 32) for i in range(min(rows, 32))]


def test_non_finite_values_are_counted_not_binned() -> None:
    t = torch.arange(300, dtype=torch.float64)
    t[5], t[6], t[299] = math.nan, math.inf, -math.inf
    s = tensors.summary(t)
    assert math.isnan(s["min"]) and math.isnan(s["max"]) and math.isnan(s["mean"])
    assert s["histogram"]["nonfinite"] == 3 and sum(s["histogram"]["counts"]) == 297
    assert s["histogram"]["edges"][0] == 0.0 and s["histogram"]["edges"][-1] == 298.0
    cells = s["heatmap"]["cells"][0]  # one row of 300 in 32 blocks of 9 or 10 (9 to 17: 13)
    assert math.isnan(cells[0]) and cells[1] == 13.0 and cells[31] == -math.inf
    same = tensors.summary(torch.full((400,), 2.5))
    assert same["histogram"]["edges"][0] == 2.0 and same["histogram"]["edges"][-1] == 3.0
    assert same["histogram"]["counts"][8] == 400 and same["std"] == 0.0  # numpy's rule: ± 0.5


def test_pages_give_the_exact_elements_row_major() -> None:
    lab = widened(ADAM)
    big = lab.named["2.weight"]
    page = stores.page(lab, "params", "2.weight", None, 0, None)
    assert page["values"] == big.detach().reshape(-1).tolist()  # 1600 ≤ a page: all of it
    assert (page["start"], page["stop"], page["numel"], page["shape"]) == (0, 1600, 1600, [40, 40])
    assert page["dtype"] == "float64"
    grad = stores.page(lab, "grad", "2.weight", None, 40, 80)
    assert grad["values"] is None and (grad["start"], grad["stop"]) == (40, 80)
    lab.run(1)
    assert big.grad is not None
    grad = stores.page(lab, "grad", "2.weight", None, 40, 80)
    assert grad["values"] == big.grad[1].tolist()  # row 1 of the weight's .grad
    state = stores.page(lab, "state", "2.weight", "exp_avg_sq", 1590, 1600)
    assert state["values"] == lab.optimizer.state[big]["exp_avg_sq"].reshape(-1)[-10:].tolist()
    assert stores.page(lab, "params", "2.weight", None, 1600, None)["values"] == []


def test_bad_pages_are_refused_and_change_nothing() -> None:
    lab = widened(MOMENTUM)
    lab.run(1)
    before = lab.view()
    for store, name, key, start, stop, where in [
        ("params", "2.weight", None, 1601, None, "start"),
        ("params", "2.weight", None, 0, 1601, "stop"),
        ("params", "2.weight", None, 10, 9, "stop"),
        ("params", "2.weight", "exp_avg", 0, 1, "key"),
        ("state", "2.weight", None, 0, 1, "key"),
    ]:
        with pytest.raises(tensors.BadRange) as refused:
            stores.page(lab, store, name, key, start, stop)
        assert refused.value.loc == ["query", where]
    wide = widened(PLAIN_SGD, hidden=80)  # 6400 elements: more than a page
    with pytest.raises(tensors.BadRange, match="at most 4096 elements, not 4097"):
        stores.page(wide, "params", "2.weight", None, 0, 4097)
    assert len(stores.page(wide, "params", "2.weight", None, 100, None)["values"] or []) == 4096
    with pytest.raises(tensors.UnknownTensor, match="no parameter named 'nope'"):
        stores.page(lab, "params", "nope", None, 0, 1)
    with pytest.raises(tensors.UnknownTensor, match="no optimizer state 'exp_avg'"):
        stores.page(lab, "state", "2.weight", "exp_avg", 0, 1)
    assert lab.view() == before


def test_a_summary_is_made_again_after_any_change_in_place_and_only_then() -> None:
    t = torch.arange(300, dtype=torch.float64).reshape(10, 30)
    first = tensors.shown(t)
    assert tensors.shown(t) is first  # unchanged: the summary kept
    t.add_(1.0)  # a step, a backward adding in, a restore: all in place
    second = tensors.shown(t)
    assert second is not first and second["mean"] == first["mean"] + 1
    grad = torch.zeros(300)
    assert tensors.shown(grad)["max"] == 0.0
    grad[7] = 5.0  # an element written: the version moves too
    assert tensors.shown(grad)["max"] == 5.0
    other = t.clone()  # equal values, another tensor: the same summary (made once by content)
    assert tensors.shown(other) is second


finite_floats = st.floats(min_value=-1e300, max_value=1e300, width=64)  # numpy's range


@given(
    values=st.one_of(
        st.lists(finite_floats, max_size=300),
        st.lists(st.sampled_from([0.0, 1.0, 1.0 + 2**-52, 3.0, -0.0, 1e-310]), max_size=300),
        st.lists(st.integers(-40, 40).map(lambda k: k / 16), min_size=1, max_size=300),
    )
)
def test_the_histogram_is_numpys_bit_for_bit(values: list[float]) -> None:
    """The summary's histogram is numpy.histogram(finite, bins=16), counts and edges equal,
    on values drawn to land on and next to the edges (multiples of 1/16, neighbours of 1)."""
    finite = np.array(values, dtype=np.float64)
    counts, edges = tensors.histogram(finite)
    assert counts.sum() == finite.size
    try:
        want_counts, want_edges = np.histogram(finite, bins=16)
    except ValueError:  # numpy refuses: "Too many bins for data range" (1e300 three times)
        return
    assert counts.tolist() == want_counts.tolist()
    assert edges.tolist() == want_edges.tolist()


def test_equal_tensors_share_one_summary_and_an_in_place_change_makes_a_new_one() -> None:
    """A class on one setup holds equal tensors: each is summarised once for all of them."""
    generator = torch.Generator().manual_seed(5)
    a = torch.randn(40, 40, generator=generator)
    b = a.clone()
    assert tensors.shown(a) is tensors.shown(b)  # equal bytes: one summary
    c = a.to(torch.float64)
    assert tensors.shown(c) is not tensors.shown(a)  # another dtype: its own
    before = tensors.shown(b)
    with torch.no_grad():
        b[0, 0] += 1.0  # in place: its version moves on
    after = tensors.shown(b)
    assert after is not before and after["max"] >= before["max"]
    check_summary(after, b)
    assert tensors.shown(a) is before


def test_what_numpy_refuses_is_binned_not_refused() -> None:
    top = np.finfo(np.float64).max
    counts, edges = tensors.histogram(np.array([-top, 0.0, top, top]))
    assert counts.tolist() == [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2]
    assert edges[0] == -top and edges[-1] == top
    counts, edges = tensors.histogram(np.full(5, 1e300))  # ± 0.5 moves nothing there
    assert counts[8] == 5 and counts.sum() == 5 and edges[0] == edges[-1] == 1e300
