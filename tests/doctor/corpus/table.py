"""The doctor over the corpus, as a markdown table: per bug id, the bug scripts that mark it,
the marked diagnoses found (that bug at that line), those missed, and the false alarms (that bug
named where no marker is, in any script); then the correct loops' false alarms and the totals.

    .venv/bin/python tests/doctor/corpus/table.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: app and tests

from loop_stepper.doctor.bugs import BUGS
from tests.doctor.test_corpus import BUG_SCRIPTS, CORRECT_SCRIPTS, doctor, expected, found


def main() -> None:
    scripts: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    alarms: Counter[str] = Counter()
    correct_alarms = 0
    correct_flagged = 0
    for script in BUG_SCRIPTS + CORRECT_SCRIPTS:
        want = expected(script)
        got = found(doctor(script).diagnoses)
        for bug in {b for b, _ in want}:
            scripts[bug] += 1
        for bug, _ in want & got:
            hits[bug] += 1
        for bug, _ in want - got:
            misses[bug] += 1
        for bug, _ in got - want:
            alarms[bug] += 1
        if script in CORRECT_SCRIPTS:
            correct_alarms += len(got)
            correct_flagged += bool(got)
    print("| bug | scripts | found | missed | false alarms |")
    print("|---|---:|---:|---:|---:|")
    for bug in BUGS:
        print(f"| {bug} | {scripts[bug]} | {hits[bug]} | {misses[bug]} | {alarms[bug]} |")
    print(
        f"| correct loops ({len(CORRECT_SCRIPTS)}; {correct_flagged} named) | "
        f"{len(CORRECT_SCRIPTS)} | | | {correct_alarms} |"
    )
    print(
        f"| **total** ({len(BUG_SCRIPTS)} bug scripts) | {len(BUG_SCRIPTS) + len(CORRECT_SCRIPTS)} "
        f"| {sum(hits.values())} | {sum(misses.values())} | {sum(alarms.values())} |"
    )


if __name__ == "__main__":
    main()
