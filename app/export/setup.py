"""The exported script's setup: imports, model, data, optimizer, and how its lines are written
(the ``Session``); a log the export cannot write yet is ``Unsupported``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from app.engine import scenarios
from app.engine.entries import ENTRIES
from app.engine.program import code
from app.export import spec as spec_code
from app.spec.tables import TABLES

SetupFields = dict[str, Any]

AUTOCAST = ("bfloat16", "float16")


class Unsupported(ValueError):
    """A real session log the export cannot write as a script yet (the API answers 409)."""


@dataclass(frozen=True)
class ScriptPlan:
    """What a script needs besides the events: its setup code and how a line is written."""

    setup: tuple[str, ...]
    forward: tuple[str, ...]  # the forward line, with the batch draw before it if any
    loss: str
    title: str
    summary: tuple[str, ...]
    max_norm: float = 1.0
    amp: str | None = None  # forward and loss under autocast in this dtype
    scaler: bool = False  # backward and step through a GradScaler
    fresh_optimizer: str = ""  # a new optimizer as the session made it (resume)


def _num(value: float) -> str:
    """A float literal that reads back exactly (repr round-trips; inf and NaN need math)."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def _sizes(scenario: str) -> set[int]:
    """The sizes a scenario's batch has."""
    info = scenarios.info(scenario)
    return {info.batch_size, info.train_size % info.batch_size} - {0}


def _shares(sizes: set[int], k: int) -> list[float]:
    """Every micro-batch's share |B_j| / n of its batch, as the Lab computes it."""
    return [
        (n // k + (1 if j < n % k else 0)) / n  # tensor_split: the first n % k parts one longer
        for n in sorted(sizes)
        for j in range(k)
    ]


def _loss_line(sizes: set[int], k: int) -> tuple[str, bool]:
    """The loss line, and whether the batch stream must hand out each micro-batch's share."""
    if k == 1:
        return code("loss", 1), False
    even = [share * k == 1 for share in _shares(sizes, k)]
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


def _moons_model(dropout: float, batchnorm: bool, dtype: str) -> list[str]:
    """``nn.Sequential`` as ``scenarios.moons_layers`` builds it: BatchNorm1d after each hidden
    Linear, Dropout(p) after each hidden ReLU (dropout then draws from torch's generator, seeded
    right before the model is built, as the Lab's session does)."""
    end = ").double()" if dtype == "float64" else ")"
    if dropout == 0 and not batchnorm:
        return [
            "model = nn.Sequential(",
            "    nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)",
            end,
        ]
    hidden = []
    for n_in in (2, 16):
        layer = [f"nn.Linear({n_in}, 16)"] + ["nn.BatchNorm1d(16)"] * batchnorm + ["nn.ReLU()"]
        layer += [f"nn.Dropout({_num(dropout)})"] * (dropout > 0)
        hidden.append("    " + ", ".join(layer) + ",")
    return ["model = nn.Sequential(", *hidden, "    nn.Linear(16, 2),", end]


def _data(
    scenario: str,
    seed: int,
    options: dict[str, Any],
    names: tuple[str, str],
    dtype: str,
    moons: tuple[float, bool] = (0.0, False),
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
            *(
                ["X_train = X_train.float()  # the model and inputs in float32"]
                * (dtype == "float32")
            ),
            "torch.manual_seed(seed)",
            *_moons_model(*moons, dtype),
            "loss_fn = nn.CrossEntropyLoss()",
            "",
            "",
            *spec_code.shuffled_batches(size),
        ], True
    raise ValueError(f"unknown scenario {scenario!r}")


def _spec_code(spec: dict[str, Any], seed: int, dtype: str) -> spec_code.SpecCode:
    """A spec's lines; its CSV's text from the engine's cache (the session was just read)."""
    data = spec.get("data") or {}
    text = None
    if data.get("kind") == "csv":
        text = TABLES.text(str(data.get("dataset")))
        if text is None:
            raise Unsupported("the session's CSV file is not at hand: export again")
    return spec_code.code(spec, seed, dtype, text)


def _numerics(threads: int) -> list[str]:
    """The process-wide settings that changed a session's numbers when changed (tried on real
    sessions, see docs), set as the server had them: whatever ran before in a notebook's kernel
    or a student's machine chose, the script computes as the session did."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a whole number of 1 or more, not {threads!r}")
    return [
        f"torch.set_num_threads({threads})  # the session's count: parallel sums' last digits "
        "depend on it",
        "torch.set_default_dtype(torch.float32)  # the session's: new layers draw their "
        "weights in it",
        "torch.set_flush_denormal(False)  # the session's: tiny (subnormal) numbers are kept, "
        "not made 0",
    ]


def _session(setup: SetupFields, threads: int) -> ScriptPlan:
    scenario, seed = str(setup.get("scenario")), int(setup.get("seed", 0))
    dropout, batchnorm = float(setup.get("dropout", 0.0)), bool(setup.get("batchnorm", False))
    softmax = bool(setup.get("softmax_before_loss", False))
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), not {dropout}")
    if (dropout, batchnorm, softmax) != (0.0, False, False) and scenario != "moons":
        raise ValueError("dropout, batchnorm, softmax_before_loss: moons only")
    dtype = setup.get("dtype", "float64")
    if dtype not in ("float64", "float32"):
        raise ValueError(f"unknown dtype {dtype!r}")
    amp_setup = setup.get("amp") or {}
    amp = amp_setup.get("dtype")
    if amp is not None and amp not in AUTOCAST:
        raise ValueError(f"unknown amp dtype {amp!r}")
    scaler = amp == "float16" and bool(amp_setup.get("scaler", True))
    custom = scenario == "custom"
    if custom and not isinstance(setup.get("spec"), dict):
        raise ValueError("a custom session's log holds its spec")
    if scenario not in scenarios.SCENARIOS and not custom:
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
    full = ("X", "y") if k == 1 else ("X_train", "y_train")
    if custom:
        made = _spec_code(setup["spec"], seed, dtype)
        model, streamed, sizes = made.lines, made.streamed, set(made.batch_sizes)
        if not streamed and k == 1:
            model.append("X, y = X_train, y_train  # the full batch, every time")
        description = made.words
    else:
        model, streamed = _data(scenario, seed, options, full, dtype, (dropout, batchnorm))
        sizes, description = _sizes(scenario), scenarios.info(scenario).description
    loss, with_share = _loss_line(sizes, k)
    if softmax:  # the bug of the preset, written as the Lab shows it
        loss = loss.replace("loss_fn(out, y)", "loss_fn(out.softmax(dim=1), y)")
    if amp is not None:
        loss = f'with torch.autocast("cpu", dtype=torch.{amp}): ' + loss
    make_optimizer, optimizer_words = _optimizer(spec, lr)
    imports = ["import copy"] * scaler + ["import json", "import math", ""]
    if custom:
        imports = ["import copy"] * scaler + sorted(
            {"import json", "import math", *(i for i in made.imports if i.startswith("import"))}
        )
        imports += ["", "import numpy as np"] if "import numpy as np" not in imports else [""]
    elif scenario == "moons":
        imports += ["import numpy as np"]
    imports += ["import torch"]
    if custom:
        imports += sorted(i for i in made.imports if i.startswith("from"))
    if scenario == "moons":
        imports += [
            "from sklearn.datasets import make_moons",
            "from sklearn.model_selection import train_test_split",
        ]
    imports += ["from torch import nn", ""]
    lines = [*imports, *_numerics(threads), "", *model]
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
    lines += _scheduler(setup.get("scheduler"))
    if scaler:
        lines.append('scaler = torch.amp.GradScaler("cpu")')
    program = ", ".join(_program(setup.get("program") or [], "setup"))
    words = [
        f"Scenario {scenario}: {description}",
        f"Seed {seed}, lr {_num(lr)}, {optimizer_words}, accumulate {k}"
        + "".join(f", {key} {_num(value)}" for key, value in options.items())
        + ".",
        f"Loop program at the start: {program}.",
    ]
    title = f"Loop Stepper session: {scenario}"
    if setup.get("scheduler"):
        words.append(f"Scheduler: {lines[-1 - scaler].removeprefix('scheduler = ')}.")
    if amp is not None:
        with_scaler = "with a GradScaler" if scaler else "without a GradScaler"
        words.append(f"Mixed precision: autocast {amp}" + f", {with_scaler}" * (amp == "float16"))
    if threads > 1:
        words.append(
            f"The session was computed with {threads} intra-op threads (the server's "
            f"LOOP_STEPPER_TORCH_THREADS): this script uses {threads} too, whatever this "
            "machine's core count, since the last digits of parallel sums depend on it."
        )
    forward = (*draw, code("forward", amp=amp))
    fresh = make_optimizer.removeprefix("optimizer = ")
    return ScriptPlan(
        tuple(lines), forward, loss, title, tuple(words), max_norm, amp, scaler, fresh
    )


def _scheduler(spec: dict[str, Any] | None) -> list[str]:
    """The scheduler's constructor line, right after the optimizer (as the Lab builds it)."""
    if not spec:
        return []
    if spec.get("kind") == "step":
        step_size, gamma = int(spec["step_size"]), _num(spec["gamma"])
        return [
            "scheduler = torch.optim.lr_scheduler.StepLR("
            f"optimizer, step_size={step_size}, gamma={gamma})"
        ]
    if spec.get("kind") == "cosine":
        t_max = int(spec["T_max"])
        return [f"scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max={t_max})"]
    raise ValueError(f"unknown scheduler kind {spec.get('kind')!r}")


def _program(program: list[Any], where: str) -> list[str]:
    """A program's entries, each one of ENTRIES (the comment that shows it is code too)."""
    unknown = [e for e in program if e not in ENTRIES]
    if unknown:
        raise ValueError(f"{where}: unknown program entries {unknown!r}")
    return [str(e) for e in program]
