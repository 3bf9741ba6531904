"""Fail-open: a fault injected into each hook of the recorder and of the doctor, in turn. The
user's cell always runs to its end with the numbers of a plain run (parameters, ``.grad``,
optimizer, scheduler and scaler state, what it printed, torch's random state); the trace says
where and why recording (or the doctor) stopped, with the internal error for a bug report,
and never presents it as the user's error."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from loop_stepper.doctor import chart, evals, modes, order, reach, state, uses
from loop_stepper.doctor.trace import record
from loop_stepper.recorder import files, frame, watched
from loop_stepper.recorder.observer import EVENTS
from loop_stepper.recorder.probe import observers
from loop_stepper.recorder.record import Recorder as recording
from tests.recorder import same

# a cell that makes every hook run: every event the probe hears, the doctor's forward hooks
# (a validation forward with grad, a parameter no backward reaches) and its lookout (a loss
# summed as a tensor), a term from a parameter's .data, a backward PyTorch refuses, a closure
# step, a DataLoader over a DistributedSampler, a checkpoint round trip (a DDP forward needs a
# process group: its hook is faulted in a real job, tests/doctor/test_ranks.py)
CELL = """\
import io
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
x = torch.randn(32, 4)
y = torch.randint(0, 3, (32,))
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
unused = nn.Linear(4, 3)
opt = torch.optim.SGD([*model.parameters(), *unused.parameters()], lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
scaler = torch.amp.GradScaler("cpu")
total = 0
for i in range(4):
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = F.dropout(model(x), 0.1)
    loss = F.cross_entropy(out.float(), y) + 1e-4 * model[0].weight.data.pow(2).sum()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    sched.step()
    total += loss
    model.eval()
    check = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    try:
        check.backward()
        check.backward()
    except RuntimeError as refused:
        print("refused:", str(refused)[:40])
    opt.step(lambda: loss.item())
    model.train()
    with torch.no_grad():
        print(i, round(loss.item(), 6), model(x).shape)
data = torch.utils.data.TensorDataset(x, y)
sampler = torch.utils.data.DistributedSampler(data, num_replicas=1, rank=0, seed=1)
for xb, yb in torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler):
    opt.zero_grad()
    F.cross_entropy(model(xb), yb).backward()
    opt.step()
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
buffer.seek(0)
saved = torch.load(buffer)
model.load_state_dict(saved["model"])
opt.load_state_dict(saved["opt"])
print("total", round(total.item(), 6))
"""


class Injected(Exception):
    """The fault: an error of loop_stepper's own, as a bug would raise it."""


def plain_run() -> tuple[dict[str, Any], str]:
    space: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(CELL, "<plain>", "exec"), space)
    return same.state(space), printed.getvalue()


@contextlib.contextmanager
def fault(owner: Any, name: str, fired: list[str]) -> Iterator[None]:
    """``owner.name`` raises ``Injected`` at its first call."""
    original: Callable[..., Any] = owner.__dict__[name]

    def broken(*args: Any, **kwargs: Any) -> Any:
        if not fired:
            fired.append(name)
            raise Injected(f"injected into {name}")
        return original(*args, **kwargs)

    setattr(owner, name, broken)
    try:
        yield
    finally:
        setattr(owner, name, original)


def recorded_run(owner: Any, name: str) -> tuple[Any, dict[str, Any], str, list[str]]:
    space: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    fired: list[str] = []
    with fault(owner, name, fired), contextlib.redirect_stdout(printed):
        trace = record(CELL, space, iterations=None)
    assert not observers()  # every hook let go
    return trace, same.state(space), printed.getvalue(), fired


# the recorder's hooks: its trace functions, what they tell it, and every event of the probe
# it listens to; what it does before the first statement and after the last
RECORDER = [
    (recording, "_call"),
    (frame.Frame, "line"),
    (frame.Frame, "done"),
    (recording, "completed"),
    (recording, "pass_started"),
    (watched.Watched, "settle"),  # the first call: before the first statement
    (files.UserFiles, "texts"),  # after the last
    *((recording, e) for e in EVENTS if e in vars(recording)),
]
# the doctor's: every event of the probe, its forward hooks, its tracer, its end
IN_A_JOB = {"ddp_forward"}  # heard only with a process group: tests/doctor/test_ranks.py
DOCTOR = [
    *((chart.Chart, e) for e in EVENTS if e not in IN_A_JOB),
    (evals.Evals, "_post"),
    (evals.Evals, "_pre"),
    (uses.ForwardUse, "_forward"),
    (modes.Modes, "_pre"),
    (modes.Modes, "_post"),
    (order.Order, "close"),
    (reach.Reach, "close"),
    (state.State, "close"),
]  # its lookout traces only where nothing else does: tests/doctor/test_fail_open.py


@pytest.fixture(scope="module")
def plain() -> tuple[dict[str, Any], str]:
    return plain_run()


@pytest.mark.parametrize(
    ("owner", "name"), RECORDER, ids=[f"{o.__name__}.{n}" for o, n in RECORDER]
)
def test_a_fault_in_a_recorder_hook_stops_the_recording_and_never_the_cell(
    owner: Any, name: str, plain: tuple[dict[str, Any], str]
) -> None:
    trace, after, printed, fired = recorded_run(owner, name)
    assert fired == [name]  # the fault was met
    assert (after, printed) == plain  # the cell ran to its end, bit for bit as a plain run
    assert trace.error is None  # not the user's error
    error = trace.internal_error
    assert error is not None and error.component == "recorder"
    assert error.type == "Injected" and error.message == f"injected into {name}"
    assert f"injected into {name}" in error.traceback
    assert trace.ended == "stopped"
    assert trace.stopped is not None and "internal error of loop_stepper" in trace.stopped
    assert "ran on" in trace.stopped


@pytest.mark.parametrize(("owner", "name"), DOCTOR, ids=[f"{o.__name__}.{n}" for o, n in DOCTOR])
def test_a_fault_in_a_doctor_hook_stops_the_doctor_and_never_the_cell(
    owner: Any, name: str, plain: tuple[dict[str, Any], str]
) -> None:
    trace, after, printed, fired = recorded_run(owner, name)
    assert fired == [name]
    assert (after, printed) == plain
    assert trace.error is None
    error = trace.internal_error
    assert error is not None and error.component == "doctor"
    assert error.type == "Injected" and f"injected into {name}" in error.traceback
    assert trace.ended == "end"  # the recording went on to the end
    assert trace.moments[-1]["code"] == 'print("total", round(total.item(), 6))'


def test_the_fault_free_run_is_the_plain_run(plain: tuple[dict[str, Any], str]) -> None:
    """The cell itself, recorded with no fault: the same numbers, no internal error."""
    space: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trace = record(CELL, space, iterations=None)
    assert (same.state(space), printed.getvalue()) == plain
    assert trace.internal_error is None and trace.ended == "end", trace.stopped
    assert torch.is_tensor(space["total"])
