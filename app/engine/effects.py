"""Which stores each line reads and writes: the lesson's F2 table, as the Session's ``last``."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.entries import ENTRIES
from app.engine.views import LastView

# Every store a line may read or write (the API's enum lists these, in this order), and how a
# sentence names it.
STORES: dict[str, str] = {
    "params": "the parameters",
    "data": "the batch",
    "graph": "the autograd graph",
    "grad": ".grad",
    "loss": "loss",
    "optimizer_state": "the optimizer's state",
    "lr": "the learning rate",
    "mode": "model.training (the mode)",
    "buffers": "the model's buffers",
    "running_loss": "running_loss",
    "ckpt": "ckpt",
    "scaler": "the GradScaler",
}

# The lesson's F2 table, read off the table of entries: each entry's (reads, writes). A
# stateful optimizer (momentum, Adam) adds a fifth store that step reads and writes; the rest
# of the real loop adds its own stores.
EFFECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    e.name: (e.reads, e.writes) for e in ENTRIES.values()
}
STATEFUL_STEP = (("grad", "params", "optimizer_state"), ("params", "optimizer_state"))


@dataclass(frozen=True)
class Setting:
    """What of the session's setup changes a line's reads and writes."""

    stateful: bool  # the optimizer keeps state (momentum, Adam)
    mode_matters: bool  # dropout or BatchNorm read model.training
    buffers: bool  # the model has buffers (BatchNorm)
    scheduler: bool  # step reads the lr a scheduler writes
    grad_scaler: bool = False  # backward and step go through a GradScaler


def touched(
    line: str,
    setting: Setting,
    training: bool,
    reads: tuple[str, ...] | None = None,
    writes: tuple[str, ...] | None = None,
) -> tuple[list[str], list[str]]:
    """The stores ``line`` (an entry, or the Lab method of the plain entry of that name) read
    and wrote; ``reads``/``writes`` replace the table's."""
    base = STATEFUL_STEP if line == "step" and setting.stateful else EFFECTS[line]
    r = list(base[0] if reads is None else reads)
    w = list(base[1] if writes is None else writes)
    if line == "forward" and setting.mode_matters:
        r.append("mode")  # dropout and BatchNorm read the flag
        if setting.buffers:
            (w if training else r).append("buffers")
    if line == "step" and setting.scheduler:
        r.append("lr")
    if setting.grad_scaler and line in ("backward", "step", "clip_grad_norm"):
        r.append("scaler")  # scale(loss), and unscale_ with what it found
        if line != "backward" and "scaler" not in w:
            w.append("scaler")
    if line == "resume" and setting.grad_scaler:
        w.append("scaler")
    if line == "resume" and not setting.buffers:
        w.remove("buffers")
    if line == "checkpoint" and not setting.buffers:
        r.remove("buffers")
    return r, w


def done(
    line: str,
    setting: Setting,
    training: bool,
    reads: tuple[str, ...] | None = None,
    writes: tuple[str, ...] | None = None,
    result: float | None = None,
) -> LastView:
    """The answer's ``last`` for the line just run (its warnings and ``scaled`` added after)."""
    r, w = touched(line, setting, training, reads, writes)
    return {"line": line, "reads": r, "writes": w, "warnings": [], "result": result, "scaled": None}
