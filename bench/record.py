"""``record`` against the plain loop, one command: ``python bench/record.py``.

Three of the user's own loops, each run plainly (``exec``) and under ``record`` (to the end), in
this process after a warm-up (the first optimizer's import of torch._dynamo is paid before):
the worked example (``nn.Linear(1, 1)``, SGD), moons (a 2-16-16-2 MLP, Adam, a DataLoader of
32) and a ~1M-parameter MLP (784-1024-256-10, SGD with momentum, batches of 64). For each: the
time per moment recorded, ÷ the plain loop's time per statement (the same statements, each a
moment), and the bytes per moment of the trace: whole (``to_json``) and as the widget holds it
(``packed``: what a moment did not change is shared). Prints a table of medians; nothing is
asserted. One thread for torch (``torch.set_num_threads(1)``), both ways.
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

WORKED = """
import torch
from torch import nn
x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
model = nn.Linear(1, 1)
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(ITERATIONS):
    out = model(x)
    loss = loss_fn(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

MOONS = """
import torch
from torch import nn
from sklearn.datasets import make_moons
X, labels = make_moons(n_samples=32 * ITERATIONS, noise=0.2, random_state=0)
data = torch.utils.data.TensorDataset(torch.tensor(X, dtype=torch.float32), torch.tensor(labels))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
for xb, yb in loader:
    out = net(xb)
    loss = loss_fn(out, yb)
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
for _ in range(ITERATIONS):
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def measure(source: str, rounds: int) -> dict[str, Any]:
    plain, recorded = [], []
    trace = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        exec(compile(source, "<plain>", "exec"), {"__name__": "__main__"})
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        trace = record(source, iterations=None)
        recorded.append(time.perf_counter() - t0)
    assert trace is not None and trace.error is None, trace and trace.error
    n = len(trace.moments)
    whole = len(trace.to_json())
    packed = len(json.dumps(trace.packed()))
    per_moment = statistics.median(recorded) / n
    per_statement = statistics.median(plain) / n
    return {
        "moments": n,
        "plain_us": per_statement * 1e6,
        "record_us": per_moment * 1e6,
        "ratio": per_moment / per_statement,
        "whole": whole / n,
        "packed": packed / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core: the machine's other core does not blur the ratio
    record(WORKED.replace("ITERATIONS", "1"))  # warm-up: torch's lazy imports, kernels
    rows = [
        ("worked example", "2 params", WORKED),
        ("moons, Adam, DataLoader", "386 params", MOONS),
        ("MLP 784-1024-256-10", "1,068,810 params", BIG),
    ]
    print(f"{args.iterations} iterations each, median of {args.rounds} runs, one process\n")
    print("| loop | size | moments | plain µs/statement | record µs/moment | ratio | "
          "bytes/moment whole | bytes/moment packed |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, size, source in rows:
        m = measure(source.replace("ITERATIONS", str(args.iterations)), args.rounds)
        print(f"| {name} | {size} | {m['moments']} | {m['plain_us']:.0f} | {m['record_us']:.0f}"
              f" | {m['ratio']:.1f} x | {m['whole']:,.0f} | {m['packed']:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
