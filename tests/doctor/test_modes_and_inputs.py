"""The doctor's checks of eval mode, the loss's input and a resume, by the numbers: eval mode
is named only where it changes that forward's numbers; a softmax under ``log_softmax`` before
``nll_loss`` is named with the softmax's own numbers; validation without no_grad at the
validation code's line, not in a helper the training shares; a weights-only start is not a
resume."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import loop_stepper
from loop_stepper.doctor.bugs import Diagnosis
from loop_stepper.doctor.evals import in_eval, mode_changes

HERE = Path(__file__).read_text().splitlines()


def line_of(text: str) -> int:
    (number,) = [i for i, s in enumerate(HERE, start=1) if text in s and "line_of" not in s]
    return number


@pytest.mark.parametrize(
    ("module", "changes"),
    [
        (nn.Dropout(0.0), False),
        (nn.Dropout(0.2), True),
        (nn.AlphaDropout(0.1), True),
        (nn.BatchNorm1d(4), True),
        (nn.BatchNorm1d(4, track_running_stats=False), False),
        (nn.InstanceNorm1d(4), False),
        (nn.InstanceNorm1d(4, track_running_stats=True), True),
        (nn.RNN(3, 4, num_layers=2, dropout=0.0), False),
        (nn.LSTM(3, 4, num_layers=2, dropout=0.3), True),
        (nn.GRU(3, 4, num_layers=1), False),
        (nn.MultiheadAttention(4, 2, dropout=0.1), True),
        (nn.MultiheadAttention(4, 2), False),
        (nn.Linear(3, 4), False),
        (nn.ReLU(), False),
    ],
)
def test_mode_changes_by_type_and_settings(module: nn.Module, changes: bool) -> None:
    assert mode_changes(module) is changes


def test_eval_mode_changes_the_numbers_where_it_says() -> None:
    """What ``mode_changes`` claims, checked on the modules' outputs in both modes."""
    torch.manual_seed(0)
    x = torch.randn(5, 6, 3)
    for module, changes in [
        (nn.RNN(3, 4, num_layers=2, dropout=0.0, batch_first=True), False),
        (nn.GRU(3, 4, num_layers=2, dropout=0.5, batch_first=True), True),
    ]:
        torch.manual_seed(1)
        trained = module.train()(x)[0]
        torch.manual_seed(1)
        evaluated = module.eval()(x)[0]
        assert (not torch.equal(trained, evaluated)) is changes
        assert mode_changes(module) is changes


def eval_loop(rnn: nn.Module, watched: bool = True) -> tuple[list[Diagnosis], list[torch.Tensor]]:
    """A training loop whose model was left in eval mode (under the doctor, or plain)."""
    torch.manual_seed(2)
    head = nn.Linear(8, 1)
    params = [*rnn.parameters(), *head.parameters()]
    optimizer = torch.optim.Adam(params, lr=1e-2)
    X, y = torch.randn(12, 5, 3), torch.randn(12, 1)
    with loop_stepper.watch() if watched else contextlib.nullcontext() as doctor:
        rnn.eval()  # and never back to train()
        for i in range(0, 12, 4):
            optimizer.zero_grad()
            seq, _ = rnn(X[i : i + 4])
            loss = F.mse_loss(head(seq[:, -1]), y[i : i + 4])
            loss.backward()  # the training backward
            optimizer.step()
    diagnoses = doctor.diagnoses if doctor is not None else []
    return diagnoses, [p.detach().clone() for p in params]


def test_an_rnn_without_dropout_left_in_eval_is_not_named() -> None:
    torch.manual_seed(3)
    diagnoses, _ = eval_loop(nn.RNN(3, 8, num_layers=2, dropout=0.0, batch_first=True))
    assert diagnoses == []


def test_an_rnn_with_dropout_left_in_eval_is_named_at_the_backward() -> None:
    torch.manual_seed(3)
    diagnoses, watched = eval_loop(nn.LSTM(3, 8, num_layers=2, dropout=0.4, batch_first=True))
    torch.manual_seed(3)
    _, plain = eval_loop(nn.LSTM(3, 8, num_layers=2, dropout=0.4, batch_first=True), False)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))
    (found,) = diagnoses
    assert found["bug"] == "eval_while_training"
    assert found["line"] == line_of("loss.backward()  # the training backward")
    assert found["evidence"]["modules"] == ["LSTM (LSTM)"]


def test_in_eval_lists_only_the_parts_whose_numbers_change() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.0), nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.eval()
    assert in_eval(model) == ["2 (BatchNorm1d)", "3 (Dropout)"]
    model[2].train()
    assert in_eval(model) == ["3 (Dropout)"]


def softmax_loop(log_of: str) -> tuple[list[Diagnosis], torch.Tensor]:
    """``nll_loss`` over ``log_softmax`` of a softmax (the bug) or over ``log`` of it (right)."""
    torch.manual_seed(4)
    model = nn.Linear(6, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    X, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    seen: list[torch.Tensor] = []
    with loop_stepper.watch() as doctor:
        for _ in range(3):
            optimizer.zero_grad()
            probs = F.softmax(model(X), dim=1)
            seen.append(probs.detach().clone())
            logp = F.log_softmax(probs, dim=1) if log_of == "log_softmax" else probs.log()
            loss = F.nll_loss(logp, y)  # the loss of log-probabilities
            loss.backward()
            optimizer.step()
    return doctor.diagnoses, seen[0]


def test_log_softmax_of_a_softmax_before_nll_loss_is_named_with_its_numbers() -> None:
    diagnoses, probs = softmax_loop("log_softmax")
    (found,) = diagnoses
    assert found["bug"] == "softmax_before_loss"
    assert found["line"] == line_of("loss = F.nll_loss(logp, y)  # the loss")
    evidence = found["evidence"]
    assert evidence["loss"] == "log_softmax before nll_loss"
    assert evidence["min"] == float(probs.min()) and evidence["max"] == float(probs.max())
    assert evidence["row_sum"] == float(probs.sum(dim=1)[0])
    assert "log_softmax before nll_loss was fed probabilities" in found["message"]


def test_log_of_a_softmax_before_nll_loss_is_right() -> None:
    diagnoses, _ = softmax_loop("log")
    assert diagnoses == []


class Trainer:
    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.optimizer = torch.optim.SGD(module.parameters(), lr=0.1)

    def infer(self, x: torch.Tensor) -> Any:
        return self.module(x)  # the shared helper

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.module.train()
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.infer(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def validate(self, x: torch.Tensor) -> Any:
        self.module.eval()
        return self.infer(x).argmax(dim=1)  # the validation without no_grad


def test_validation_with_grad_is_named_where_validation_calls_the_shared_helper() -> None:
    torch.manual_seed(5)
    trainer = Trainer(nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2)))
    X, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    with loop_stepper.watch() as doctor:
        for _ in range(3):
            trainer.train_step(X, y)
            trainer.validate(X)
    (found,) = doctor.diagnoses
    assert found["bug"] == "validation_with_grad"
    assert found["line"] == line_of("return self.infer(x).argmax(dim=1)  # the validation")
    assert found["evidence"]["module"] == "Sequential"


def fit(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    X, y = torch.randn(16, 4), torch.randn(16, 2)
    for _ in range(steps):
        optimizer.zero_grad()
        F.mse_loss(model(X), y).backward()
        optimizer.step()


def test_pretrained_weights_with_a_new_head_are_not_a_resume() -> None:
    torch.manual_seed(6)
    with loop_stepper.watch() as doctor:
        pretrained = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        fit(pretrained, torch.optim.Adam(pretrained.parameters(), lr=1e-2), 3)
        weights = io.BytesIO()
        torch.save(pretrained.state_dict(), weights)
        weights.seek(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        model.load_state_dict(torch.load(weights))
        model[2] = nn.Linear(8, 2)  # the new task's head
        fit(model, torch.optim.Adam(model.parameters(), lr=1e-2), 3)
    assert doctor.diagnoses == []


def test_a_checkpoint_whose_optimizer_state_is_left_unloaded_is_a_resume() -> None:
    torch.manual_seed(7)
    with loop_stepper.watch() as doctor:
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        fit(model, optimizer, 3)
        saved = io.BytesIO()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, saved)
        saved.seek(0)
        checkpoint = torch.load(saved)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        model.load_state_dict(checkpoint["model"])  # the resume
        model[2] = nn.Linear(8, 2)  # even with a new head: the checkpoint held the state
        fit(model, torch.optim.Adam(model.parameters(), lr=1e-2), 3)
    (found,) = doctor.diagnoses
    assert found["bug"] == "resume_without_optimizer"
    assert found["line"] == line_of('model.load_state_dict(checkpoint["model"])  # the resume')
    assert found["evidence"] == {"optimizer": "Adam"}


class Noisy(nn.Module):
    """The user's own module whose output depends on the mode."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.randn_like(x) if self.training else x


class Scaled(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x


def test_the_users_own_module_changes_where_its_forward_reads_the_mode() -> None:
    assert mode_changes(Noisy()) is True
    assert mode_changes(Scaled()) is False
    x = torch.ones(3)
    assert torch.equal(Noisy().eval()(x), x) and not torch.equal(Noisy().train()(x), x)
