"""``%load_ext loop_stepper`` and ``%%step`` in a real IPython shell: the cell runs in the
notebook's namespace, its trace is the widget's state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import loop_stepper
from loop_stepper.notebook.widget import Stepper

CELL = """\
import torch
w = torch.ones(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for i in range(1000):
    loss = (w * w).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.fixture()
def shell() -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "loop_stepper")
    yield ip
    InteractiveShell.clear_instance()


def test_a_step_cell_trains_the_notebooks_own_objects(shell: Any) -> None:
    widget = shell.run_cell_magic("step", "--iterations 2", CELL)
    assert isinstance(widget, Stepper)
    plain: dict[str, Any] = {}
    exec(CELL.replace("range(1000)", "range(2)"), plain)  # the same two iterations, unrecorded
    assert torch.equal(shell.user_ns["w"], plain["w"])  # the notebook's own tensor, trained
    trace = shell.user_ns["_step"]
    assert trace.iterations == 2 and "2 iterations" in trace.stopped
    assert len(widget.trace["moments"]) == len(trace.moments) == 3 + 2 * 4
    first = widget.trace["moments"][0]
    assert first["code"] == "import torch" and first["line"] == 1


def test_all_records_to_the_end_and_bad_lines_are_said(shell: Any) -> None:
    short = CELL.replace("range(1000)", "range(4)")
    widget = shell.run_cell_magic("step", "--iterations all", short)
    assert widget.trace["iterations"] == 4 and widget.trace["stopped"] is None
    for line in ("--iterations 0", "--iterations many", "--frobnicate"):
        with pytest.raises(UsageError, match=r"iterations|unknown"):
            shell.run_cell_magic("step", line, short)


def test_show_makes_a_widget_of_any_trace() -> None:
    trace = loop_stepper.record(CELL.replace("range(1000)", "range(2)"))
    widget = loop_stepper.show(trace)
    assert widget.trace["moments"][-1]["writes"] == ["params"]
    assert (
        widget.trace["parts"][widget.trace["moments"][-1]["params"][0]["value"]]
        == [pytest.approx(0.64)] * 2
    )
