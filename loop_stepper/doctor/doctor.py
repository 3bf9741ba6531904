"""``Doctor``: the chart of a run with its checks, one per family of kinds (``kinds/``): the
order of the calls on each ``.grad`` (``order.py``), what a backward reaches (``reach.py``),
the state around the loop (``state.py``), what goes into the loss (``losses.py``), the
train/eval mode (``modes.py``)."""

from __future__ import annotations

from loop_stepper.doctor.chart import Chart, Check, Stopped
from loop_stepper.doctor.losses import Losses
from loop_stepper.doctor.modes import Modes
from loop_stepper.doctor.order import Order
from loop_stepper.doctor.reach import Reach
from loop_stepper.doctor.state import State

__all__ = ["Doctor", "Stopped"]


class Doctor(Chart):
    def examine(self) -> list[Check]:
        return [Order(self), Reach(self), State(self), Losses(self), Modes(self)]
