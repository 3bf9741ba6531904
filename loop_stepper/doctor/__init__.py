"""The doctor: names each silent bug of a real training loop, at its line, from its numbers."""

from loop_stepper.doctor.bugs import BUGS, Diagnosis
from loop_stepper.doctor.doctor import Doctor, Stopped
from loop_stepper.doctor.watch import watch

__all__ = ["BUGS", "Diagnosis", "Doctor", "Stopped", "watch"]
