"""Fail-open, for the doctor on its own (``watch()``, ``loop-stepper doctor``): a fault injected
into each of its hooks, its lookout's tracers and the following of a ``.data`` read included
(they trace only where nothing else does, so not under ``record``), stops the doctor there;
the script runs on to its end with the numbers of a plain run; the report keeps the findings
before the fault and tells the internal error apart from the script's (exit 2, never the
script's traceback)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from loop_stepper.doctor import chart, dotdata, evals, lookout, modes, order, reach, script, uses
from loop_stepper.doctor.watch import watch
from loop_stepper.recorder.observer import EVENTS
from loop_stepper.recorder.probe import observers
from tests.recorder import same
from tests.recorder.test_fail_open import CELL, IN_A_JOB, fault

HOOKS = [
    *((chart.Chart, e) for e in EVENTS if e not in IN_A_JOB),
    (evals.Evals, "_post"),
    (evals.Evals, "_pre"),
    (uses.ForwardUse, "_forward"),
    (modes.Modes, "_pre"),
    (modes.Modes, "_post"),
    (lookout.Lookout, "_call"),
    (lookout.Lookout, "_local"),
    (dotdata.DotData, "_saw"),
    (dotdata.DotData, "_line"),
    (order.Order, "close"),
    (reach.Reach, "close"),
]


def run(path: Path) -> tuple[dict[str, Any], str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        space = runpy.run_path(str(path), run_name="__main__")
    return same.state(space), printed.getvalue()


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cell") / "train.py"
    path.write_text(CELL)
    return path


@pytest.mark.parametrize(("owner", "name"), HOOKS, ids=[f"{o.__name__}.{n}" for o, n in HOOKS])
def test_a_fault_in_a_hook_of_watch_stops_the_doctor_and_never_the_script(
    owner: Any, name: str, cell: Path
) -> None:
    plain = run(cell)
    fired: list[str] = []
    with fault(owner, name, fired), watch() as doctor:
        watched = run(cell)
    assert fired == [name]
    assert watched == plain  # every number, every printed line
    assert not observers()
    error = doctor.internal_error
    assert error is not None and error.component == "doctor" and error.type == "Injected"
    assert f"injected into {name}" in error.traceback


def test_without_a_fault_the_doctor_names_the_cells_bugs(cell: Path) -> None:
    """The cell the faults are injected into has bugs the doctor names: so a fault in the
    middle of the run really stops a doctor that had work to do."""
    with watch() as doctor:
        run(cell)
    assert doctor.internal_error is None
    assert "log_tensor" in {d["bug"] for d in doctor.diagnoses}


def test_the_command_exits_2_and_tells_the_internal_error_apart(
    cell: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fired: list[str] = []
    report = cell.parent / "report.json"
    with fault(chart.Chart, "after_step", fired):
        code = script.main([str(cell), "--iterations", "100", "--json", str(report)])
    out, err = capsys.readouterr()
    assert fired == ["after_step"] and code == 2
    assert "total" in out  # the script ran to its end
    assert "loop-stepper doctor: doctor stopped at " in err
    assert "internal error of loop_stepper in its after_step hook" in err
    assert "Traceback" in err and "Injected: injected into after_step" in err
    data = json.loads(report.read_text())
    assert data["internal_error"]["hook"] == "after_step"
    assert data["internal_error"]["type"] == "Injected"
