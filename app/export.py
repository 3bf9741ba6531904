"""A session's log as a standalone plain-PyTorch script, or the same as a Jupyter notebook.

The log (setup + events, see the timeline) says what ran; the export writes the Python that
runs it again outside the app: the lesson's own lines, the lr changes where they happened,
failures where they happened, repeated iterations folded into ``for`` loops. Run, it ends by
printing one line of JSON with the exact numbers the Lab holds (parameters, ``.grad``, loss).

Nothing here imports the web layer, and the engine does not import this module.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, replace
from typing import Any

from .engine import scenarios
from .engine.program import ENTRIES, code, preset_of

Setup = dict[str, Any]
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
}
USES_LOSS = ("backward", "log_item", "log_tensor")


# The entries an exported script can write so far; the rest of the loop (the scheduler,
# checkpoints) and the moons options are refused, never written wrongly.
EXPORTABLE = frozenset(ENTRIES) - {
    "scheduler_step",
    "checkpoint",
    "checkpoint(model_only=True)",
    "resume",
}
NEW_SETUP = {
    "scheduler": None,
    "dropout": 0.0,
    "batchnorm": False,
    "softmax_before_loss": False,
    "dtype": "float64",
}


class Unsupported(ValueError):
    """A real session log the export cannot write as a script yet (the API answers 409)."""


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


@dataclass(frozen=True)
class Session:
    """What a script needs besides the events: its setup code and how a line is written."""

    setup: tuple[str, ...]
    forward: tuple[str, ...]  # the forward line, with the batch draw before it if any
    loss: str
    title: str
    summary: tuple[str, ...]
    max_norm: float = 1.0


def _num(value: float) -> str:
    """A float literal that reads back exactly (repr round-trips; inf and NaN need math)."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def _shares(scenario: str, k: int) -> list[float]:
    """Every micro-batch's share |B_j| / n of its batch, as the Lab computes it."""
    info = scenarios.info(scenario)
    sizes = {info.batch_size, info.train_size % info.batch_size} - {0}
    return [
        (n // k + (1 if j < n % k else 0)) / n  # tensor_split: the first n % k parts one longer
        for n in sorted(sizes)
        for j in range(k)
    ]


def _loss_line(scenario: str, k: int) -> tuple[str, bool]:
    """The loss line, and whether the batch stream must hand out each micro-batch's share."""
    if k == 1:
        return code("loss", 1), False
    even = [share * k == 1 for share in _shares(scenario, k)]
    if all(even):
        return code("loss", k), False
    # Uneven splits weigh each part by its share, as the Lab does. Where a split is even the
    # Lab divides by k; with k a power of two, * (1/k) is the same float, forward and backward
    if k & (k - 1) == 0 or not any(even):
        return "loss = loss_fn(out, y) * share  # share = |B_j| / n of its batch", True
    return f"loss = loss_fn(out, y) / {k} if share * {k} == 1 else loss_fn(out, y) * share", True


def _optimizer(spec: dict[str, Any], lr: float) -> tuple[str, str]:
    """The optimizer's constructor line, and a few words for the header."""
    wd = _num(spec.get("weight_decay", 0.0))
    if spec.get("kind", "sgd") == "adam":
        b1, b2 = (_num(b) for b in spec.get("betas", (0.9, 0.999)))
        return (
            f"optimizer = torch.optim.Adam(model.parameters(), lr={_num(lr)}, "
            f"betas=({b1}, {b2}), weight_decay={wd})",
            f"Adam (betas ({b1}, {b2}), weight_decay {wd})",
        )
    if spec.get("kind", "sgd") != "sgd":
        raise ValueError(f"unknown optimizer kind {spec.get('kind')!r}")
    momentum = _num(spec.get("momentum", 0.0))
    return (
        f"optimizer = torch.optim.SGD(model.parameters(), lr={_num(lr)}, "
        f"momentum={momentum}, weight_decay={wd})",
        f"SGD (momentum {momentum}, weight_decay {wd})",
    )


def _data(
    scenario: str, seed: int, options: dict[str, Any], names: tuple[str, str]
) -> tuple[list[str], bool]:
    """Model, loss function and data; and whether the data come as a stream of batches.

    ``names`` name the full-batch tensors: ("X", "y") when they are the batch itself,
    ("X_train", "y_train") when micro-batches are cut from them.
    """
    xn, yn = names
    if scenario == "neuron":
        xs = [list(x) for x in scenarios.NEURON_X]
        ys = [list(y) for y in scenarios.NEURON_Y]
        return [
            f"{xn} = torch.tensor({xs})",
            f"{yn} = torch.tensor({ys})",
            "model = nn.Linear(1, 1)",
            "with torch.no_grad():  # the worked example starts at w = b = 0",
            "    model.weight.zero_()",
            "    model.bias.zero_()",
            "loss_fn = nn.MSELoss()",
        ], False
    if scenario == "parabola":
        h = options.get("curvature", scenarios.PARABOLA_CURVATURE)
        target = options.get("theta_star", scenarios.PARABOLA_TARGET)
        return [
            f"h, theta_star = {_num(h)}, {_num(target)}  # curvature and minimum",
            f"{xn} = torch.ones(1, dtype=torch.float64)",
            f"{yn} = torch.tensor([theta_star], dtype=torch.float64)",
            "",
            "",
            "class Parabola(nn.Module):",
            '    """One parameter theta from 0; the output is theta itself (x = 1)."""',
            "",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.theta = nn.Parameter(torch.zeros(1, dtype=torch.float64))",
            "",
            "    def forward(self, x):",
            "        return x * self.theta",
            "",
            "",
            "def loss_fn(out, y):",
            '    """L = h/2 * (out - y)^2: a parabola of curvature h with its minimum at y."""',
            "    return h / 2 * ((out - y) ** 2).sum()",
            "",
            "",
            "model = Parabola()",
        ], False
    if scenario == "moons":
        size = scenarios.MOONS_BATCH
        return [
            f"seed = {seed}",
            "x, labels = make_moons(n_samples=200, noise=0.2, random_state=seed)",
            "x_train, _, labels_train, _ = train_test_split(",
            "    x, labels, test_size=0.25, stratify=labels, random_state=seed",
            ")",
            "X_train, y_train = torch.tensor(x_train), torch.tensor(labels_train)",
            "torch.manual_seed(seed)",
            "model = nn.Sequential(",
            "    nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)",
            ").double()",
            "loss_fn = nn.CrossEntropyLoss()",
            "",
            "",
            "def batches():",
            f'    """Batches of {size} in a fresh order each epoch (one permutation per epoch)."""',
            "    rng = np.random.default_rng(seed)",
            "    n = len(y_train)",
            "    while True:",
            "        order = rng.permutation(n)",
            f"        for start in range(0, n, {size}):",
            f"            idx = torch.from_numpy(order[start : start + {size}])",
            "            yield X_train[idx], y_train[idx]",
        ], True
    raise ValueError(f"unknown scenario {scenario!r}")


def _session(setup: Setup) -> Session:
    for key, default in NEW_SETUP.items():
        if setup.get(key, default) != default:
            raise Unsupported(
                f"the export cannot write a session created with {key} = {setup[key]!r} yet"
            )
    scenario, seed = setup.get("scenario"), int(setup.get("seed", 0))
    if scenario not in scenarios.SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    k = int(setup.get("accumulate", 1))
    if k < 1:
        raise ValueError(f"accumulate must be 1 or more, not {k}")
    # only the parabola's two numbers, as floats: nothing else of the log reaches the code
    options = {
        key: float(value)
        for key, value in dict(setup.get("options") or {}).items()
        if key in ("curvature", "theta_star")
    }
    lr = float(setup["lr"])
    max_norm = float(setup.get("max_norm", 1.0))
    if not max_norm > 0:
        raise ValueError(f"max_norm must be above 0, not {max_norm}")
    spec = dict(setup.get("optimizer") or {"kind": "sgd"})
    info = scenarios.info(scenario)
    model, streamed = _data(
        scenario, seed, options, ("X", "y") if k == 1 else ("X_train", "y_train")
    )
    loss, with_share = _loss_line(scenario, k)
    make_optimizer, optimizer_words = _optimizer(spec, lr)
    imports = ["import json", "import math", ""]
    if scenario == "moons":
        imports += ["import numpy as np"]
    imports += ["import torch"]
    if scenario == "moons":
        imports += [
            "from sklearn.datasets import make_moons",
            "from sklearn.model_selection import train_test_split",
        ]
    imports += ["from torch import nn", ""]
    lines = [*imports, *model]
    draw: tuple[str, ...] = ()
    if k > 1:
        if not streamed:  # the full batch, every time: the stream the micro-batches split
            lines += [
                "",
                "",
                "def batches():",
                '    """The full batch, every time."""',
                "    while True:",
                "        yield X_train, y_train",
            ]
        share = ", len(yj) / len(y)" if with_share else ""
        lines += [
            "",
            "",
            "def micro_batches(k):",
            f'    """Each batch split into k micro-batches{", with its share" * with_share}."""',
            "    for X, y in batches():",
            "        for Xj, yj in zip(X.tensor_split(k), y.tensor_split(k)):",
            f"            yield Xj, yj{share}",
            "",
            "",
            f"data = micro_batches({k})",
        ]
        names = "X, y, share" if with_share else "X, y"
        draw = (f"{names} = next(data)  # the next micro-batch",)
    elif streamed:
        lines += ["", "", "data = batches()"]
        draw = ("X, y = next(data)  # the next batch",)
    lines.append(make_optimizer)
    program = ", ".join(_program(setup.get("program") or [], "setup"))
    words = [
        f"Scenario {scenario}: {info.description}",
        f"Seed {seed}, lr {_num(lr)}, {optimizer_words}, accumulate {k}"
        + "".join(f", {key} {_num(value)}" for key, value in options.items())
        + ".",
        f"Loop program at the start: {program}.",
    ]
    title = f"Loop Stepper session: {scenario}"
    forward = (*draw, code("forward"))
    return Session(tuple(lines), forward, loss, title, tuple(words), max_norm)


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


def _line(session: Session, entry: str) -> tuple[str, ...]:
    name = ENTRIES[entry][0]
    if name == "forward":
        return session.forward
    if name == "loss":
        return (session.loss,)
    if name == "clip_grad_norm":
        return (code(entry, max_norm=session.max_norm),)
    return (code(entry),)


def _failed(session: Session, entry: str, state: _State, error: str) -> tuple[str, ...]:
    name = ENTRIES[entry][0]
    lines = _line(session, entry)
    missing = (name == "loss" and not state.out) or (name in USES_LOSS and not state.loss)
    if missing or (name in REFUSED and error == REFUSED[name][1]):
        return (
            f"# the Lab refused: {REFUSED[name][0]} (in plain Python, a NameError)",
            *(f"# {line}" for line in lines),
            f"print('refused:', {error!r})",
        )
    body = [INDENT + line for line in lines]
    if name != "backward":
        return ("try:", *body, "except RuntimeError as error:", INDENT + "print(error)")
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


def _program(program: list[Any], where: str) -> list[str]:
    """A program's entries, each one of ENTRIES (the comment that shows it is code too)."""
    unknown = [e for e in program if e not in ENTRIES]
    if unknown:
        raise ValueError(f"{where}: unknown program entries {unknown!r}")
    return [str(e) for e in program]


def _units(session: Session, events: list[Event], state: _State) -> list[Unit]:
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
            name = ENTRIES[entry][0]
            state.lines += 1
            if event.get("ok", True):
                if (name == "loss" and not state.out) or (name in USES_LOSS and not state.loss):
                    raise ValueError(f"event {number}: {entry} ran before its input existed")
                units.append(Unit(_line(session, entry)))
                state.out |= name == "forward"
                state.loss |= name == "loss"
                state.forwards += name == "forward"
                state.logged |= name.startswith("log_")
            else:
                state.failed += 1
                units.append(Unit(_failed(session, entry, state, str(event.get("error", "")))))
        elif op == "lr":
            lr = _num(event["lr"])
            units.append(Unit(("for group in optimizer.param_groups:", f'    group["lr"] = {lr}')))
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
        else:
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


def _result(loss: bool) -> list[str]:
    """The final line of output: the four stores' numbers as exact JSON."""
    return [
        "def plain(x):",
        '    """JSON has no NaN or infinities: spell them as strings, as the Lab\'s API does."""',
        "    if isinstance(x, list):",
        "        return [plain(v) for v in x]",
        "    if isinstance(x, float) and not math.isfinite(x):",
        '        return "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"',
        "    return x",
        "",
        "",
        "params = [",
        "    {",
        '        "name": name,',
        '        "value": plain(p.detach().tolist()),',
        '        "grad": None if p.grad is None else plain(p.grad.tolist()),',
        "    }",
        "    for name, p in model.named_parameters()",
        "]",
        "last_loss = " + ("plain(loss.item())" if loss else "None  # no loss line ran"),
        'print(json.dumps({"params": params, "loss": last_loss}, allow_nan=False))',
    ]


def _build(setup: Setup, events: list[Event]) -> tuple[Session, list[Piece], _State]:
    """Raises ValueError for a log that does not fit the format (or could not have run)."""
    try:
        session = _session(setup)
        state = _State()
        pieces = _fold(_units(session, list(events), state))
        if state.logged:
            session = replace(session, setup=(*session.setup, "running_loss = 0.0"))
    except Unsupported:
        raise
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a session log: {error!r}") from error
    return session, pieces, state


def _summary(session: Session, pieces: list[Piece], state: _State) -> list[str]:
    """What the session was, a paragraph each."""
    loops = sum(isinstance(p, Loop) for p in pieces)
    folded = f"; repeats are folded into {loops} for loop(s)" if loops else ""
    return [
        *session.summary,
        f"The session ran {state.lines} lines ({state.forwards} forward passes, "
        f"{state.failed} failed){folded}.",
        "The last line printed is JSON: every parameter's value and .grad and the last loss, "
        'as exact floats (non-finite ones as "NaN", "Infinity", "-Infinity").',
    ]


# -- the two formats --------------------------------------------------------------


def script(setup: Setup, events: list[Event]) -> str:
    """A standalone Python script that runs the session again in plain PyTorch."""
    session, pieces, state = _build(setup, events)
    header = [f"# {session.title}, exported as plain PyTorch.", "#"]
    for paragraph in _summary(session, pieces, state):
        wrapped = textwrap.wrap(paragraph, 90, subsequent_indent="  ", break_on_hyphens=False)
        header += [f"# {line}" for line in wrapped]
    body: list[str] = []
    for piece in pieces:
        body += _render(piece)
    lines = [*header, "", *session.setup, "", "# -- the session, line by line --", "", *body]
    lines += ["", "", "# -- where it ended --", *_result(state.loss)]
    return "\n".join(lines) + "\n"


def _cell(index: int, kind: str, lines: list[str]) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": kind,
        "id": f"cell-{index}",
        "metadata": {},
        "source": "\n".join(lines),
    }
    if kind == "code":
        cell |= {"execution_count": None, "outputs": []}
    return cell


def notebook(setup: Setup, events: list[Event]) -> dict[str, Any]:
    """The same as a Jupyter notebook (nbformat 4): title, setup, one cell per line or loop."""
    session, pieces, state = _build(setup, events)
    title = [f"# {session.title}"]
    for paragraph in _summary(session, pieces, state):
        title += ["", paragraph]
    cells = [_cell(0, "markdown", title), _cell(1, "code", list(session.setup))]
    for piece in pieces:
        if isinstance(piece, Unit) and piece.markdown:
            cells.append(_cell(len(cells), "markdown", [piece.markdown]))
        else:
            cells.append(_cell(len(cells), "code", _render(piece)))
    cells.append(_cell(len(cells), "code", _result(state.loss)))
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "cells": cells,
    }
