"""A new Lab is a fresh copy of one seeded template per setup (``built.fresh_copy``): its
weights equal the lesson's own build bit for bit (torch.manual_seed, then the layers), its
parameters and buffers are its own (a line changes them in place), and only the read-only data
is shared."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from app.engine import Lab, scenarios
from app.engine.optimizers import PLAIN_SGD
from app.engine.setup import Setup


def lesson_model(seed: int, dropout: float, batchnorm: bool, dtype: torch.dtype) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(*scenarios.moons_layers(dropout, batchnorm)).to(dtype)


@pytest.mark.parametrize(
    ("seed", "dropout", "batchnorm", "dtype"),
    [(0, 0.0, False, "float64"), (7, 0.5, True, "float32"), (3, 0.2, False, "float64")],
)
def test_a_copy_is_the_lessons_model_bit_for_bit(
    seed: int, dropout: float, batchnorm: bool, dtype: str
) -> None:
    kind = scenarios.DTYPES[dtype]
    with torch.random.fork_rng(devices=[]):
        want = lesson_model(seed, dropout, batchnorm, kind)
        rng_after = torch.get_rng_state()
    for _ in range(2):  # the second comes from the cache
        lab = Lab(
            Setup("moons", 0.3, seed, PLAIN_SGD, dropout=dropout, batchnorm=batchnorm, dtype=dtype)
        )
        got = dict(lab.model.named_parameters())
        assert got.keys() == dict(want.named_parameters()).keys()
        for name, p in want.named_parameters():
            assert got[name].dtype == kind and torch.equal(got[name], p)
        for name, b in want.named_buffers():
            assert torch.equal(lab.buffers[name], b)
        if dropout:
            assert lab.rng is not None and torch.equal(lab.rng, rng_after)


def test_copies_are_independent_and_leave_the_template_alone() -> None:
    template = scenarios.moons_template(0, 0.0, True, "float64")[0]
    before = {n: t.clone() for n, t in template.state_dict().items()}
    a, b = (
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, batchnorm=True)),
        Lab(Setup("moons", 0.3, 0, PLAIN_SGD, batchnorm=True)),
    )
    a.run(3)  # steps parameters in place, updates BatchNorm's running statistics
    a.eval()
    assert all(p.grad is None for p in b.named.values()) and b.model.training
    assert template.training
    for name, t in template.state_dict().items():
        assert torch.equal(t, before[name])
        assert torch.equal(b.model.state_dict()[name], t)
        assert t.data_ptr() != a.model.state_dict()[name].data_ptr()
    fresh = Lab(Setup("moons", 0.3, 0, PLAIN_SGD, batchnorm=True))
    fresh.run(3)
    assert a.view()["params"] != b.view()["params"]
    for p, q in zip(fresh.named.values(), a.named.values(), strict=True):
        assert torch.equal(p, q)  # and the same numbers as the first


def test_the_data_is_shared_read_only() -> None:
    a, b = Lab(Setup("moons", 0.3, 0, PLAIN_SGD)), Lab(Setup("moons", 0.3, 0, PLAIN_SGD))
    assert a.points is b.points and a.targets is b.targets
    assert a.model is not b.model
    n1, n2 = Lab(Setup("neuron", 0.05, 0, PLAIN_SGD)), Lab(Setup("neuron", 0.05, 0, PLAIN_SGD))
    n1.run(1)
    assert [p.item() for p in n2.named.values()] == [0.0, 0.0]
    grads = [n1.named["weight"].grad, n1.named["bias"].grad]
    assert [g.item() for g in grads if g is not None] == [-23.5, -8.0]
