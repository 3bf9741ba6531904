"""The catalogue of the silent bugs the doctor names: every kind (``kinds/``), in order, its
sentence with the numbers of a diagnosis, and the doctor's table in ``docs/doctor.md`` made
from them (``python -m loop_stepper.doctor.bugs`` prints it; a test holds the docs to it)."""

from __future__ import annotations

from typing import Any

from loop_stepper.doctor.kinds import FAMILIES, KINDS, Diagnosis, Kind

__all__ = ["BUGS", "KINDS", "NAMED_FAILURES", "Diagnosis", "Kind", "message", "table"]

BUGS = tuple(KINDS)
# the failures a diagnosis names (exit 1, not 2): PyTorch's own errors, a job's collective
NAMED_FAILURES = frozenset({"backward_twice", "no_gradient", "collective_hang"})


def message(bug: str, evidence: dict[str, Any]) -> str:
    """The bug's sentence with its numbers, then its fix; a field the evidence lacks is left
    out."""
    return KINDS[bug].message(evidence)


def table() -> str:
    """The doctor's table: each kind, by family, with the numbers that show it and its fix."""
    rows = ["| id | family | the numbers that show it | the fix |", "|---|---|---|---|"]
    for family in FAMILIES:
        for kind in KINDS.values():
            if kind.family == family.FAMILY:
                rows.append(f"| `{kind.id}` | {kind.family} | {kind.shows} | {kind.fix} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
