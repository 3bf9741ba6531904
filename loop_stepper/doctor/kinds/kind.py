"""A kind of silent bug, defined in one place: its id, its family (the check that names it), the
numbers that show it, a minimal loop that has it, the fix in one sentence, and the sentence a
diagnosis says with its numbers. Each family's kinds are in the module of this package named
after it (``order``, ``reach``, ``state``…), the check that names them in the doctor's module of
that name; ``loop-stepper doctor --explain ID`` prints one and the doctor's table in
``docs/doctor.md`` is made from them (``bugs.py``).

A diagnosis is ``{"bug", "file", "line", "iteration", "message", "evidence"}``: ``line`` is the
statement where the numbers show it, ``evidence`` the numbers themselves.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, TypedDict


class Diagnosis(TypedDict):
    bug: str
    file: str | None
    line: int | None
    iteration: int
    message: str
    evidence: dict[str, Any]


KINDS: dict[str, Kind] = {}  # every kind defined, by id, in the order defined


@dataclass(frozen=True)
class Kind:
    id: str
    family: str  # the check that names it: "order", "reach", "state", "losses", "modes"…
    shows: str  # the numbers that show it (the table in docs/doctor.md)
    example: str  # a minimal loop that has it
    fix: str  # one sentence
    said: str  # what happened, ``{...}`` filled from the evidence (a field it lacks: left out)

    def __post_init__(self) -> None:
        if self.id in KINDS:
            raise ValueError(f"two kinds named {self.id!r}")
        KINDS[self.id] = self

    def message(self, evidence: dict[str, Any]) -> str:
        """What happened, with its numbers, then the fix."""
        fields = _Fields({k: _said(v) for k, v in evidence.items()})
        return f"{self.said.format_map(fields)}; {self.fix}"

    def explained(self) -> str:
        """The kind as ``--explain`` prints it."""
        example = textwrap.indent(textwrap.dedent(self.example).strip("\n"), "    ")
        return (
            f"{self.id} ({self.family})\n\n"
            f"What the numbers show: {self.shows}\n\n"
            f"For example:\n\n{example}\n\n"
            f"Fix: {self.fix}\n"
        )


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _said(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(_said(v) for v in value)
    return str(value)
