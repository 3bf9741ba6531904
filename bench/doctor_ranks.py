"""The doctor on a data-parallel job: ``python bench/doctor_ranks.py`` (~4 min; ``--rounds``,
``--steps``).

Issue 51's benchmark: a data-parallel loop of 85k parameters (an MLP 128-512-36-10 under
``DistributedDataParallel``, SGD with momentum, a ``DistributedSampler`` over synthetic data)
on two ranks, gloo, one thread each, run as ``torchrun`` runs it and as ``loop-stepper doctor
--nproc-per-node 2`` runs it, alternating (the pair's order swapped each round). Each rank
measures its own CPU time over its training loop (``time.process_time``, the loop only: not
the imports, not the process group's set-up) and writes it down. Printed: the medians of each
rank's loop CPU both ways, their ratio; what the doctor sends between the ranks while they run
(nothing: no collective, no store key) and what it writes per rank (its heartbeat file once a
second, its report at the end), in bytes. Nothing is asserted: the numbers go in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = """\
import json
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
steps = int(sys.argv[1])
X = torch.randn(steps * 64, 128)
y = torch.randint(0, 10, (steps * 64,))
dataset = TensorDataset(X, y)
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
net = nn.Sequential(
    nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 36), nn.ReLU(), nn.Linear(36, 10)
)
model = DDP(net)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
start = time.process_time()
sampler.set_epoch(0)
for xb, yb in loader:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
spent = time.process_time() - start
params = sum(p.numel() for p in net.parameters())
with open(f"{sys.argv[2]}/cpu{rank}.json", "w") as out:
    json.dump({"cpu": spent, "params": params}, out)
dist.destroy_process_group()
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(doctor: bool, steps: int, work: Path) -> tuple[list[float], int, dict[str, int]]:
    loop = work / "loop.py"
    for f in work.glob("cpu*.json"):
        f.unlink()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if doctor:
        command = [sys.executable, "-m", "loop_stepper", "doctor", "--nproc-per-node", "2",
                   "--iterations", str(steps * 2), str(loop),
                   "--", str(steps), str(work)]  # fmt: skip
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                   "--master-addr", "127.0.0.1", f"--master-port={_port()}", str(loop),
                   str(steps), str(work)]  # fmt: skip
    subprocess.run(command, cwd=work, env=env, capture_output=True, check=False, timeout=600)
    found = [json.loads((work / f"cpu{r}.json").read_text()) for r in (0, 1)]
    return [f["cpu"] for f in found], found[0]["params"], {}


def written(work: Path, steps: int) -> dict[str, int]:
    """The bytes the doctor writes per rank: its heartbeat, its report (one job kept)."""
    folder = Path(tempfile.mkdtemp(prefix="loop-stepper-bench-"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LOOP_STEPPER_JOB": str(folder)}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", f"--master-port={_port()}", "-m", "loop_stepper",
               "doctor", str(work / "loop.py"), "--", str(steps), str(work)]  # fmt: skip
    subprocess.run(command, cwd=work, env=env, capture_output=True, check=False, timeout=600)
    beat = (folder / "beat0.json").stat().st_size if (folder / "beat0.json").exists() else 0
    report = (folder / "rank0.json").stat().st_size
    return {"beat": beat, "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps per rank")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="doctor-ranks-"))
    (work / "loop.py").write_text(LOOP)
    cpu: dict[bool, list[float]] = {False: [], True: []}
    params = 0
    for r in range(args.rounds):
        for doctor in (False, True) if r % 2 == 0 else (True, False):
            spent, params, _ = run(doctor, args.steps, work)
            cpu[doctor] += spent
    plain, doctored = statistics.median(cpu[False]), statistics.median(cpu[True])
    files = written(work, args.steps)
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {args.rounds} rounds, "
          f"{args.steps} steps a rank, {params:,} parameters\n")  # fmt: skip
    print("| measure | plain torchrun | under the doctor | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| a rank's loop CPU, s (median of {len(cpu[False])}) | {plain:.3f} | {doctored:.3f} | "
          f"{doctored / plain:.3f} x |")  # fmt: skip
    print("| bytes between the ranks while they run (store, collectives), a step | 0 | 0 | |")
    print(f"| bytes a rank writes: its heartbeat file, once a second | | {files['beat']:,} | |")
    print(f"| bytes a rank writes: its report, at its end | | {files['report']:,} | |")


if __name__ == "__main__":
    main()
