"""The doctor against the plain loop, one command: ``python bench/doctor.py`` (~2-3 min;
``--quick`` ~20 s).

Issue 37's benchmark, in one run of this process (torch on one thread, ``torch.set_num_threads
(1)``, so the machine's other core does not blur the ratios):

1. ``watch()``'s overhead: the same training loop run plainly and inside ``with
   loop_stepper.watch()`` (the model and optimizer made before, as in watch's own example), on
   a ~1M-parameter MLP (784-1024-256-10, SGD with momentum, batches of 64 of synthetic data)
   and the digits CNN (``support.digits.cnn``: bench/models.py's, on ``load_digits``
   standardized, SGD, batches of 64). Plain and watched runs alternate, the pair's order
   swapped each round (after one warm-up pair), so the machine's noise falls on both; each
   round gives a ratio (watched ÷ plain): their median, their spread (min-max and the
   quartiles), the median milliseconds per iteration both ways, and the ratio by this
   process's CPU time (which a shared machine's other work hardly blurs). Each round asserts
   that the final parameters are bit for bit the same both ways (same seeds) and that the
   doctor named nothing (the loops are correct).
2. ``loop-stepper doctor``'s start-up: the venv's ``loop-stepper doctor trivial.py`` (one
   ``nn.Linear``, one step) against ``python trivial.py``, alternating, wall time of each
   process: the medians in seconds and the median of the pairs' ratios (and by CPU time).

Prints one Markdown table (and the load average: the machine is shared); the target (≤ 1.05 x,
the median overhead TrainCheck reports) is asserted nowhere: the numbers go in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from torch import nn  # noqa: E402

import loop_stepper  # noqa: E402
from support.digits import cnn  # noqa: E402
from support.table import markdown  # noqa: E402

TARGET = 1.05  # TrainCheck's median overhead (OSDI 2025)
BATCH = 64
TRIVIAL = """import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.ones(4, 2)).pow(2).mean()
optimizer.zero_grad()
loss.backward()
optimizer.step()
"""


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    optimizer: Callable[[nn.Module], torch.optim.Optimizer]
    x: torch.Tensor
    y: torch.Tensor


def mlp_case() -> Case:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH * 16, 784, generator=g)
    y = torch.randint(0, 10, (BATCH * 16,), generator=g)
    return Case(
        "MLP 784-1024-256-10, SGD momentum 0.9, synthetic",
        lambda: nn.Sequential(
            nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 10)
        ),
        lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9),
        x,
        y,
    )


def cnn_case() -> Case:
    """bench/models.py's digits CNN on its data: the training split, standardized."""
    x, y = load_digits(return_X_y=True)
    x_train, _, y_train, _ = train_test_split(x, y, test_size=0.25, stratify=y, random_state=0)
    mean, std = x_train.mean(0), x_train.std(0)
    return Case(
        "digits CNN (Conv2d 8 x 3 x 3, MaxPool, Linear), SGD",
        lambda: nn.Sequential(*cnn()),
        lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
        torch.tensor((x_train - mean) / np.where(std == 0, 1, std)).float(),
        torch.tensor(y_train),
    )


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    iterations: int,
) -> None:
    """The loop as a user writes it: shuffled batches, forward, loss, zero_grad, backward,
    step."""
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(2)
    done = 0
    while done < iterations:
        order = torch.randperm(len(y), generator=g)
        for k in range(0, len(y) - BATCH + 1, BATCH):
            if done == iterations:
                break
            idx = order[k : k + BATCH]
            out = model(x[idx])
            loss = loss_fn(out, y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1


@dataclass
class Run:
    seconds: float  # wall
    cpu: float  # this process's CPU seconds
    params: list[torch.Tensor]  # the final parameters


def once(case: Case, iterations: int, watched: bool) -> Run:
    """One run: its times (the loop, and under ``watch`` the block with its hooks' install and
    removal) and the final parameters."""
    torch.manual_seed(0)
    model = case.make()
    optimizer = case.optimizer(model)
    gc.collect()
    if watched:
        t0, c0 = time.perf_counter(), time.process_time()
        with loop_stepper.watch() as doctor:
            train(model, optimizer, case.x, case.y, iterations)
        t1, c1 = time.perf_counter(), time.process_time()
        assert not doctor.diagnoses, doctor.diagnoses  # a correct loop: nothing to name
    else:
        t0, c0 = time.perf_counter(), time.process_time()
        train(model, optimizer, case.x, case.y, iterations)
        t1, c1 = time.perf_counter(), time.process_time()
    return Run(t1 - t0, c1 - c0, [p.detach().clone() for p in model.parameters()])


def spread(ratios: list[float]) -> str:
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return f"{min(ratios):.3f}-{max(ratios):.3f} (IQR {q1:.3f}-{q3:.3f})"


def by_cpu(ratios: list[float]) -> str:
    """The median of the rounds' CPU-time ratios and their quartiles: a busy machine's other
    work lengthens the wall time of either run, hardly its CPU time."""
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return f"{statistics.median(ratios):.3f} x (IQR {q1:.3f}-{q3:.3f})"


def overhead(case: Case, iterations: int, rounds: int) -> tuple[str, ...]:
    once(case, max(1, iterations // 10), False)  # warm-up: kernels, allocator, lazy imports
    once(case, max(1, iterations // 10), True)
    plain: list[Run] = []
    watched: list[Run] = []
    identical = 0
    for r in range(rounds):
        first = bool(r % 2)  # the pair's order swapped each round
        a = once(case, iterations, first)
        b = once(case, iterations, not first)
        p, w = (b, a) if first else (a, b)
        same = all(torch.equal(u, v) for u, v in zip(p.params, w.params, strict=True))
        assert same, f"{case.name}: watch() changed the numbers"
        identical += same
        plain.append(p)
        watched.append(w)
    ratios = [w.seconds / p.seconds for w, p in zip(watched, plain, strict=True)]
    cpu = [w.cpu / p.cpu for w, p in zip(watched, plain, strict=True)]
    ratio = round(statistics.median(ratios), 3)
    params = sum(p.numel() for p in case.make().parameters())
    return (
        f"{case.name}, {params:,} params: ms per iteration "
        f"({iterations} iterations x {rounds} rounds)",
        f"{statistics.median(r.seconds for r in plain) / iterations * 1e3:.3f}",
        f"{statistics.median(r.seconds for r in watched) / iterations * 1e3:.3f}",
        f"{ratio:.3f} x",
        spread(ratios),
        by_cpu(cpu),
        f"yes, {identical} of {rounds}",
        f"≤ {TARGET} x",
        "yes" if ratio <= TARGET else "**no**",
    )


def startup(runs: int) -> tuple[str, ...]:
    """``loop-stepper doctor trivial.py`` ÷ ``python trivial.py``, wall time of each process
    (and its CPU time), alternating."""
    cli = Path(sys.executable).parent / "loop-stepper"
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "trivial.py"
        script.write_text(TRIVIAL)
        commands = {
            "plain": [sys.executable, str(script)],
            "doctor": [str(cli), "doctor", str(script)],
        }

        def wall(which: str) -> tuple[float, float]:
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(commands[which], capture_output=True, text=True, cwd=folder)
            seconds = time.perf_counter() - t0
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            assert done.returncode == 0, (which, done.returncode, done.stdout, done.stderr)
            cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
            return seconds, cpu

        wall("plain")  # warm-up: the page cache holds torch's files
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "doctor": []}
        for r in range(runs):
            for which in ("doctor", "plain") if r % 2 else ("plain", "doctor"):
                times[which].append(wall(which))
    pairs = list(zip(times["doctor"], times["plain"], strict=True))
    ratios = [d[0] / p[0] for d, p in pairs]
    cpu = [d[1] / p[1] for d, p in pairs]
    plain = statistics.median(t for t, _ in times["plain"])
    doctor = statistics.median(t for t, _ in times["doctor"])
    return (
        f"start-up: `loop-stepper doctor trivial.py` vs `python trivial.py`, seconds "
        f"(one step; median of {runs} pairs)",
        f"{plain:.2f}",
        f"{doctor:.2f} ({doctor - plain:+.2f})",
        f"{statistics.median(ratios):.3f} x",
        spread(ratios),
        by_cpu(cpu),
        "",
        "",
        "",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, ~20 s")
    parser.add_argument("--rounds", type=int, help="pairs per loop (15; --quick 3)")
    parser.add_argument("--mlp-iterations", type=int, help="per run (150; --quick 20)")
    parser.add_argument("--cnn-iterations", type=int, help="per run (1000; --quick 150)")
    parser.add_argument("--runs", type=int, help="start-up pairs (7; --quick 2)")
    args = parser.parse_args()
    quick = args.quick
    rounds = args.rounds or (3 if quick else 15)
    mlp_iterations = args.mlp_iterations or (20 if quick else 150)
    cnn_iterations = args.cnn_iterations or (150 if quick else 1000)
    runs = args.runs or (2 if quick else 7)
    torch.set_num_threads(1)  # one core: the machine's other core does not blur the ratio
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows = [
        overhead(mlp_case(), mlp_iterations, rounds),
        overhead(cnn_case(), cnn_iterations, rounds),
        startup(runs),
    ]
    load_after = os.getloadavg()
    head = (
        "measure",
        "plain",
        "under the doctor",
        "ratio (median)",
        "spread of the ratios",
        "ratio by CPU time",
        "bit-identical",
        "target",
        "met",
    )
    print(markdown(head, rows))
    print(
        f"\n{os.cpu_count()} cores, Python {sys.version.split()[0]}, torch {torch.__version__}, "
        f"torch.set_num_threads(1); {time.perf_counter() - t0:.0f} s. Load average before "
        f"{load_before[0]:.1f}, after {load_after[0]:.1f}."
    )


if __name__ == "__main__":
    main()
