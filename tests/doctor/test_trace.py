"""A recorded trace's ``diagnoses`` (``loop_stepper.record``, and so ``%%step``): each bug at its
line, at the moment of that line the widget shows it at, on numbers that are the recorder's
own (and so plain PyTorch's) bit for bit."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

import loop_stepper
from loop_stepper.recorder import record as record_without_doctor
from tests.recorder.test_record import worked

BACKWARD = 15  # the worked example's backward, once its zero_grad line is gone


def test_the_worked_example_without_zero_grad_is_named_at_its_backward() -> None:
    source = worked().replace("    optimizer.zero_grad()\n", "")
    torch.manual_seed(0)  # nn.Linear's initial draw (then zeroed), the same for both records
    trace = loop_stepper.record(source)
    (found,) = trace.diagnoses
    assert found["bug"] == "skip_zero_grad"
    assert found["line"] == BACKWARD and found["iteration"] == 2
    moment = trace.moments[found["moment"]]
    assert moment["line"] == BACKWARD and moment["iteration"] == 2
    # the evidence is the moment's numbers: the weight's .grad held -23.5 (seeds/000), and the
    # second backward added its own onto it
    weight = moment["params"][0]
    assert found["evidence"]["now"] == [weight["grad"][0][0]]
    assert found["evidence"]["held"] == [-23.5]
    # the doctor changes no number of the trace
    torch.manual_seed(0)
    plain = record_without_doctor(source)
    assert [m["params"] for m in trace.moments] == [m["params"] for m in plain.moments]


def test_the_correct_worked_example_has_no_diagnosis() -> None:
    trace = loop_stepper.record(worked())
    assert trace.diagnoses == []
    assert len(trace.moments) > 10


def test_a_step_cells_trace_carries_its_diagnoses_to_the_widget() -> None:
    shell: Any = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "loop_stepper")
        cell = worked().replace("    optimizer.zero_grad()\n", "")
        widget = shell.run_cell_magic("step", "", cell)
        (found,) = widget.trace["diagnoses"]
        assert found["bug"] == "skip_zero_grad" and found["line"] == BACKWARD
        assert widget.trace["moments"][found["moment"]]["line"] == BACKWARD
        assert found["message"] == shell.user_ns["_step"].diagnoses[0]["message"]
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("stray", ["    optimizer.step()\n    out = model(x)\n"])
def test_a_step_before_any_backward_is_named_at_the_step(stray: str) -> None:
    source = worked().replace("for _ in range(2):\n", f"for _ in range(2):\n{stray}")
    trace = loop_stepper.record(source)
    named = {(d["bug"], d["line"]) for d in trace.diagnoses}
    assert ("step_first", 13) in named
