"""The doctor on ``accelerate``'s gradient accumulation, for real: ``Accelerator(
gradient_accumulation_steps=2)`` and its documented loop (``with accelerator.accumulate(model):``
forward, ``accelerator.backward(loss)``, ``optimizer.step()``, ``optimizer.zero_grad()``).

What accelerate does under it (``accelerate/accelerator.py``, ``optimizer.py``):
``accumulate`` sets ``sync_gradients`` on every second micro-batch (and at the loader's end);
``backward`` divides the loss by 2 and calls ``loss.backward()``; the prepared optimizer's
``step()`` and ``zero_grad()`` call the torch optimizer's only when ``sync_gradients`` is on,
so on the other micro-batches they do nothing and the gradients add up.

The correct loop is named nothing; a loop without ``zero_grad``, one that clears between
backward and step, and one that clears at the top of the ``accumulate`` block (it runs on the
syncing micro-batch, before its backward, and drops the first micro-batch's gradient) are named
at their lines of the user's script; each trains to what a plain PyTorch loop doing the same
computes, bit for bit, with and without the doctor.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from torch import nn
from torch.nn import functional as F

import loop_stepper
from loop_stepper.doctor.script import run
from tests.doctor.test_corpus import expected, found, said

ACCUMULATE = 2
BATCHES = 8  # micro-batches an epoch
EPOCHS = 2


@pytest.fixture(autouse=True)
def fresh_accelerator() -> Iterator[None]:
    """One intra-op thread (the machine's cores are shared), and accelerate's process-wide
    state (its ``GradientState`` singleton) reset after each run, as accelerate's own tests
    do."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()


def data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    X = torch.randn(4 * BATCHES, 6, generator=generator)
    return X, torch.randn(4 * BATCHES, 1, generator=generator)


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))


def accelerate_loop() -> tuple[nn.Module, Accelerator]:
    """accelerate's documented accumulation loop, clipping on the syncing micro-batch."""
    X, y = data()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=4)
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    accelerator = Accelerator(gradient_accumulation_steps=ACCUMULATE, cpu=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for _ in range(EPOCHS):
        for xb, yb in loader:
            with accelerator.accumulate(model):
                loss = F.mse_loss(model(xb), yb)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    return model, accelerator


def plain_loop(variant: str = "correct") -> nn.Module:
    """What the accelerate loop of ``variant`` (``BODIES``) computes, in plain PyTorch: the
    loss halved, and the optimizer's step and clear taking effect only on every second
    micro-batch, where accelerate syncs (a clear at the top of the block then drops the first
    micro-batch's gradient; one between backward and step leaves the step nothing)."""
    X, y = data()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(EPOCHS):
        for i, (xb, yb) in enumerate(zip(X.split(4), y.split(4), strict=True)):
            sync = i % ACCUMULATE == ACCUMULATE - 1
            if sync and variant == "zero_grad_on_top":
                optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            (loss / ACCUMULATE).backward()
            if sync and variant == "correct":
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if sync and variant == "zero_grad_before_step":
                optimizer.zero_grad()
            if sync:
                optimizer.step()
            if sync and variant == "correct":
                optimizer.zero_grad()
    return model


def test_accelerates_accumulation_is_named_nothing_and_trains_as_plain_pytorch() -> None:
    plain = [p.detach().clone() for p in plain_loop().parameters()]
    with loop_stepper.watch() as doctor:
        model, accelerator = accelerate_loop()
    assert doctor.diagnoses == [], doctor.diagnoses
    # the prepared optimizer skipped every other step: the torch optimizer stepped 8 times
    assert doctor.primary_steps == EPOCHS * BATCHES // ACCUMULATE
    assert accelerator.step == 0  # the loader's end synced and reset accelerate's count
    after = [p.detach() for p in model.parameters()]
    assert len(after) == len(plain) == 4
    assert all(torch.equal(a, b) for a, b in zip(after, plain, strict=True))


SCRIPT = """\
# accelerate's documented gradient accumulation ({what})
import sys

import torch
from accelerate import Accelerator
from torch import nn
from torch.nn import functional as F

generator = torch.Generator().manual_seed(3)
X, y = torch.randn(32, 6, generator=generator), torch.randn(32, 1, generator=generator)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=4)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(2):
    for xb, yb in loader:
        with accelerator.accumulate(model):
{body}
torch.save([p.detach() for p in model.parameters()], sys.argv[1])
"""

BODIES = {
    "correct": """\
            loss = F.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()""",
    "zero_grad_on_top": """\
            optimizer.zero_grad()  # doctor: accumulation_reset
            loss = F.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            optimizer.step()""",
    "skip_zero_grad": """\
            loss = F.mse_loss(model(xb), yb)
            accelerator.backward(loss)  # doctor: skip_zero_grad
            optimizer.step()""",
    "zero_grad_before_step": """\
            loss = F.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            optimizer.zero_grad()  # doctor: zero_grad_before_step
            optimizer.step()""",
}


def script_for(tmp_path: Path, variant: str) -> Path:
    script = tmp_path / f"{variant}.py"
    script.write_text(SCRIPT.format(what=variant, body=BODIES[variant]))
    return script


def run_plain(script: Path, out: Path) -> None:
    """The script as ``python SCRIPT OUT`` runs it, without the doctor."""
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    saved = sys.argv
    sys.argv = [str(script), str(out)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved


@pytest.mark.parametrize("variant", list(BODIES))
def test_the_script_is_named_at_its_lines_and_trains_as_without_the_doctor(
    tmp_path: Path, variant: str
) -> None:
    script = script_for(tmp_path, variant)
    plain_out, watched_out = tmp_path / "plain.pt", tmp_path / "watched.pt"
    report = run(script, [str(watched_out)], iterations=None)
    assert report.error is None, said(report)
    assert found(report.diagnoses) == expected(script), said(report)
    assert all(d["file"] == str(script) for d in report.diagnoses)
    assert report.code == (1 if expected(script) else 0)
    # the torch optimizer's steps the doctor heard: one per accumulated pair of micro-batches
    assert report.iterations == EPOCHS * BATCHES // ACCUMULATE
    run_plain(script, plain_out)
    watched, unwatched = torch.load(watched_out), torch.load(plain_out)
    oracle = [p.detach() for p in plain_loop(variant).parameters()]
    assert len(watched) == len(unwatched) == len(oracle) == 4
    assert all(torch.equal(a, b) for a, b in zip(watched, unwatched, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(watched, oracle, strict=True))
    moved = not all(torch.equal(a, b) for a, b in zip(watched, mlp().parameters(), strict=True))
    assert moved is (variant != "zero_grad_before_step")
