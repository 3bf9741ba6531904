"""A job's rank watches its first ``AWAKE`` iterations with every check, then one in
``AWAKE_EVERY`` (``chart.py``); its checks of the job watch every iteration. Run here as a rank
of a two-rank job would (``WORLD_SIZE=2``), without its process group: a correct loop long past
the first iterations is named nothing, a bug that begins later is named at the first watched
iteration after it, and the loop's numbers are plain PyTorch's bit for bit."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from loop_stepper import watch
from loop_stepper.doctor.chart import AWAKE, AWAKE_EVERY

STEPS = 3 * AWAKE_EVERY


@pytest.fixture
def rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")


def loop(clear_until: int = STEPS + 1) -> dict[str, torch.Tensor]:
    """SGD with momentum and dropout; ``zero_grad()`` stops at iteration ``clear_until``."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    X, y = torch.randn(STEPS * 8, 8), torch.randint(0, 2, (STEPS * 8,))
    for i, (xb, yb) in enumerate(zip(X.split(8), y.split(8), strict=True), start=1):
        if i < clear_until:
            optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_a_correct_loop_is_named_nothing_past_the_first_iterations(rank: None) -> None:
    with watch() as doctor:
        watched = loop()
    assert doctor.diagnoses == []
    assert doctor.primary_steps == STEPS and doctor.dormant  # it slept between its looks
    plain = loop()
    assert all(torch.equal(watched[k], plain[k]) for k in plain)


def test_a_bug_that_begins_later_is_named_at_the_next_watched_iteration(rank: None) -> None:
    begins = AWAKE + 10  # no zero_grad() from here: past the first iterations, while it sleeps
    with watch() as doctor:
        loop(clear_until=begins)
    named = [d for d in doctor.diagnoses if d["bug"] == "skip_zero_grad"]
    assert [d["iteration"] for d in named] == [AWAKE_EVERY]  # the first one watched after it


def test_a_bug_from_the_start_is_named_where_a_single_process_names_it(rank: None) -> None:
    found: dict[str, Any] = {}
    for world in ("2", "1"):
        with pytest.MonkeyPatch.context() as env:
            env.setenv("WORLD_SIZE", world)
            with watch() as doctor:
                loop(clear_until=3)
        found[world] = [(d["bug"], d["line"], d["iteration"]) for d in doctor.diagnoses]
    assert found["2"] == found["1"] != []
