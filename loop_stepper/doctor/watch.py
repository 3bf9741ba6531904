"""``watch()``: the doctor over a block of the user's own code.

    with loop_stepper.watch() as doctor:
        train(model, loader)
    doctor.diagnoses       # [{"bug", "file", "line", "iteration", "message", "evidence"}]

Every number is what it is without it: the probe's hooks only read, and every one of them is
removed when the block ends, also when it raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from loop_stepper.doctor.doctor import Doctor
from loop_stepper.recorder.probe import Probe


@contextmanager
def watch(*, iterations: int | None = None) -> Iterator[Doctor]:
    """Watch the block's training loop; with ``iterations``, stop it (``Stopped``, a
    BaseException) after that many steps of its first optimizer."""
    doctor = Doctor(iterations=iterations)
    with Probe(doctor):
        try:
            yield doctor
        finally:
            doctor.close()
