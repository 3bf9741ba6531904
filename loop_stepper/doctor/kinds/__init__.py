"""Every kind of silent bug the doctor names, each defined once in its family's module (see
``kind.py``): importing this package defines them all, in the order of ``BUGS``."""

from loop_stepper.doctor.kinds import losses, modes, order, ranks, reach, state
from loop_stepper.doctor.kinds.kind import KINDS, Diagnosis, Kind

FAMILIES = (order, reach, state, losses, modes, ranks)

__all__ = ["FAMILIES", "KINDS", "Diagnosis", "Kind"]
