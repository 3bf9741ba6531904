"""Where each rank of a job is, told by a thread of the doctor's own every second, so that a
job whose ranks stopped moving is reported instead of hanging: ``beat{R}.json`` in the job's
folder (``job.py``) holds the rank's line now (the innermost of the user's frames of its main
thread), the PyTorch call it is in when it is one (``all_reduce``, ``backward``, ``barrier``),
when it last moved and its diagnoses so far. Nothing goes between the ranks but these files.

``stalled`` is the job's verdict, by the launcher or, under the user's own ``torchrun``, by
rank 0's thread: no rank that is still running moved for ``timeout`` seconds, and one of them
waits in a call of ``torch.distributed`` or DDP (``collective_hang``, with every rank's line).
A thread that fails stops beating; the script runs on.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loop_stepper.doctor import where
from loop_stepper.doctor.bugs import message

EVERY = 1.0  # seconds between beats
_WRAPPERS = {"wrapper", "_fn", "decorate_context", "__call__", "_call_impl", "_wrapped_call_impl"}
_WRAPPERS.add("inner")  # nn.Module's call with hooks
_COLLECTIVE = (
    f"{os.sep}distributed{os.sep}",
    f"{os.sep}parallel{os.sep}",
    f"{os.sep}autograd{os.sep}",
)


class Beat(threading.Thread):
    def __init__(
        self,
        folder: Path,
        rank: int,
        diagnoses: Callable[[], list[Any]],
        iteration: Callable[[], int],
        judge: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name="loop-stepper-heartbeat", daemon=True)
        self.folder, self.rank = folder, rank
        self.diagnoses, self.iteration, self.judge = diagnoses, iteration, judge
        self.main = threading.main_thread().ident
        self.done = threading.Event()
        self.last: tuple[Any, ...] | None = None
        self.moved_at = time.time()

    def run(self) -> None:
        try:
            self.beat()  # at once: a rank that has not beaten yet is still starting
            while not self.done.wait(EVERY):
                self.beat()
                if self.judge is not None:
                    self.judge()
        except Exception:  # ours: the beats stop, the script runs on
            return

    def stop(self) -> None:
        self.done.set()

    def beat(self) -> None:
        frame = sys._current_frames().get(self.main or 0)
        if frame is None:
            return
        now = (id(frame), frame.f_lineno, frame.f_lasti)
        if now != self.last:
            self.last, self.moved_at = now, time.time()
        line, waits = _where(frame)
        found = {
            "rank": self.rank,
            "pid": os.getpid(),
            "file": line[0],
            "line": line[1],
            "waits": waits,
            "moved_at": self.moved_at,
            "iteration": self.iteration(),
            "diagnoses": self.diagnoses(),
        }
        part = self.folder / f".beat{self.rank}.json.part"
        part.write_text(json.dumps(found, default=str))
        part.replace(self.folder / f"beat{self.rank}.json")


def _where(frame: types.FrameType) -> tuple[tuple[str | None, int | None], str | None]:
    """The innermost of the user's lines, and the PyTorch call below it that waits on the other
    ranks, when it is one."""
    below: list[types.FrameType] = []  # PyTorch's frames under the user's line, innermost first
    f: types.FrameType | None = frame
    while f is not None and not where.is_theirs(f.f_code.co_filename):
        below.append(f)
        f = f.f_back
    waits = None
    if any(part in b.f_code.co_filename for b in below for part in _COLLECTIVE):
        # the call the user made, under its decorators' wrappers
        names = [b.f_code for b in reversed(below)]
        call = next((c for c in names if c.co_name not in _WRAPPERS), names[0])
        waits = getattr(call, "co_qualname", call.co_name)  # DistributedDataParallel.forward
    if f is None:
        return (None, None), waits
    return (f.f_code.co_filename, f.f_lineno), waits


def stalled(folder: Path, world: int, timeout: float) -> list[dict[str, Any]] | None:
    """``collective_hang`` for the job when its running ranks stopped moving for ``timeout``
    seconds with one waiting on the others; else None."""
    beats, ended = {}, set()
    for r in range(world):
        if (folder / f"rank{r}.json").is_file():
            ended.add(r)
            continue
        file = folder / f"beat{r}.json"
        if not file.is_file():
            return None  # a rank not yet beating: still starting
        beats[r] = json.loads(file.read_text())
    now = time.time()
    if not beats or any(now - b["moved_at"] < timeout for b in beats.values()):
        return None
    waiting = [b for b in beats.values() if b["waits"]]
    if not waiting:
        return None
    found = []
    for b in waiting:
        others = [
            f"rank {r} ended"
            if r in ended
            else f"rank {r} is at line {beats[r]['line']}"
            + (f" ({beats[r]['waits']})" if beats[r]["waits"] else "")
            for r in range(world)
            if r != b["rank"]
        ]
        evidence = {
            "rank": b["rank"],
            "waits": f"line {b['line']} ({b['waits']})",
            "others": ", ".join(others),
            "timeout": timeout,
            "how": f": the job was stopped after {timeout:g} s",
        }
        found.append(
            {
                "bug": "collective_hang",
                "file": b["file"],
                "line": b["line"],
                "iteration": b.get("iteration", 0),
                "message": message("collective_hang", evidence),
                "evidence": evidence,
                "ranks": [b["rank"]],
            }
        )
    return found


def pids(folder: Path, world: int) -> list[int]:
    """The processes of the ranks that beat."""
    found = []
    for r in range(world):
        file = folder / f"beat{r}.json"
        if file.is_file():
            found.append(int(json.loads(file.read_text()).get("pid", 0)))
    return [p for p in found if p > 0]


def beaten(folder: Path, world: int) -> dict[int, list[Any]]:
    """The diagnoses each rank still running had told in its last beat."""
    found = {}
    for r in range(world):
        file = folder / f"beat{r}.json"
        if file.is_file() and not (folder / f"rank{r}.json").is_file():
            found[r] = json.loads(file.read_text()).get("diagnoses", [])
    return found
