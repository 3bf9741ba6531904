"""The doctor over a data-parallel job: one report for all its ranks.

``loop-stepper doctor --nproc-per-node N [--master-addr A] [--master-port P] train.py [-- ARGS]``
launches the job as ``torchrun`` would (``python -m torch.distributed.run``, each rank running
``loop-stepper doctor``), watches the ranks' beats for a hang (``heartbeat.py``), and when the
job ends prints one report (``job.py``): each diagnosis with the ranks it showed on, exit 0 / 1
/ 2 as for one process, the launcher's own error output only when a rank failed. Under the
user's own ``torchrun … -m loop_stepper doctor train.py`` each rank writes its report and rank 0
prints the job's (waiting for the others' reports up to ``WAIT`` seconds) and judges a hang.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, NoReturn

from loop_stepper.doctor import heartbeat, job, ranks, where
from loop_stepper.doctor.bugs import NAMED_FAILURES
from loop_stepper.doctor.heartbeat import Beat

WAIT = 120.0  # seconds rank 0 waits for the other ranks' reports after its own end
TIMEOUT = 120.0  # seconds without a rank moving, one waiting on the others: a hang


def launch(
    nproc: int,
    target: list[str],
    options: list[str],
    master_addr: str,
    master_port: int | None,
    timeout: float,
    json_path: str | None,
) -> int:
    """Run the job (``target``: ``SCRIPT`` or ``-m MODULE``, then ``-- ARGS``) on ``nproc``
    ranks; print its one report; its exit code."""
    folder = Path(tempfile.mkdtemp(prefix="loop-stepper-job-"))
    port = master_port or _free_port(master_addr)
    command = [
        sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
        f"--master-addr={master_addr}", f"--master-port={port}",
        "-m", "loop_stepper", "doctor", *options, *target,
    ]  # fmt: skip
    env = {**os.environ, job.LAUNCHED: str(folder)}
    process = subprocess.Popen(command, env=env, start_new_session=True)
    hang = None
    try:
        while process.poll() is None:
            time.sleep(0.5)
            hang = heartbeat.stalled(folder, nproc, timeout)
            if hang:
                break
    finally:  # a hang, or the launcher stopped (Ctrl-C): no rank is left running
        if process.poll() is None:
            _stop(process, heartbeat.pids(folder, nproc))
    report = job.merged(job.read(folder, nproc), nproc)
    if hang:
        _add_hang(report, hang, heartbeat.beaten(folder, nproc))
    shutil.rmtree(folder, ignore_errors=True)
    _out(report, json_path)
    return code(report, launcher_failed=process.returncode not in (0, None) and not hang)


def report_job(folder: Path, world: int, json_path: str | None) -> int:
    """The report of a job whose ranks wrote theirs to ``folder`` (``mp.spawn``'s workers)."""
    report = job.merged(job.read(folder, world), world)
    shutil.rmtree(folder, ignore_errors=True)
    _out(report, json_path)
    return code(report)


def finish_rank(found: dict[str, Any], json_path: str | None, timeout: float) -> int | None:
    """After this rank's script: its report written for the job; under the user's own torchrun,
    rank 0 prints the job's. The rank's exit code, or None when this is no job's rank."""
    world = ranks.world()
    if world <= 1:
        return None
    me = ranks.rank()
    folder = job.folder()
    job.write(folder, me, found)
    # a failure the job's report names (a collective the others left) is not the launcher's
    # (the doctor's own internal error is the job report's, not the launcher's either)
    error = found.get("error")
    named = found.get("error_code") != 2  # a diagnosis names the failure
    failed = 2 if error is not None and not named and not job.left_alone(error) else 0
    if os.environ.get(job.LAUNCHED) or me != 0:
        return failed  # the launcher (or rank 0) reports
    report = job.merged(job.read(folder, world, wait=WAIT), world)
    _out(report, json_path)
    return code(report)


def leave(code: int) -> NoReturn:
    """A rank's end once its report is written: the script's threads joined and its exit
    functions run as at any exit, then the process leaves without the interpreter's teardown,
    where torch's gloo sometimes aborts ("terminate called without an active exception",
    SIGABRT, in about one job in ten on this torch, with the doctor or without), which
    torchrun would report as a failed rank after a run that succeeded."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def beat(diagnoses: Any, iteration: Any, timeout: float) -> Beat | None:
    """This rank's heartbeat, when it is a job's; rank 0's judges a hang under the user's own
    torchrun."""
    world = ranks.world()
    if world <= 1:
        return None
    me, folder = ranks.rank(), job.folder()
    judge = None
    if me == 0 and not os.environ.get(job.LAUNCHED):

        def judge() -> None:
            hang = heartbeat.stalled(folder, world, timeout)
            if hang:
                report = job.merged(job.read(folder, world), world)
                _add_hang(report, hang, heartbeat.beaten(folder, world))
                _out(report, None)
                sys.stdout.flush()
                os._exit(1)  # torchrun stops the other ranks

    thread = Beat(folder, me, diagnoses, iteration, judge)
    thread.start()
    return thread


def code(report: dict[str, Any], launcher_failed: bool = False) -> int:
    """0 nothing found, 1 diagnoses, 2 a rank failed (unless a diagnosis names its failure),
    the doctor failed, or a rank never reported."""
    named = any(d["bug"] in NAMED_FAILURES for d in report["diagnoses"])
    if report.get("internal_errors"):
        return 2
    if (report.get("errors") or report["missing_ranks"] or launcher_failed) and not named:
        return 2
    return 1 if report["diagnoses"] else 0


def text(report: dict[str, Any], out: IO[str]) -> None:
    for d in report["diagnoses"]:
        print(f"{where.shown(d['file'])}:{d['line']}: {d['bug']} {d['message']}", file=out)
        ranks_ = ", ".join(map(str, d.get("ranks", [])))
        numbers = json.dumps(d["evidence"], default=str)
        print(f"    ranks {ranks_}; iteration {d['iteration']}; numbers: {numbers}", file=out)
    n, steps = len(report["diagnoses"]), report["iterations"]
    found = f"{n} silent bug{'s' * (n != 1)}" if n else "no silent bug"
    ended = " (stopped there)" if report.get("stopped") else ""
    missing = report.get("missing_ranks")
    lost = f"; no report from rank {', '.join(map(str, missing))}" if missing else ""
    internal = report.get("internal_errors")
    if internal:  # its traceback was printed by the rank
        lost += f"; the doctor stopped on rank {', '.join(map(str, internal))} (internal error)"
    print(
        f"Found {found} in {steps} optimizer step{'s' * (steps != 1)}{ended} on "
        f"{report['ranks']} ranks{lost}.",
        file=out,
    )


def _out(report: dict[str, Any], json_path: str | None) -> None:
    if json_path == "-":
        json.dump(report, sys.stdout, indent=2, default=str)
        print()
        return
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2, default=str))
    text(report, sys.stdout)


def _add_hang(report: dict[str, Any], hang: list[Any], told: dict[int, list[Any]]) -> None:
    """A hung job's report: the hang, and what the ranks that never ended had found."""
    known = {(d["bug"], d["file"], d["line"]) for d in report["diagnoses"]}
    for r, diagnoses in sorted(told.items()):
        for d in diagnoses:
            key = (d["bug"], d["file"], d["line"])
            if key not in known:
                known.add(key)
                report["diagnoses"].append({**d, "ranks": [r]})
    report["diagnoses"] = hang + report["diagnoses"]
    report["missing_ranks"] = []
    steps = max((d.get("iteration", 1) for d in hang), default=1) - 1
    report["iterations"] = max(report["iterations"], steps)


def _stop(process: subprocess.Popen[bytes], ranks: list[int]) -> None:
    """The job's processes stopped: torchrun's group and each rank (torchrun starts its ranks
    in sessions of their own); stuck, nothing is left to finish cleanly."""
    for pid in ranks:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _free_port(addr: str) -> int:
    with socket.socket() as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])
