"""Real training cells from public sources (``tests/recorder/cells``: PyTorch's tutorials, d2l,
Karpathy's lectures, the UvA course, *LLMs from Scratch*, each rebuilt small), each run plainly
and under ``%%step`` in a real IPython shell: the numbers and the output are the plain run's
bit for bit; every trained parameter is shown once, under a name that reaches it; what each
moment says it wrote is what changed; ``--iterations 3`` records 3 passes; DataLoader workers
change nothing; a loop inside a library, lazy modules, a model replaced mid-cell and an
evaluation of 200 batches between training steps each record the training, not the noise."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

from loop_stepper.recorder import MAX_MOMENTS, Trace
from loop_stepper.stores import tensors
from tests.recorder import same
from tests.recorder.cells import CELLS, LIBRARY, Cell
from tests.recorder.test_names_corpus import reachable, resolve

NAMES = sorted(CELLS)
LIBRARY_CELLS = [n for n in NAMES if n.startswith("d2l_")]


@dataclass
class Run:
    state: dict[str, Any]
    printed: str
    space: dict[str, Any]
    trace: Trace | None = None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """d2l's library rebuilt, installed the way pip installs it: in a site-packages folder."""
    folder = tmp_path_factory.mktemp("environment") / "site-packages"
    folder.mkdir()
    shutil.copy(LIBRARY / "d2l_small.py", folder)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("d2l_small", None)


@pytest.fixture()
def shell(site: Path) -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "loop_stepper")
    yield ip
    InteractiveShell.clear_instance()


def run(shell: Any, cell: Cell, step: str | None = None) -> Run:
    """The cell's setup, then the cell plainly (``step`` None) or under ``%%step step``, in a
    fresh namespace of the shell; what it printed and what its namespace holds after."""
    shell.reset(new_session=False)
    sys.modules.pop("d2l_small", None)  # imported afresh, as in a new kernel
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for code in cell.setup:
            assert shell.run_cell(code).success, code
    printed = io.StringIO()  # the cell's own output
    with contextlib.redirect_stdout(printed):
        if step is None:
            result = shell.run_cell(cell.cell)
            assert result.success, result.error_in_exec
            trace = None
        else:
            shell.run_cell_magic("step", step, cell.cell)
            trace = shell.user_ns["_step"]
    space = dict(shell.user_ns)
    return Run(same.state(space), printed.getvalue(), space, trace)


def shown(moment: Any) -> dict[str, Any]:
    return {p["name"]: p for p in moment["params"]}


@pytest.mark.parametrize("name", NAMES)
def test_a_real_cell_under_step_ends_bit_for_bit_where_it_ends_plainly(
    shell: Any, name: str
) -> None:
    cell = CELLS[name]
    plain = run(shell, cell)
    stepped = run(shell, cell, "--iterations all")
    trace = stepped.trace
    assert trace is not None
    assert trace.internal_error is None and trace.error is None, trace.internal_error
    if len(trace.moments) < MAX_MOMENTS:
        assert trace.ended == "end", trace.stopped
    else:  # the cap stops the recording, never the cell: it ran to its end, untraced
        assert trace.ended == "stopped" and "2,000 moments" in str(trace.stopped)
    assert stepped.printed == plain.printed
    assert stepped.state == plain.state  # every parameter, .grad, optimizer state, RNG

    # every trained parameter the namespace reaches, shown once, under a name reaching it
    last = trace.moments[-1]
    names = [p["name"] for p in last["params"]]
    assert len(names) == len(set(names)), names
    space = [stepped.space]
    trained = {
        id(v)
        for v in reachable(space)
        if isinstance(v, torch.Tensor) and v.is_leaf and v.requires_grad and v.grad is not None
    }
    denoted: dict[int, str] = {}
    if trace.ended != "end":
        return  # the recording stopped at its cap: its last moment is not the cell's end
    for p in last["params"]:
        with contextlib.suppress(AttributeError, IndexError, KeyError, TypeError):
            value = resolve(p["name"], space)
            if isinstance(value, torch.Tensor):
                assert id(value) not in denoted, (p["name"], denoted.get(id(value)))
                denoted[id(value)] = p["name"]
                assert repr(p["value"]) == repr(tensors.shown(value)), p["name"]
    assert trained <= set(denoted), (names, len(trained))


@pytest.mark.parametrize("name", NAMES)
def test_each_moment_writes_what_changed_and_a_backward_never_the_parameters(
    shell: Any, name: str
) -> None:
    trace = run(shell, CELLS[name], "--iterations 3").trace
    assert trace is not None and trace.internal_error is None
    before = trace.start.get("params", [])
    previous = {p["name"]: p for p in before}
    for m in trace.moments:
        now = shown(m)
        common = previous.keys() & now.keys()
        moved = any(previous[n]["value"] != now[n]["value"] for n in common)
        graded = any(previous[n]["grad"] != now[n]["grad"] for n in common)
        where = (m["file"], m["line"], m["code"])
        if moved:
            assert "params" in m["writes"], where  # no change goes unmarked
        if "params" in m["writes"]:
            assert moved, where  # and no write is marked where nothing moved
        if graded:
            assert "grad" in m["writes"], where
        if ".backward(" in m["code"]:
            assert "params" not in m["writes"] and "grad" in m["writes"], where
        previous = now


@pytest.mark.parametrize("name", NAMES)
def test_iterations_3_records_3_passes_of_the_training_loop(shell: Any, name: str) -> None:
    trace = run(shell, CELLS[name], "--iterations 3").trace
    assert trace is not None and trace.internal_error is None
    assert trace.ended == "stopped" and trace.iterations == 3, trace.stopped
    assert trace.stopped is not None and trace.stopped.startswith("stopped after 3 iterations")
    passes = [m["iteration"] for m in trace.moments]
    assert passes == sorted(passes) and set(passes) - {0} == {1, 2, 3}
    for k in (1, 2, 3):  # each pass steps the parameters
        assert any("params" in m["writes"] for m in trace.moments if m["iteration"] == k), k


@pytest.mark.parametrize("name", [n for n in NAMES if CELLS[n].uses_workers])
def test_dataloader_workers_record_the_same_moments(shell: Any, name: str) -> None:
    alone = run(shell, CELLS[name], "--iterations all")
    workers = run(shell, CELLS[name].with_workers(2), "--iterations all")
    assert alone.trace is not None and workers.trace is not None
    assert workers.trace.ended == "end" and workers.trace.internal_error is None
    del workers.state["NUM_WORKERS"], alone.state["NUM_WORKERS"]
    assert workers.printed == alone.printed and workers.state == alone.state

    def seen(trace: Trace) -> list[Any]:
        return [(m["line"], m["code"], m["reads"], m["writes"], m["params"]) for m in trace.moments]

    assert seen(workers.trace) == seen(alone.trace)
    assert not any(m["function"] == "__getitem__" for m in alone.trace.moments)


@pytest.mark.parametrize("name", LIBRARY_CELLS)
def test_a_loop_inside_a_library_is_recorded_at_its_own_statements(shell: Any, name: str) -> None:
    """The library's backward is a moment of its own, labelled with its file and statement,
    never the user's next statement's; the run stops at the start of the library loop's 4th
    pass, each parameter keeps a name through the user's callback."""
    trace = run(shell, CELLS[name], "--iterations 3").trace
    assert trace is not None
    titles = trace.titles
    library = [m for m in trace.moments if m["file"] and titles[m["file"]] == "d2l_small.py"]
    backwards = [m for m in library if m["code"].endswith(".backward()")]
    assert len(backwards) == 3 and all("grad" in m["writes"] for m in backwards)
    assert "of the loop at line" in str(trace.stopped) and "of d2l_small.py" in str(trace.stopped)
    users = [m for m in trace.moments if m["file"] is None or titles[m["file"]] != "d2l_small.py"]
    for m in users:  # the library's change is never marked on a statement of the user's
        if "grad" in m["writes"]:
            assert "grad" in m["code"] or ".backward(" in m["code"] or "zero" in m["code"], m
    since = trace.moments[trace.moments.index(backwards[0]) :]
    names = {p["name"] for m in since for p in m["params"]}
    assert not any(n.startswith("leaf") for n in names), names


def test_a_library_loop_calling_back_the_users_update_names_its_parameters(shell: Any) -> None:
    trace = run(shell, CELLS["d2l_adam_scratch"], "--iterations 3").trace
    assert trace is not None
    after = [m for m in trace.moments if m["function"] == "adam"]
    assert after and all(sorted(shown(m)) == ["b", "w"] for m in after)
    first = after[0]
    assert first["code"].startswith("beta1, beta2, eps") and first["writes"] == []
    assert all(p["grad"] is not None for p in trace.moments[-1]["params"])


def test_lazy_modules_are_shown_once_made(shell: Any) -> None:
    stepped = run(shell, CELLS["d2l_dropout_lazy"], "--iterations all")
    trace = stepped.trace
    assert trace is not None and trace.internal_error is None and trace.ended == "end"
    model = stepped.space["model"]
    wanted = [f"model.{n}" for n, _ in model.named_parameters()]
    assert [p["name"] for p in trace.moments[-1]["params"]] == wanted
    assert trace.moments[0]["params"] == []  # not made yet: nothing to show


def test_a_model_replaced_mid_cell_shows_only_the_new_one(shell: Any) -> None:
    stepped = run(shell, CELLS["tutorials_nn_replace"], "--iterations all")
    trace = stepped.trace
    assert trace is not None and trace.ended == "end"
    last = trace.moments[-1]
    space = [stepped.space]
    for p in last["params"]:
        value = resolve(p["name"], space)
        assert isinstance(value, torch.Tensor), p["name"]
        assert repr(p["value"]) == repr(tensors.shown(value))


def test_an_evaluation_of_200_batches_between_steps_is_one_moment(shell: Any) -> None:
    trace = run(shell, CELLS["ngvideo_bigram"], "--iterations 3").trace
    assert trace is not None and trace.iterations == 3
    evaluations = [m for m in trace.moments if m["code"] == "losses = estimate_loss()"]
    assert len(evaluations) == 1 and evaluations[0]["writes"] == []
    assert not any(m["function"] == "estimate_loss" for m in trace.moments)
    stepped_into = run(shell, CELLS["ngvideo_bigram"], "--iterations 3 --step-into").trace
    assert stepped_into is not None
    inside = [m for m in stepped_into.moments if m["function"] == "estimate_loss"]
    assert len(inside) > 2 * 200  # every batch of both splits, when asked
