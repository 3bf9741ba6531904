"""Which stores each line reads and writes: the lesson's F2 table, as the Session's ``last``."""

from __future__ import annotations

from dataclasses import dataclass

# The lesson's F2 table. A stateful optimizer (momentum, Adam) adds a fifth store that step
# reads and writes; the rest of the real loop adds its own stores.
EFFECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "forward": (("params", "data"), ("graph",)),
    "loss": (("graph", "data"), ("graph", "loss")),
    "zero_grad": ((), ("grad",)),
    "backward": (("loss", "graph", "grad"), ("grad", "graph")),
    "step": (("grad", "params"), ("params",)),
    "clip_grad_norm": (("grad",), ("grad",)),
    "scheduler_step": (("lr",), ("lr",)),
    "train": ((), ("mode",)),
    "eval": ((), ("mode",)),
    "log_item": (("loss", "running_loss"), ("running_loss",)),
    "log_tensor": (("loss", "graph", "running_loss"), ("running_loss",)),
    "checkpoint": (("params", "buffers", "optimizer_state"), ("ckpt",)),
    "resume": (("ckpt",), ("params", "buffers", "grad", "optimizer_state", "mode", "lr")),
    "scaler_update": (("scaler",), ("scaler",)),
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
    """The stores ``line`` read and wrote; ``reads``/``writes`` replace the table's."""
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
