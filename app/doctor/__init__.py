"""The doctor: names each silent bug of a real training loop, at its line, from its numbers."""

from app.doctor.bugs import BUGS, Diagnosis
from app.doctor.doctor import Doctor, Stopped
from app.doctor.watch import watch

__all__ = ["BUGS", "Diagnosis", "Doctor", "Stopped", "watch"]
