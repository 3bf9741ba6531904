"""``record`` against the plain loop, one command: ``python bench/record.py``.

Four of the user's own loops as a notebook holds them: a cell before (the data, the model, the
optimizer) run plainly, then the cell recorded, run plainly (``exec``) and under ``record`` (to
the end), in this process after a warm-up (the first optimizer's import of torch._dynamo is
paid before): the worked example (``nn.Linear(1, 1)``, SGD); makemore part 2's loop (five bare
tensors in a list, tiny statements, ``p.data += -lr * p.grad``; issue 46's ≤ 3 x); a CNN (two
convolutions, SGD with momentum; issue 46's ≤ 1.5 x); a ~1M-parameter MLP (784-1024-256-10,
SGD with momentum, batches of 64). For each: the recorded cell's time ÷ the plain cell's (the
medians of this process's CPU time, which the machine's other work hardly blurs), and the bytes
per moment of the trace: ``to_json`` and the widget's packed form. Prints a table; nothing is
asserted. One thread for torch (``torch.set_num_threads(1)``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from loop_stepper.recorder import record  # noqa: E402
from loop_stepper.recorder.trace import plain as plain_json  # noqa: E402

WORKED = """
import torch
from torch import nn
x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
# the cell recorded
for _ in range(ITERATIONS):
    out = model(x)
    loss = loss_fn(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

MAKEMORE = """
import torch
import torch.nn.functional as F
g = torch.Generator().manual_seed(2147483647)
words = ["".join(chr(97 + int(c)) for c in torch.randint(0, 26, (int(n),), generator=g))
         for n in torch.randint(3, 9, (2000,), generator=g)]
stoi = {chr(97 + i): i + 1 for i in range(26)}
stoi["."] = 0
X, Y = [], []
for w in words:
    context = [0, 0, 0]
    for ch in w + ".":
        X.append(context)
        Y.append(stoi[ch])
        context = context[1:] + [stoi[ch]]
Xtr, Ytr = torch.tensor(X), torch.tensor(Y)
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g)
b1 = torch.randn(200, generator=g)
W2 = torch.randn((200, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
# the cell recorded
for p in parameters:
    p.requires_grad = True
for i in range(ITERATIONS):
    ix = torch.randint(0, Xtr.shape[0], (32,))
    emb = C[Xtr[ix]]
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Ytr[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 100000 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
"""

CNN = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(64, 1, 28, 28)
y = torch.randint(0, 10, (64,))
# the cell recorded
for _ in range(ITERATIONS):
    out = model(x)
    loss = loss_fn(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

BIG = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(),
                      nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(64, 784)
y = torch.randint(0, 10, (64,))
# the cell recorded
for _ in range(ITERATIONS):
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def measure(source: str, rounds: int) -> dict[str, Any]:
    """The cell after ``# the cell recorded`` run plainly and recorded, each after the cell
    before it (the data, the model) ran plainly in a fresh namespace, as in a notebook."""
    setup, _, cell = source.partition("# the cell recorded\n")
    plain, recorded = [], []
    trace = None
    for _ in range(rounds):
        space: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(setup, "<setup>", "exec"), space)
        t0 = time.process_time()
        exec(compile(cell, "<plain>", "exec"), space)
        plain.append(time.process_time() - t0)
        space = {"__name__": "__main__"}
        exec(compile(setup, "<setup>", "exec"), space)
        t0 = time.process_time()
        trace = record(cell, space, iterations=None)
        recorded.append(time.process_time() - t0)
    assert trace is not None and trace.error is None and trace.stopped is None, trace
    n = len(trace.moments)
    whole = len(trace.to_json())
    packed = len(json.dumps(plain_json(trace.packed())))
    return {
        "moments": n,
        "plain_ms": statistics.median(plain) * 1e3,
        "record_ms": statistics.median(recorded) * 1e3,
        "ratio": statistics.median(recorded) / statistics.median(plain),
        "whole": whole / n,
        "packed": packed / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core: the machine's other core does not blur the ratio
    record(
        WORKED.replace("ITERATIONS", "1").replace("# the cell recorded\n", "")
    )  # warm-up: torch's lazy imports, kernels
    rows = [
        ("worked example", "2 params", WORKED),
        ("makemore part 2 (tiny statements, .data updates)", "11,897 params", MAKEMORE),
        ("CNN 2 conv + linear, SGD momentum", "20,490 params", CNN),
        ("MLP 784-1024-256-10, SGD momentum", "1,068,810 params", BIG),
    ]
    print(f"{args.iterations} iterations each, median of {args.rounds} runs, one process\n")
    print("| loop | size | moments | plain ms | record ms | record ÷ plain | "
          "bytes/moment to_json | bytes/moment packed |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, size, source in rows:
        m = measure(source.replace("ITERATIONS", str(args.iterations)), args.rounds)
        print(f"| {name} | {size} | {m['moments']} | {m['plain_ms']:.1f} | {m['record_ms']:.1f}"
              f" | {m['ratio']:.1f} x | {m['whole']:,.0f} | {m['packed']:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
