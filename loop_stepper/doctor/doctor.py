"""``Doctor``: the chart of a run with its checks, one per family of kinds (``kinds/``): the
order of the calls on each ``.grad`` (``order.py``), what a backward reaches (``reach.py``),
the state around the loop (``state.py``), what goes into the loss (``losses.py``), the
train/eval mode (``modes.py``); on a rank of a data-parallel job, that rank (``ranks.py``)."""

from __future__ import annotations

from loop_stepper.doctor import ranks
from loop_stepper.doctor.chart import Chart, Check, Stopped
from loop_stepper.doctor.lockstep import Lockstep
from loop_stepper.doctor.losses import Losses
from loop_stepper.doctor.modes import Modes
from loop_stepper.doctor.order import Order
from loop_stepper.doctor.reach import Reach
from loop_stepper.doctor.state import State

__all__ = ["Doctor", "Stopped"]


class Doctor(Chart):
    def examine(self) -> list[Check]:
        checks: list[Check] = [Order(self), Reach(self), State(self), Losses(self), Modes(self)]
        if ranks.world() > 1:  # a data-parallel job's rank: stopped with the others
            self.lockstep = True
            checks += [ranks.Ranks(self), Lockstep(self)]
        return checks
