"""The doctor over a data-parallel job (issue 51): two ranks, gloo, CPU, as a user runs them.

Each script of ``ranks/bugs`` marks every diagnosis it should get with ``# doctor: <id>
ranks=<r>,…`` on the named line; ``loop-stepper doctor --nproc-per-node 2`` must print one
report with exactly those (each with its ranks) and write one JSON file; each of
``ranks/correct`` is the fix of one of them and gets nothing. Also: the user's own ``torchrun …
-m loop_stepper doctor`` (one report, by rank 0), ``--iterations`` on ranks that step unevenly
(every rank stops at the same backward: no rank left waiting), and a hang reported within its
timeout. Also FSDP (``fully_shard``) and ``accelerate``'s multi-process CPU mode, correct and
with their bugs.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent / "ranks"
BUGS = sorted((HERE / "bugs").glob("[0-9]*.py"))
CORRECT = sorted((HERE / "correct").glob("[0-9]*.py"))
MARK = re.compile(r"#\s*doctor:\s*(\w+)\s+ranks=([\d,]+)\s*$")
COMMAND = Path(sys.executable).parent / "loop-stepper"
TIMEOUT = 10  # seconds without a rank moving: a hang
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}

Found = set[tuple[str, int, tuple[int, ...]]]


def expected(script: Path) -> Found:
    marked: Found = set()
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        match = MARK.search(line)
        if match:
            ranks = tuple(int(r) for r in match.group(2).split(","))
            marked.add((match.group(1), number, ranks))
    return marked


def found(report: dict) -> Found:  # type: ignore[type-arg]
    return {(d["bug"], d["line"], tuple(d["ranks"])) for d in report["diagnoses"]}


def doctor(
    script: Path, tmp_path: Path, *options: str, args: tuple[str, ...] = ()
) -> tuple[int, str, dict, float]:  # type: ignore[type-arg]
    out = tmp_path / "report.json"
    start = time.monotonic()
    done = subprocess.run(
        [str(COMMAND), "doctor", "--nproc-per-node", "2", "--timeout", str(TIMEOUT),
         "--json", str(out), *options, str(script), "--", *args],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    took = time.monotonic() - start
    report = json.loads(out.read_text())  # one valid file for the job
    return done.returncode, done.stdout + done.stderr, report, took


@pytest.mark.parametrize("script", BUGS, ids=[s.name for s in BUGS])
def test_a_bug_of_several_ranks_is_named_at_its_line_with_its_ranks(
    script: Path, tmp_path: Path
) -> None:
    code, said, report, took = doctor(script, tmp_path)
    want = expected(script)
    assert want, f"{script.name} marks no diagnosis"
    assert found(report) == want, said
    assert code == 1, said
    assert report["ranks"] == 2 and report["missing_ranks"] == []
    assert "internal_errors" not in report, said
    assert "ChildFailedError" not in said  # no launcher's traceback for a finding
    assert took < TIMEOUT + 90  # a hang is reported, not waited out


@pytest.mark.parametrize("script", CORRECT, ids=[s.name for s in CORRECT])
def test_a_correct_data_parallel_loop_is_named_nothing(script: Path, tmp_path: Path) -> None:
    code, said, report, _ = doctor(script, tmp_path)
    assert report["diagnoses"] == [], said
    assert "internal_errors" not in report, said
    assert code == 0, said
    assert report["iterations"] == 8  # 128 samples, 2 ranks, batches of 16, 2 epochs


def test_the_report_is_one_for_the_job(tmp_path: Path) -> None:
    script = HERE / "bugs" / "01_no_set_epoch.py"
    _, said, report, _ = doctor(script, tmp_path)
    assert said.count("Found 1 silent bug in 8 optimizer steps on 2 ranks.") == 1
    (d,) = report["diagnoses"]
    assert d["ranks"] == [0, 1] and d["evidence"]["epoch"] == 1
    assert f"{script.name}:20: sampler_without_set_epoch" in said


def test_a_diagnosis_on_some_ranks_says_what_those_ranks_ran_apart(tmp_path: Path) -> None:
    """zero_grad() on rank 0 only: rank 1's skip_zero_grad says so, with rank 1's numbers."""
    script = HERE / "bugs" / "12_zero_grad_on_rank0.py"
    _, said, report, _ = doctor(script, tmp_path)
    (d,) = report["diagnoses"]
    assert d["ranks"] == [1] and d["evidence"]["apart"] == "zero_grad at line 24 ran on rank 0 only"
    held, added, now = (d["evidence"][k] for k in ("held", "added", "now"))
    assert now == pytest.approx([h + a for h, a in zip(held, added, strict=True)], abs=1e-6)
    assert "(zero_grad at line 24 ran on rank 0 only)" in said


def test_the_running_statistics_a_rank_saved_are_its_own(tmp_path: Path) -> None:
    script = HERE / "bugs" / "11_batchnorm_unsynced.py"
    _, said, report, _ = doctor(script, tmp_path)
    (d,) = report["diagnoses"]
    assert "ranks_running_stats_differ" in said
    assert d["evidence"]["what"] == "save" and d["evidence"]["layer"] == "1 (BatchNorm1d)"
    values = dict(v.split(": ") for v in d["evidence"]["values"].split(", "))
    assert set(values) == {"rank 0", "rank 1"} and values["rank 0"] != values["rank 1"]
    saved = torch.load(tmp_path / "model.pt")  # rank 0's own, as the diagnosis says
    assert round(float(saved["1.running_mean"][0]), 6) == float(values["rank 0"])


def test_iterations_stop_every_rank_at_the_same_backward(tmp_path: Path) -> None:
    """Rank 0 steps and rank 1 does not: neither is left waiting for the other."""
    script = HERE / "bugs" / "06_step_on_rank0.py"
    code, said, report, _ = doctor(script, tmp_path, "--iterations", "3")
    assert code == 1, said
    assert report["missing_ranks"] == [] and "errors" not in report, said
    assert report["stopped"] and report["iterations"] == 3  # rank 0's steps
    assert found(report) == expected(script)


def test_under_the_users_own_torchrun_rank_0_prints_the_one_report(tmp_path: Path) -> None:
    script = HERE / "bugs" / "05_loss_divided_by_world_size.py"
    out = tmp_path / "report.json"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-addr", "127.0.0.1", f"--master-port={port}",
         "-m", "loop_stepper", "doctor", "--json", str(out), str(script)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert found(report) == expected(script), done.stdout + done.stderr
    assert done.stdout.count("Found 1 silent bug") == 1  # rank 0's report, the job's
    assert done.returncode != 0  # rank 0's exit 1, as torchrun passes it on


FAULTY = """\
import runpy
import sys

from loop_stepper.doctor import chart


def broken(*args, **kwargs):
    raise RuntimeError("injected into ddp_forward")


chart.Chart.ddp_forward = broken  # the doctor's hook of every DDP forward, on every rank
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_a_fault_in_a_ranks_hook_stops_its_doctor_and_never_the_job(tmp_path: Path) -> None:
    script = HERE / "correct" / "01_set_epoch.py"
    printing = tmp_path / "train.py"
    printing.write_text(
        script.read_text().replace(
            "dist.destroy_process_group()",
            "weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])\n"
            'torch.save(weights, f"weights{dist.get_rank()}.pt")\n'
            "dist.destroy_process_group()",
        )
    )
    faulty = tmp_path / "faulty.py"
    faulty.write_text(FAULTY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plain = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-addr", "127.0.0.1", f"--master-port={port}", str(printing)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    # (a plain job may still abort in gloo's teardown after it saved: torch's, not ours)
    assert all((tmp_path / f"weights{r}.pt").is_file() for r in (0, 1)), plain.stderr
    before = [torch.load(tmp_path / f"weights{r}.pt") for r in (0, 1)]
    for r in (0, 1):
        (tmp_path / f"weights{r}.pt").unlink()
    code, said, report, _ = doctor(faulty, tmp_path, args=(str(printing),))
    after = [torch.load(tmp_path / f"weights{r}.pt") for r in (0, 1)]
    # the job ran to its end on every rank, with the numbers of a plain run, bit for bit
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert code == 2 and sorted(report["internal_errors"]) == ["0", "1"], said
    assert "ddp_forward" in report["internal_errors"]["0"]["hook"]


SPAWNED = """\
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world, port):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    torch.manual_seed(0)
    X, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
    model = DDP(nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[i : i + 16]), y[i : i + 16]) / world
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(train, args=(2, int(sys.argv[1])), nprocs=2)
"""


def test_a_script_that_spawns_its_ranks_is_followed_into_them(tmp_path: Path) -> None:
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "report.json"
    done = subprocess.run(
        [str(COMMAND), "doctor", "--json", str(out), str(script), "--", str(port)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert done.returncode == 1, done.stdout + done.stderr
    assert found(report) == {("loss_divided_by_world_size", 22, (0, 1))}
    assert "Found 1 silent bug in 4 optimizer steps on 2 ranks." in done.stdout


def test_torchrun_itself_is_refused_with_what_to_run(tmp_path: Path) -> None:
    torchrun = Path(sys.executable).parent / "torchrun"
    done = subprocess.run(
        [str(COMMAND), "doctor", str(torchrun), "train.py"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--nproc-per-node N train.py" in done.stderr and "Found" not in done.stdout
