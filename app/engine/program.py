"""The loop program: which lines one iteration runs, in which order, and where the cursor is.

A program is a list of entries, each one line of Python; the toggles and presets are just
ways of writing a program, and the toggles shown for a program are read back from it.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

from app.engine.entries import ENTRIES, Style
from app.engine.views import ProgramView

MAX_PROGRAM = 20  # entries in a program a student writes

CORRECT = ("forward", "loss", "zero_grad", "backward", "step")


def code(
    entry: str,
    accumulate: int = 1,
    *,
    max_norm: float = 1.0,
    softmax: bool = False,
    amp: str | None = None,
    scaler: bool = False,
) -> str:
    """The exact Python an entry stands for. ``amp`` (bfloat16, float16) puts forward and loss
    under autocast; ``scaler`` routes backward and step through the GradScaler."""
    return ENTRIES[entry].code(Style(accumulate, max_norm, softmax, amp, scaler))


def describe(program: list[str], style: Style) -> ProgramView:
    """What a Session says about its program: toggles, entries, their Python, the preset
    (shared by every session with that program and style: read it, change nothing)."""
    return _describe(tuple(program), style)


@functools.lru_cache(maxsize=256)
def _describe(program: tuple[str, ...], style: Style) -> ProgramView:
    toggles = toggles_of(list(program))
    return {
        "toggles": {"skip_zero_grad": toggles.skip_zero_grad, "step_first": toggles.step_first},
        "program": list(program),
        "code": [ENTRIES[e].code(style) for e in program],
        "preset": preset_of(list(program), style.softmax, style.amp, style.scaler),
    }


@dataclass(frozen=True)
class Toggles:
    skip_zero_grad: bool = False
    step_first: bool = False


NO_BUGS = Toggles()


def program_for(toggles: Toggles, accumulate: int = 1, scaler: bool = False) -> list[str]:
    """The default loop (zero_grad first when accumulating k micro-batches) with bugs on;
    with a GradScaler, ``scaler.update()`` ends it."""
    if accumulate == 1:
        lines = list(CORRECT)
    else:
        lines = ["zero_grad", *["forward", "loss", "backward"] * accumulate, "step"]
    if toggles.step_first:  # the step moves before the last backward
        b, s = len(lines) - 1 - lines[::-1].index("backward"), lines.index("step")
        lines[b], lines[s] = lines[s], lines[b]
    if toggles.skip_zero_grad:
        lines.remove("zero_grad")
    return with_scaler(lines) if scaler else lines


def with_scaler(program: list[str] | tuple[str, ...]) -> list[str]:
    """A loop as a session with a GradScaler runs it: ``scaler.update()`` at its end."""
    return [*program, "scaler_update"]


def toggles_of(program: list[str]) -> Toggles:
    """The toggles a program shows: no zero_grad at all; a step before the last backward."""
    lines = [ENTRIES[e].method for e in program]
    skip = "zero_grad" not in lines
    first = (
        "step" in lines
        and "backward" in lines
        and lines.index("step") < len(lines) - 1 - lines[::-1].index("backward")
    )
    return Toggles(skip, first)


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    program: tuple[str, ...]
    explanation: str
    # what the session needs for the bug to show (a scenario, an optimizer, setup options);
    # only ``softmax_before_loss`` is part of what makes a session this preset
    setup: tuple[tuple[str, object], ...] = ()


PRESETS = [
    Preset(
        "correct",
        "The correct loop",
        CORRECT,
        "zero_grad empties the buffers after the last step and before this backward, so step "
        "reads exactly this batch's gradient.",
    ),
    Preset(
        "skip_zero_grad",
        "Skip zero_grad",
        ("forward", "loss", "backward", "step"),
        "backward adds into .grad, so the buffers hold the sum of every gradient so far and each "
        "step is too long: in the worked example .grad becomes (-27.375, -9.325) at step 2 and "
        "the loss jumps to about 12.09. On a parabola the parameters swing for ever.",
    ),
    Preset(
        "step_first",
        "Step before backward",
        ("forward", "loss", "zero_grad", "step", "backward"),
        "step finds .grad set to None by zero_grad and skips every parameter: nothing ever "
        "moves and the loss stays where it started (18.5 in the worked example).",
    ),
    Preset(
        "zero_grad_before_step",
        "zero_grad between backward and step",
        ("forward", "loss", "backward", "zero_grad", "step"),
        "zero_grad wipes the buffers backward just filled, so step finds None and nothing moves.",
    ),
    Preset(
        "backward_twice",
        "backward twice",
        ("forward", "loss", "zero_grad", "backward", "backward", "step"),
        "The first backward frees the graph; the second raises PyTorch's RuntimeError.",
    ),
    Preset(
        "backward_twice_retain",
        "backward twice with retain_graph",
        ("forward", "loss", "zero_grad", "backward(retain_graph=True)", "backward", "step"),
        "The graph is kept alive, so the second backward runs and adds the same gradient again: "
        "the weight's .grad becomes 2 x (-23.5) = -47 in the worked example.",
    ),
    Preset(
        "zeros",
        "zero_grad(set_to_none=False) between backward and step",
        ("forward", "loss", "backward", "zero_grad(set_to_none=False)", "step"),
        "The buffers hold zeros instead of None. Plain SGD steps with zeros and nothing moves, "
        "as with None; but with momentum or weight decay a zero gradient still moves the "
        "parameters (the buffer coasts, the decay pulls), while None makes step skip them.",
    ),
    Preset(
        "clip_before_backward",
        "clip_grad_norm_ before backward",
        ("forward", "loss", "zero_grad", "clip_grad_norm", "backward", "step"),
        "Clipping edits .grad in place, so it belongs between backward and step. Here it runs "
        "right after zero_grad: every .grad is None, it measures a total norm of 0 and scales "
        "nothing, and step then applies the whole unclipped gradient (in the worked example "
        "w jumps to 1.175 instead of moving by at most lr x max_norm). Without zero_grad it "
        "would clip the stale buffers of the last iteration instead.",
    ),
    Preset(
        "scheduler_before_step",
        "scheduler.step() before optimizer.step()",
        ("forward", "loss", "zero_grad", "backward", "scheduler_step", "step"),
        "The scheduler's step goes after optimizer.step(). Called first, PyTorch warns "
        '("Detected call of `lr_scheduler.step()` before `optimizer.step()`") and the first '
        "value of the schedule is skipped: every step uses the lr one step further down the "
        "schedule. Needs a scheduler at creation, e.g. StepLR(step_size=1, gamma=0.5).",
        (("scheduler", {"kind": "step", "step_size": 1, "gamma": 0.5}),),
    ),
    Preset(
        "eval_while_training",
        "model.eval() left on while training",
        ("eval", "forward", "loss", "zero_grad", "backward", "step"),
        "model.eval() flips the flag Dropout and BatchNorm read: dropout zeroes nothing and "
        "BatchNorm normalizes with its stored running statistics, which never update (the "
        "buffers store stays where it was). Gradients still flow and the weights still move: "
        "eval() does not switch autograd off. Needs moons with dropout or batchnorm.",
        (("scenario", "moons"), ("dropout", 0.5), ("batchnorm", True)),
    ),
    Preset(
        "log_tensor",
        "running_loss += loss (the tensor)",
        ("forward", "loss", "zero_grad", "backward", "step", "log_tensor"),
        "running_loss += loss keeps the loss tensor, and with it its whole autograd graph: the "
        "graphs kept alive grow by one every iteration (and their saved tensors too, in a "
        "loop that never calls backward). loss.item() gives a Python float and keeps nothing.",
    ),
    Preset(
        "softmax_before_loss",
        "softmax before CrossEntropyLoss",
        CORRECT,
        "nn.CrossEntropyLoss applies log_softmax itself and expects raw logits. Fed "
        "probabilities it applies softmax twice: outputs squashed into (0, 1) barely separate "
        "the classes, the loss cannot go below -log(e / (e + 1)) = 0.313, gradients shrink "
        "and training crawls. No error is raised. Needs moons with softmax_before_loss.",
        (("scenario", "moons"), ("softmax_before_loss", True)),
    ),
    Preset(
        "resume_without_optimizer",
        "resume from a checkpoint without the optimizer state (Adam)",
        (
            "forward",
            "loss",
            "zero_grad",
            "backward",
            "step",
            "checkpoint(model_only=True)",
            "resume",
        ),
        "The checkpoint holds only model.state_dict(): resuming builds a fresh Adam, so the "
        "fifth store empties, Adam's step count restarts at 1 and its first steps are full "
        "lr-sized moves whatever the gradient's size: the loss jumps. A resumable checkpoint "
        "also holds optimizer.state_dict() (and the scheduler's). Needs Adam.",
        (("optimizer", {"kind": "adam"}),),
    ),
    Preset(
        "float16_without_scaler",
        "float16 autocast without a GradScaler",
        CORRECT,
        "autocast runs the forward's eligible ops (the Linear layer's addmm) in float16 while "
        "the weights stay float32; the loss comes out float32. Without a GradScaler the "
        "backward through those ops is float16 too: a gradient below 6e-8 underflows to "
        "exactly 0 and one below 6.1e-5 keeps only a few bits, so small gradients silently "
        "vanish. The worked example's gradients are large (-23.5 is exact in float16), so here "
        "nothing underflows: the numbers follow float32's to about three digits (loss 0.55404 "
        "after one step, float32 0.55219). The correct float16 loop (compare it) scales the "
        "loss by 2**16 first: its first 5 steps overflow and are skipped (loss stays 18.5) while "
        "the scale comes down to 2048, then it gives exactly these numbers (a power of two "
        "scales exactly), 5 iterations late. Needs a float32 model; bfloat16 has float32's range "
        "and needs no scaler.",
        (("scenario", "neuron"), ("amp", "float16"), ("grad_scaler", False)),
    ),
]


def preset_of(
    program: list[str],
    softmax_before_loss: bool = False,
    amp: str | None = None,
    scaler: bool = False,
) -> str | None:
    """The preset a program (and the loss line's softmax, and float16 without a GradScaler)
    equals; with a GradScaler a preset's program ends with ``scaler.update()``."""
    unscaled = amp == "float16" and not scaler
    return next(
        (
            p.name
            for p in PRESETS
            if (with_scaler(p.program) if scaler else list(p.program)) == program
            and dict(p.setup).get("softmax_before_loss", False) == softmax_before_loss
            and (dict(p.setup).get("grad_scaler") is False) == unscaled
        ),
        None,
    )


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
