"""``watch()`` against plain PyTorch: the same loop gives the same numbers bit for bit with and
without it, every hook it put in is gone when the block ends (also when it raises), and the
diagnoses it gives are the issue's dicts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.optim import lr_scheduler
from torch.optim import optimizer as optim_module

import loop_stepper
from loop_stepper.doctor.chart import Stopped
from loop_stepper.recorder import probe

KEYS = {"bug", "file", "line", "iteration", "message", "evidence"}


def busy_loop(skip_zero_grad: bool) -> dict[str, Any]:
    """A loop that touches every hook the doctor puts in: dropout and batch norm switched by
    train()/eval(), Adam, clipping, a scheduler, cross-entropy, a state_dict, a validation pass,
    a kept loss (``running += loss``); with ``skip_zero_grad`` its gradients pile up."""
    torch.manual_seed(7)
    model = nn.Sequential(
        nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    X, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
    losses, running = [], torch.zeros(())
    for _ in range(8):
        model.train()
        for xb, yb in zip(X.split(16), y.split(16), strict=True):
            if not skip_zero_grad:
                optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            running = running + loss
            losses.append(loss.item())
        scheduler.step()
        model.eval()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(X), y).item())
    state = optimizer.state_dict()["state"]
    return {
        "params": [p.detach().clone() for p in model.parameters()],
        "buffers": [b.clone() for b in model.buffers()],
        "grads": [p.grad.clone() for p in model.parameters() if p.grad is not None],
        "adam": [s["exp_avg_sq"].clone() for s in state.values()],
        "losses": losses,
        "running": running.item(),
    }


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["losses"] == b["losses"]
    assert a["running"] == b["running"]
    for key in ("params", "buffers", "grads", "adam"):
        assert len(a[key]) == len(b[key]) > 0
        assert all(torch.equal(x, y) for x, y in zip(a[key], b[key], strict=True)), key


@pytest.mark.parametrize("skip_zero_grad", [False, True])
def test_every_number_is_bit_for_bit_the_plain_loops(skip_zero_grad: bool) -> None:
    plain = busy_loop(skip_zero_grad)
    with loop_stepper.watch() as doctor:
        watched = busy_loop(skip_zero_grad)
    assert_same(plain, watched)
    named = {d["bug"] for d in doctor.diagnoses}
    assert ("skip_zero_grad" in named) is skip_zero_grad
    assert "log_tensor" in named  # running = running + loss keeps every iteration's graph


def patched() -> dict[str, Callable[..., Any]]:
    """Every attribute the probe replaces, as it is now."""
    return {
        "backward": torch.autograd.backward,
        "optimizer.zero_grad": torch.optim.Optimizer.zero_grad,
        "module.zero_grad": nn.Module.zero_grad,
        "clip_grad_norm_": nn.utils.clip_grad_norm_,
        "clip_grad_value_": nn.utils.clip_grad_value_,
        "scheduler.step": lr_scheduler.LRScheduler.step,
        "plateau.step": lr_scheduler.ReduceLROnPlateau.step,
        "cross_entropy": F.cross_entropy,
        "nll_loss": F.nll_loss,
        "state_dict": torch.optim.Optimizer.state_dict,
        "load": torch.load,
        "train": nn.Module.train,
        "optimizer.__init__": torch.optim.Optimizer.__init__,
        "optimizer.load_state_dict": torch.optim.Optimizer.load_state_dict,
        "module.load_state_dict": nn.Module.load_state_dict,
        "autocast": torch.amp.autocast_mode.autocast.__enter__,
    }


def step_hooks() -> int:
    return len(optim_module._global_optimizer_pre_hooks) + len(
        optim_module._global_optimizer_post_hooks
    )


def test_every_hook_is_gone_after_the_block_also_when_it_raises() -> None:
    before, hooks = patched(), step_hooks()
    with (
        pytest.raises(ValueError, match="the user's own error"),
        loop_stepper.watch() as doctor,
    ):
        assert patched()["backward"] is not before["backward"]  # in while it runs
        assert step_hooks() == hooks + 2
        model = nn.Linear(2, 1)
        model(torch.ones(1, 2)).sum().backward()
        raise ValueError("the user's own error")
    assert patched() == before
    assert step_hooks() == hooks
    assert probe._open == 0 and probe._undo == [] and probe.observers() == []
    # what runs after the block is not watched: a step with no backward names nothing
    torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1).step()
    assert doctor.diagnoses == []


def test_watch_stops_the_loop_after_the_iterations_asked_for() -> None:
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = 0
    with pytest.raises(Stopped), loop_stepper.watch(iterations=3) as doctor:
        for _ in range(10):
            optimizer.zero_grad()
            model(torch.ones(4, 3)).pow(2).mean().backward()
            optimizer.step()
            steps += 1
    assert steps == 2  # the third step ran, then stopped the loop before its line ended
    assert doctor.primary_steps == 3
    assert doctor.diagnoses == []


def test_a_diagnosis_is_the_issues_dict_at_the_users_line() -> None:
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
    with loop_stepper.watch() as doctor:
        for _ in range(2):
            loss = F.mse_loss(model(x), y)
            loss.backward()  # no zero_grad: the second backward adds onto a used gradient
            optimizer.step()
    (found,) = doctor.diagnoses
    assert set(found) == KEYS
    assert found["bug"] == "skip_zero_grad" and found["iteration"] == 2
    assert found["file"] == __file__
    source, line = Path(__file__).read_text().splitlines(), found["line"]
    assert line is not None
    assert source[line - 1].strip().startswith("loss.backward()")
    # the numbers are the run's: the first .grad (the worked example's -23.5 for the weight,
    # seeds/000), then that plus the second backward's, which is what .grad still holds
    assert found["evidence"]["param"] == "model.weight"
    assert found["evidence"]["held"] == [-23.5]
    assert model.weight.grad is not None
    assert found["evidence"]["now"] == model.weight.grad.reshape(-1).tolist()
    assert found["evidence"]["added"] == [model.weight.grad.item() + 23.5]
