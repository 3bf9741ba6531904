"""A data-parallel job under the doctor: each rank's report written to a folder the ranks share,
and the reports made into one for the job.

The folder is the launcher's (``loop-stepper doctor --nproc-per-node N``: ``LOOP_STEPPER_JOB``)
or, under the user's own ``torchrun``, one named after torchrun's run id and port in the temp
folder. A rank writes ``rank{R}.json`` when its script ends: its report (the diagnoses, the
steps, its error) and its facts (``ranks.py``); nothing goes between the ranks while they run,
so the doctor adds no collective and cannot deepen a hang. One report for the job: each
diagnosis once, with the ``ranks`` it showed on, and the comparisons across the ranks' facts
(``compare.py``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from loop_stepper.doctor import compare

LAUNCHED = "LOOP_STEPPER_JOB"  # the folder, set by the launcher: the launcher merges


def folder() -> Path:
    """The folder the ranks of this job share."""
    given = os.environ.get(LAUNCHED)
    if given:
        return Path(given)
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "none")
    port = os.environ.get("MASTER_PORT", "0")
    path = Path(tempfile.gettempdir()) / f"loop-stepper-doctor-{run_id}-{port}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write(path: Path, rank: int, found: dict[str, Any]) -> None:
    """This rank's report, written whole (a reader never sees half of it)."""
    part = path / f".rank{rank}.json.part"
    part.write_text(json.dumps(found, default=str))
    part.replace(path / f"rank{rank}.json")


def read(path: Path, world: int, wait: float = 0.0) -> dict[int, dict[str, Any]]:
    """The ranks' reports in ``path``, waiting up to ``wait`` seconds for all ``world``."""
    deadline = time.monotonic() + wait
    while True:
        found = {}
        for r in range(world):
            file = path / f"rank{r}.json"
            if file.is_file():
                found[r] = json.loads(file.read_text())
        if len(found) == world or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def merged(reports: dict[int, dict[str, Any]], world: int) -> dict[str, Any]:
    """One report for the job: each diagnosis once (the lowest rank's numbers), with the ranks
    it showed on, then what only the ranks together show."""
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    silenced: list[dict[str, Any]] = []
    for r in sorted(reports):
        for d in reports[r].get("diagnoses", []):
            key = (d["bug"], d["file"], d["line"])
            if key in by_key:
                by_key[key]["ranks"].append(r)
            else:
                by_key[key] = {**d, "ranks": [r]}
        silenced += [{**d, "rank": r} for d in reports[r].get("silenced", [])]
    facts = {r: reports[r].get("facts") or {} for r in reports}
    found = compare.across(facts, world, list(by_key.values())) + _left_alone(reports, world)
    diagnoses = compare.apart(compare.explained(list(by_key.values()), found), facts) + found
    job: dict[str, Any] = {
        "script": next((x["script"] for x in reports.values()), None),
        "ranks": world,
        "iterations": max((x.get("iterations", 0) for x in reports.values()), default=0),
        "diagnoses": diagnoses,
        "missing_ranks": sorted(set(range(world)) - reports.keys()),
    }
    if silenced:
        job["silenced"] = silenced
    errors = {r: x["error"] for r, x in reports.items() if x.get("error")}
    if errors:
        job["errors"] = errors
    internal = {r: x["internal_error"] for r, x in reports.items() if x.get("internal_error")}
    if internal:
        job["internal_errors"] = internal
    job["stopped"] = any(x.get("stopped") for x in reports.values())
    return job


# a rank's collective that failed because another rank left it (gloo's words, NCCL's)
PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "DistBackendError")


def left_alone(said: str | None) -> bool:
    """Whether a rank's error is a collective the other ranks had left."""
    return bool(said) and any(words in str(said) for words in PEER_GONE)


def _left_alone(reports: dict[int, dict[str, Any]], world: int) -> list[dict[str, Any]]:
    """``collective_hang`` for each rank whose collective failed because the others had left:
    a collective only some ranks ran, found as an error instead of a hang."""
    found = []
    for r, x in sorted(reports.items()):
        said, at = x.get("error") or "", x.get("error_at")
        words = next((w for w in PEER_GONE if w in said), None)
        if not at or words is None:
            continue
        others = [
            f"rank {q} " + ("ended" if not reports.get(q, {}).get("error") else "failed")
            for q in range(world)
            if q != r
        ]
        evidence = {
            "rank": r,
            "waits": f"line {at[1]}",
            "others": ", ".join(others),
            "how": f": its collective failed when the others had left it ({words})",
        }
        when = x.get("iterations", 0)
        found.append(compare.diagnosis("collective_hang", at, [r], when, evidence))
    return found
