"""Every line a loop program may hold, defined once: one ``Entry`` row per line.

The Lab's dispatch (``Lab.run_line``), the stores each line reads and writes (``effects``),
the API's list of entries (``web/schemas.py``), the export (``export/units.py``) and the page
(rendered into the template by ``web/catalogue.py``) all read this table. Adding an entry is
one row here plus its Lab method (docs/development.md, "Adding a loop entry").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    """How a session writes its lines: the same entry reads differently with accumulation,
    clipping's max_norm, softmax before the loss, autocast and a GradScaler."""

    accumulate: int = 1
    max_norm: float = 1.0
    softmax: bool = False
    amp: str | None = None  # forward and loss under autocast in this dtype
    scaler: bool = False  # backward and step through a GradScaler


PLAIN = Style()  # how the "Add line" menu and the docs show an entry


@dataclass(frozen=True)
class Entry:
    """One line of the loop: what a program holds, what runs it, how it reads, what it touches."""

    name: str  # as a program holds it and the API takes it, e.g. "backward(retain_graph=True)"
    method: str  # the Lab method that runs it (the page's POST endpoint, for the five lines)
    comment: str  # one line beside it in the code panel
    reads: tuple[str, ...]  # the stores it reads (the lesson's F2 table, as ``last`` says it)
    writes: tuple[str, ...]  # and writes; ``effects.touched`` adds what the session's setup adds
    python: str = ""  # its Python when it is one fixed line, whatever the session
    # else how ``code`` writes it for a session's style (exactly one of python and write)
    write: Callable[[Entry, Style], str] | None = None
    arguments: tuple[tuple[str, bool], ...] = ()  # the Lab method's keyword arguments
    unit: str = "line"  # how the export writes it: a key of export/units.py's WRITERS

    @property
    def kwargs(self) -> dict[str, bool]:
        return dict(self.arguments)

    def code(self, style: Style = PLAIN) -> str:
        """The exact Python this entry stands for in a session written in ``style``."""
        return self.python if self.write is None else self.write(self, style)


# -- how the lines that depend on the session are written ----------------------------


def _args(entry: Entry) -> str:
    return ", ".join(f"{k}={v}" for k, v in entry.arguments)


def _autocast(style: Style) -> str:
    return f'with torch.autocast("cpu", dtype=torch.{style.amp}): ' if style.amp else ""


def _forward(entry: Entry, style: Style) -> str:
    return _autocast(style) + "out = model(X)"


def _loss(entry: Entry, style: Style) -> str:
    out = "out.softmax(dim=1)" if style.softmax else "out"
    by_k = f" / {style.accumulate}" if style.accumulate > 1 else ""
    return _autocast(style) + f"loss = loss_fn({out}, y)" + by_k


def _zero_grad(entry: Entry, style: Style) -> str:
    return f"optimizer.zero_grad({_args(entry)})"


def _backward(entry: Entry, style: Style) -> str:
    loss = "scaler.scale(loss)" if style.scaler else "loss"
    return f"{loss}.backward({_args(entry)})"


def _step(entry: Entry, style: Style) -> str:
    return "scaler.step(optimizer)" if style.scaler else "optimizer.step()"


def _clip(entry: Entry, style: Style) -> str:
    clip = f"torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm={style.max_norm})"
    return "scaler.unscale_(optimizer); " + clip if style.scaler else clip


def _checkpoint(entry: Entry, style: Style) -> str:
    scaler = ', "scaler": scaler.state_dict()' if style.scaler else ""
    return f'ckpt = {{"model": model.state_dict(), "optimizer": optimizer.state_dict(){scaler}}}'


# -- the table ----------------------------------------------------------------------

ROWS = (
    Entry(
        "forward",
        "forward",
        "# forward: builds the graph",
        reads=("params", "data"),
        writes=("graph",),
        write=_forward,
        unit="forward",
    ),
    Entry(
        "loss",
        "loss",
        "# loss: the last node",
        reads=("graph", "data"),
        writes=("graph", "loss"),
        write=_loss,
        unit="loss",
    ),
    Entry(
        "zero_grad",
        "zero_grad",
        "# empty the buffers",
        reads=(),
        writes=("grad",),
        write=_zero_grad,
    ),
    Entry(
        "zero_grad(set_to_none=False)",
        "zero_grad",
        "# empty the buffers",
        reads=(),
        writes=("grad",),
        write=_zero_grad,
        arguments=(("set_to_none", False),),
    ),
    Entry(
        "backward",
        "backward",
        "# add gradients into .grad",
        reads=("loss", "graph", "grad"),
        writes=("grad", "graph"),
        write=_backward,
    ),
    Entry(
        "backward(retain_graph=True)",
        "backward",
        "# add gradients into .grad",
        reads=("loss", "graph", "grad"),
        writes=("grad", "graph"),
        write=_backward,
        arguments=(("retain_graph", True),),
    ),
    Entry(
        "step",
        "step",
        "# move the parameters",
        reads=("grad", "params"),
        writes=("params",),
        write=_step,
    ),
    Entry(
        "clip_grad_norm",
        "clip_grad_norm",
        "# one norm over every .grad",
        reads=("grad",),
        writes=("grad",),
        write=_clip,
    ),
    Entry(
        "scheduler_step",
        "scheduler_step",
        "# the next lr",
        reads=("lr",),
        writes=("lr",),
        python="scheduler.step()",
    ),
    Entry(
        "train",
        "train",
        "# dropout and BatchNorm on",
        reads=(),
        writes=("mode",),
        python="model.train()",
    ),
    Entry(
        "eval",
        "eval",
        "# dropout off, BatchNorm frozen",
        reads=(),
        writes=("mode",),
        python="model.eval()",
    ),
    Entry(
        "log_item",
        "log_item",
        "# a float: no graph kept",
        reads=("loss", "running_loss"),
        writes=("running_loss",),
        python="running_loss += loss.item()",
    ),
    Entry(
        "log_tensor",
        "log_tensor",
        "# the tensor: its graph kept",
        reads=("loss", "graph", "running_loss"),
        writes=("running_loss",),
        python="running_loss += loss",
    ),
    Entry(
        "checkpoint",
        "checkpoint",
        "# what a restart needs",
        reads=("params", "buffers", "optimizer_state"),
        writes=("ckpt",),
        write=_checkpoint,
        unit="checkpoint",
    ),
    Entry(
        "checkpoint(model_only=True)",
        "checkpoint",
        "# the model only",
        reads=("params", "buffers"),
        writes=("ckpt",),
        python='ckpt = {"model": model.state_dict()}',
        arguments=(("model_only", True),),
        unit="checkpoint",
    ),
    Entry(
        "resume",
        "resume",
        "",  # its Python says it
        reads=("ckpt",),
        writes=("params", "buffers", "grad", "optimizer_state", "mode", "lr"),
        python="model, optimizer = fresh(ckpt)  # new model and optimizer, then load_state_dict "
        "of what ckpt holds",
        unit="resume",
    ),
    Entry(
        "scaler_update",
        "scaler_update",
        "# the next scale",
        reads=("scaler",),
        writes=("scaler",),
        python="scaler.update()",
    ),
)

ENTRIES: dict[str, Entry] = {e.name: e for e in ROWS}
