"""The log's events as the script's statements (``Unit``), repeated blocks folded into loops."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Protocol

from app.engine.entries import ENTRIES, Entry, Style
from app.engine.program import preset_of
from app.export.setup import ScriptPlan, Unsupported, _num, _program

Event = dict[str, Any]

MAX_PERIOD = 64  # longest block of events looked for as a loop body (a program has <= 20)
INDENT = "    "

# The Lab's own refusals: lines whose input does not exist yet, which plain Python could not
# even run (NameError). Their messages, as lab.py words them, mark a refusal in the log too.
REFUSED = {
    "loss": ("out = model(X) has not run yet", "loss needs an output: run forward first"),
    "backward": ("loss = loss_fn(out, y) has not run yet", "backward needs a loss: run loss first"),
    "log_item": ("loss = loss_fn(out, y) has not run yet", "log_item needs a loss: run loss first"),
    "log_tensor": (
        "loss = loss_fn(out, y) has not run yet",
        "log_tensor needs a loss: run loss first",
    ),
    "scheduler_step": (
        "the session has no scheduler",
        "scheduler.step() needs a scheduler: create the session with one "
        '(e.g. "scheduler": {"kind": "step", "step_size": 1, "gamma": 0.5})',
    ),
    "resume": ("ckpt has not been made yet", "resume needs a checkpoint: run checkpoint first"),
    "scaler_update": (
        "the session has no GradScaler",
        'scaler.update() needs a GradScaler: create the session with "amp": "float16"',
    ),
}
USES_LOSS = ("backward", "log_item", "log_tensor")


# -- what the events become -------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One top-level statement of the session: a line that ran, an lr change, or a note."""

    lines: tuple[str, ...]
    markdown: str = ""  # a program change: a comment here, a markdown cell in a notebook


@dataclass(frozen=True)
class Loop:
    count: int
    body: tuple[Unit | Loop, ...]


Piece = Unit | Loop


# -- events to units --------------------------------------------------------------


@dataclass
class _State:
    """What plain Python has defined so far: the Lab refuses a line whose inputs are missing."""

    out: bool = False
    loss: bool = False
    lines: int = 0
    failed: int = 0
    forwards: int = 0
    logged: bool = False  # a running_loss line ran: the script starts it at 0.0
    copies: bool = False  # a checkpoint line: the script imports copy
    # out or loss were made before a resume: the Lab's resume gives new parameter tensors (a
    # new model's), which the script's in-place load_state_dict does not
    old_graph: bool = False


def _line(session: ScriptPlan, entry: str) -> tuple[str, ...]:
    return UNITS[entry](session, ENTRIES[entry])


def _code(session: ScriptPlan, entry: Entry) -> tuple[str, ...]:
    """The entry's own line, in the session's style (the code panel's Python)."""
    style = Style(max_norm=session.max_norm, amp=session.amp, scaler=session.scaler)
    return (entry.code(style),)


def _checkpoint(session: ScriptPlan, entry: Entry) -> tuple[str, ...]:
    """Copies, as ``torch.save`` then ``torch.load`` would give them (as the Lab holds them): a
    bare ``state_dict()`` shares the live tensors, which the next step changes."""
    parts = ['"model": copy.deepcopy(model.state_dict())']
    if not entry.kwargs.get("model_only", False):
        parts.append('"optimizer": copy.deepcopy(optimizer.state_dict())')
        if session.scaler:
            parts.append('"scaler": scaler.state_dict()')
    return (f"ckpt = {{{', '.join(parts)}}}  # copies, as torch.save then torch.load give",)


def _resume(session: ScriptPlan, entry: Entry) -> tuple[str, ...]:
    """What a restarted job does: a fresh model and optimizer (train mode, no .grad, no
    optimizer state, the creation lr), then ``load_state_dict`` of what ckpt holds."""
    lines = [
        "# resume: a fresh model and optimizer, then load_state_dict of what ckpt holds",
        'model.load_state_dict(ckpt["model"])',
        "model.train()",
        "for p in model.parameters():",
        "    p.grad = None",
        f"optimizer.load_state_dict({session.fresh_optimizer}.state_dict())",
        'if "optimizer" in ckpt:',
        '    optimizer.load_state_dict(copy.deepcopy(ckpt["optimizer"]))',
    ]
    if session.scaler:
        lines += [
            'scaler = torch.amp.GradScaler("cpu")',
            'if "scaler" in ckpt:',
            '    scaler.load_state_dict(ckpt["scaler"])',
        ]
    return tuple(lines)


class Writer(Protocol):
    def __call__(self, session: ScriptPlan, entry: Entry, /) -> tuple[str, ...]: ...


# How the script writes each kind of line (an entry's ``unit`` names one): the forward and loss
# lines come from the setup (the batch draw, the micro-batch share), a checkpoint holds copies,
# resume is what a restarted job does; every other entry is its own line of Python.
WRITERS: dict[str, Writer] = {
    "forward": lambda session, entry: session.forward,
    "loss": lambda session, entry: (session.loss,),
    "checkpoint": _checkpoint,
    "resume": _resume,
    "line": _code,
}
# The export's unit of every entry: all of them can be written (the moons model options
# dropout, batchnorm and softmax are refused at the setup, never written wrongly).
UNITS: dict[str, Writer] = {e.name: WRITERS[e.unit] for e in ENTRIES.values()}
EXPORTABLE = frozenset(UNITS)


def _failed(session: ScriptPlan, entry: str, state: _State, error: str) -> tuple[str, ...]:
    name = ENTRIES[entry].method
    lines = _line(session, entry)
    missing = (name == "loss" and not state.out) or (name in USES_LOSS and not state.loss)
    if missing or (name in REFUSED and error == REFUSED[name][1]):
        return (
            f"# the Lab refused: {REFUSED[name][0]} (in plain Python, a NameError)",
            *(f"# {line}" for line in lines),
            f"print('refused:', {error!r})",
        )
    body = [INDENT + line for line in lines]
    if session.scaler and name in ("step", "clip_grad_norm", "scaler_update"):
        return (  # GradScaler asserts some of its rules; a refused step may have moved its stage
            "saved = copy.deepcopy(scaler.__dict__)",
            "try:",
            *body,
            "except (RuntimeError, AssertionError) as error:  # the Lab answered it with a 409",
            "    scaler.__dict__.update(saved)  # and left the scaler as it was",
            "    print(error)",
        )
    if name != "backward":
        # PyTorch refuses with a RuntimeError, or a ValueError (BatchNorm on a batch of one)
        return (
            "try:",
            *body,
            "except (RuntimeError, ValueError) as error:",
            INDENT + "print(error)",
        )
    return (
        "saved = [None if p.grad is None else p.grad.clone() for p in model.parameters()]",
        "try:",
        *body,
        "except RuntimeError as error:  # PyTorch's message; the Lab answered it with a 409",
        "    # backward may have added into some buffers before it failed: the Lab puts them back",
        "    for p, grad in zip(model.parameters(), saved):",
        "        p.grad = grad",
        "    print('RuntimeError:', error)",
    )


def _units(session: ScriptPlan, events: list[Event], state: _State) -> list[Unit]:
    units = []
    for number, event in enumerate(events):
        op = event.get("op")
        if op == "line":
            entry = event.get("entry")
            if entry not in ENTRIES:
                raise ValueError(f"event {number}: unknown entry {entry!r}")
            if entry not in EXPORTABLE:
                raise Unsupported(
                    f"the export cannot write the line {entry!r} as a script yet: this "
                    "session's log holds it"
                )
            name = ENTRIES[entry].method
            if name == "backward" and state.old_graph:
                raise Unsupported(
                    "the export cannot write a backward through a graph built before resume "
                    "yet: this session's log holds one"
                )
            state.lines += 1
            if event.get("ok", True):
                if (name == "loss" and not state.out) or (name in USES_LOSS and not state.loss):
                    raise ValueError(f"event {number}: {entry} ran before its input existed")
                units.append(Unit(_line(session, entry)))
                state.out |= name == "forward"
                state.loss |= name == "loss"
                state.forwards += name == "forward"
                state.logged |= name.startswith("log_")
                state.copies |= name == "checkpoint"
                if name in ("forward", "resume"):
                    state.old_graph = name == "resume" and (state.out or state.loss)
            else:
                state.failed += 1
                units.append(Unit(_failed(session, entry, state, str(event.get("error", "")))))
        elif op == "lr":
            lr = _num(event["lr"])
            units.append(Unit(("for group in optimizer.param_groups:", f'    group["lr"] = {lr}')))
        elif op == "max_norm":
            max_norm = float(event["max_norm"])
            if not 0 < max_norm < math.inf:
                raise ValueError(f"event {number}: max_norm must be above 0 and finite")
            session = replace(session, max_norm=max_norm)  # the clipping lines after it
            units.append(Unit((f"# clip_grad_norm_'s max_norm is now {_num(max_norm)}",)))
        elif op == "program":
            program = _program(event["program"], f"event {number}")
            preset = preset_of(program)
            named = f" (preset {preset})" if preset else ""
            words = f"loop program changed to: {', '.join(program)}{named}"
            shown = ", ".join(f"`{e}`" for e in program)
            text = f"The loop program changed to: {shown}" + (
                f" (preset `{preset}`)." if preset else "."
            )
            units.append(Unit((f"# {words}",), text))
        elif op != "predict":  # a student's prediction runs nothing
            raise ValueError(f"event {number}: unknown op {op!r}")
    return units


# -- repeated blocks to loops -----------------------------------------------------


def _fold(units: list[Unit]) -> list[Piece]:
    """Consecutive repeats of a block become ``for _ in range(r)``, nested where they nest.

    At each place the block covering the most events wins (the shortest on a tie); a loop
    must save at least two statements, so ``step; step`` stays as it is.
    """
    ids: dict[Unit, int] = {}
    keys = [ids.setdefault(unit, len(ids)) for unit in units]
    pieces: list[Piece] = []
    i, n = 0, len(keys)
    while i < n:
        best = (1, 1)
        for p in range(1, min(MAX_PERIOD, (n - i) // 2) + 1):
            if keys[i + p] != keys[i] or keys[i + 2 * p - 1] != keys[i + p - 1]:
                continue  # cheap checks first: most places repeat nothing
            block, r = keys[i : i + p], 2
            if keys[i + p : i + 2 * p] != block:
                continue
            while keys[i + r * p : i + (r + 1) * p] == block:
                r += 1
            if p * (r - 1) >= 2 and p * r > best[0] * best[1]:
                best = (p, r)
        p, r = best
        if r == 1:
            pieces.append(units[i])
        else:
            pieces.append(Loop(r, tuple(_fold(units[i : i + p]))))
        i += p * r
    return pieces


def _render(piece: Piece, depth: int = 0) -> list[str]:
    pad = INDENT * depth
    if isinstance(piece, Unit):
        return [pad + line if line else "" for line in piece.lines]
    lines = [f"{pad}for _ in range({piece.count}):"]
    for inner in piece.body:
        lines += _render(inner, depth + 1)
    return lines
