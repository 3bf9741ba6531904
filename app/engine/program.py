"""The loop program: which lines one iteration runs, in which order, and where the cursor is."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

# The lines a program may hold, each the exact Python it stands for.
LINES: dict[str, str] = {
    "forward": "out = model(X)",
    "loss": "loss = loss_fn(out, y)",
    "zero_grad": "optimizer.zero_grad()",
    "backward": "loss.backward()",
    "step": "optimizer.step()",
}

CORRECT = ("forward", "loss", "zero_grad", "backward", "step")


@dataclass(frozen=True)
class Toggles:
    skip_zero_grad: bool = False
    step_first: bool = False


NO_BUGS = Toggles()


def program_for(toggles: Toggles) -> list[str]:
    """The default loop with the classic bugs switched on."""
    lines = list(CORRECT)
    if toggles.step_first:
        lines[3], lines[4] = "step", "backward"
    if toggles.skip_zero_grad:
        lines.remove("zero_grad")
    return lines


def carry_cursor(old: list[str], cursor: int, new: list[str]) -> int:
    """Where the cursor stands after the program changes mid-iteration.

    Lines already run in this iteration stay run: the cursor moves to the first line of
    the new program that has not run yet, i.e. past the longest prefix of ``new`` made of
    lines that ``old[:cursor]`` has run. At the start of an iteration it stays at 0.
    """
    done = Counter(old[:cursor])
    at = 0
    for line in new:
        if done[line] == 0:
            break
        done[line] -= 1
        at += 1
    return at % len(new)
