"""A script that starts its ranks itself with ``torch.multiprocessing.spawn`` (``mp.spawn(train,
args=(world,), nprocs=world)``), followed into them: while ``loop-stepper doctor`` runs a
script, ``mp.spawn`` starts each worker through ``_doctored``, which sets the rank's place in
the job (``RANK``, ``WORLD_SIZE``, as torchrun would), runs the user's function under the
doctor (``runs.watched``) and writes the rank's report to the job's folder (``job.py``); the
doctor's own process then prints one report for the job. A worker's failure is raised again as
``mp.spawn`` would report it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch.multiprocessing

jobs: list[tuple[Path, int]] = []  # the jobs spawned while the doctor ran: folder, ranks


@contextmanager
def following(iterations: int | None, timeout: float) -> Iterator[None]:
    """``mp.spawn`` followed into its workers while the block runs."""
    mp = torch.multiprocessing
    original: Callable[..., Any] = getattr(mp, "spawn")  # noqa: B009 (a function, not the module)

    def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1,
              **kwargs: Any) -> Any:  # fmt: skip
        folder = Path(tempfile.mkdtemp(prefix="loop-stepper-spawn-"))
        jobs.append((folder, nprocs))
        given = (fn, str(folder), iterations, timeout, nprocs, tuple(args))
        return original(_doctored, args=given, nprocs=nprocs, **kwargs)

    setattr(mp, "spawn", spawn)  # noqa: B010
    try:
        yield
    finally:
        setattr(mp, "spawn", original)  # noqa: B010


def _doctored(
    rank: int,
    fn: Callable[..., Any],
    folder: str,
    iterations: int | None,
    timeout: float,
    world: int,
    args: tuple[Any, ...],
) -> None:
    """One worker: the user's ``fn(rank, *args)`` under the doctor, its report written."""
    from loop_stepper.doctor import job, launch, runs

    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    os.environ[job.LAUNCHED] = folder
    name = getattr(fn, "__qualname__", repr(fn))
    report = runs.watched(lambda: fn(rank, *args), runs.ScriptReport(name), iterations, timeout)
    job.write(Path(folder), rank, runs.for_job(report))
    if report.error is not None:
        raise report.error
    launch.leave(0)
