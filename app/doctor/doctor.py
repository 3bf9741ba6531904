"""``Doctor``: the chart of a run with its three checks, the order of the calls on each
``.grad`` (``order.py``), what a backward reaches (``reach.py``) and the state around the loop
(``state.py``)."""

from __future__ import annotations

from app.doctor.chart import Chart, Check, Stopped
from app.doctor.order import Order
from app.doctor.reach import Reach
from app.doctor.state import State

__all__ = ["Doctor", "Stopped"]


class Doctor(Chart):
    def examine(self) -> list[Check]:
        return [Order(self), Reach(self), State(self)]
