"""The doctor over a corpus of training scripts: each script of ``corpus/bugs/`` rebuilds a
silent bug of a public report and marks every diagnosis it should get with a trailing
``# doctor: <bug_id>[, <bug_id>…]`` on the named line; each of ``corpus/correct/`` is a correct
loop (a "not a bug": accumulation, a GAN, retain_graph, a frozen backbone…) that should get
none. ``corpus/table.py`` prints the same runs as a table.

The scripts run in this process (``loop_stepper.doctor.script.run``, as ``loop-stepper doctor`` runs
them), one intra-op thread each, their warnings ignored (PyTorch's own, such as the scheduler's
"called before optimizer.step()", are the CLI's to print, not errors here).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
import torch

from loop_stepper.doctor.bugs import BUGS, KINDS, Diagnosis
from loop_stepper.doctor.script import run

CORPUS = Path(__file__).resolve().parent / "corpus"
BUG_SCRIPTS = sorted((CORPUS / "bugs").glob("[0-9]*.py"))
CORRECT_SCRIPTS = sorted((CORPUS / "correct").glob("[0-9]*.py"))
MARK = re.compile(r"#\s*doctor:\s*([\w\s,]+?)\s*$")
ITERATIONS = 50

Found = set[tuple[str, int]]


class Report(Protocol):
    """What these tests read of ``run``'s report."""

    diagnoses: list[Diagnosis]
    error: BaseException | None

    @property
    def code(self) -> int: ...


def expected(script: Path) -> Found:
    """The (bug, line) pairs the script's ``# doctor:`` comments mark."""
    marked: Found = set()
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        match = MARK.search(line)
        if match:
            marked |= {(bug.strip(), number) for bug in match.group(1).split(",") if bug.strip()}
    return marked


@contextlib.contextmanager
def quiet_single_thread() -> Iterator[None]:
    """One intra-op thread (the machine's cores are shared), the script's prints to stderr as
    under the CLI, its warnings ignored; all put back after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(before)


def doctor(script: Path) -> Report:
    """The doctor's report on ``script``, as ``loop-stepper doctor SCRIPT --iterations 50``;
    after it, nothing of the doctor's is left in the process (a torch-function mode of a
    ``.data`` read's window, a trace function, the probe's ``.data`` property)."""
    with quiet_single_thread():
        report = run(script, [], iterations=ITERATIONS)
    assert not torch.overrides._get_current_function_mode_stack()
    assert sys.gettrace() is None and "data" not in vars(torch.Tensor)
    return report


def found(diagnoses: list[Diagnosis]) -> Found:
    return {(d["bug"], d["line"]) for d in diagnoses if d["line"] is not None}


def said(report: Report) -> str:
    lines = [f"{d['bug']} at {d['line']} ({d['file']}): {d['message']}" for d in report.diagnoses]
    if report.error is not None:
        lines.append(f"the script failed: {type(report.error).__name__}: {report.error}")
    return "\n".join(lines) or "nothing"


def same_file(a: str | None, b: Path) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)


@pytest.mark.parametrize("script", BUG_SCRIPTS, ids=[p.name for p in BUG_SCRIPTS])
def test_bug_script_is_named_at_its_lines(script: Path) -> None:
    report = doctor(script)
    want = expected(script)
    assert found(report.diagnoses) == want, f"expected {sorted(want)}; the doctor said:\n" + said(
        report
    )
    assert all(same_file(d["file"], script) for d in report.diagnoses), said(report)
    assert report.code == 1, said(report)  # diagnoses, and no failure the doctor did not name


@pytest.mark.parametrize("script", CORRECT_SCRIPTS, ids=[p.name for p in CORRECT_SCRIPTS])
def test_correct_loop_has_no_diagnosis(script: Path) -> None:
    report = doctor(script)
    assert report.diagnoses == [], said(report)
    assert report.error is None, said(report)
    assert report.code == 0


def test_corpus_covers_every_bug() -> None:
    assert len(BUG_SCRIPTS) >= 25
    assert len(CORRECT_SCRIPTS) >= 12
    marked = {bug for script in BUG_SCRIPTS for bug, _ in expected(script)}
    assert marked - set(BUGS) == set(), "a marker names no bug the doctor knows"
    # a job's bugs need several ranks: their scripts are tests/doctor/ranks' (test_ranks.py)
    jobs = {k for k, kind in KINDS.items() if kind.family == "ranks"}
    job_mark = re.compile(r"#\s*doctor:\s*(\w+)\s+ranks=")
    in_jobs = {
        bug
        for script in (CORPUS.parent / "ranks" / "bugs").glob("*.py")
        for bug in job_mark.findall(script.read_text())
    }
    assert jobs <= in_jobs, "a bug of a job no script of tests/doctor/ranks shows"
    assert set(BUGS) - marked - jobs == set(), "a bug no script of the corpus shows"
    for script in BUG_SCRIPTS:
        assert script.read_text().startswith("# From: "), script.name
        assert expected(script), f"{script.name} marks no diagnosis"
    for script in CORRECT_SCRIPTS:
        assert script.read_text().startswith("# Correct: "), script.name
        assert not expected(script), f"{script.name} is a correct loop but marks a diagnosis"


def test_markers_are_read(tmp_path: Path) -> None:
    script = tmp_path / "001_example.py"
    script.write_text(
        "# From: an example\n"
        "x = 1\n"
        "loss.backward()  # doctor: skip_zero_grad, nonfinite\n"
        "y = 2  # doctor: zeros\n"
        "# doctor is a word here, doctor: not a marker either\n"
    )
    assert expected(script) == {("skip_zero_grad", 3), ("nonfinite", 3), ("zeros", 4)}
