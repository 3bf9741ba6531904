"""The export against the Lab: a real Lab drives each session and records its log as the
timeline does; the exported script (and notebook) then runs in a separate, isolated Python
and must end on exactly the Lab's numbers: every parameter's value and .grad, and the loss."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import nbformat
import pydantic_core
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app import export
from app.engine import Lab, LineError
from app.engine.program import NO_BUGS, PRESETS, program_for
from app.engine.scenarios import info
from app.engine.setup import Setup, SetupJson

PRESET = {p.name: list(p.program) for p in PRESETS}
# The Labs here compute with the server's one intra-op thread (the server_threads fixture);
# every script runs with more, as on a student's laptop: a script that did not set the
# session's count itself would sum in another order (BatchNorm's statistics) and miss digits.
# (MKL_DYNAMIC=FALSE: else torch starts with no more threads than the machine has cores.)
MORE_THREADS = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "MKL_DYNAMIC": "FALSE"}
pytestmark = pytest.mark.usefixtures("server_threads")
ALLOWED_IMPORTS = {"copy", "csv", "io", "json", "math", "torch", "numpy", "sklearn"}


def make_setup(
    scenario: str,
    lr: float | None = None,
    *,
    seed: int = 0,
    optimizer: dict[str, Any] | None = None,
    accumulate: int = 1,
    options: dict[str, float] | None = None,
    program: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "lr": info(scenario).default_lr if lr is None else lr,
        "seed": seed,
        "optimizer": optimizer or {"kind": "sgd", "momentum": 0.0, "weight_decay": 0.0},
        "accumulate": accumulate,
        "options": options or {},
        "program": program or program_for(NO_BUGS, accumulate),
    }


class Recorder:
    """A Lab driven as the API drives it, writing the log the timeline would write."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup
        # as the server reads a stored setup back (the tests write their setups by hand)
        self.lab = Lab(Setup.from_json(cast(SetupJson, setup)))
        self.events: list[dict[str, Any]] = []

    def line(self, entry: str) -> bool:
        """A direct line (POST /forward, /backward...): runs whatever the cursor says."""
        try:
            self.lab.run_line(entry)
        except LineError as error:
            self.events.append({"op": "line", "entry": entry, "ok": False, "error": error.message})
            return False
        self.events.append({"op": "line", "entry": entry, "ok": True})
        return True

    def next(self) -> bool:
        """POST /next: the line at the cursor; the cursor moves on only if it ran."""
        entry = self.lab.next_line
        if not self.line(entry):
            return False
        self.lab.cursor = (self.lab.cursor + 1) % len(self.lab.program)
        return True

    def run(self, iterations: int) -> None:
        """POST /run: stops at the first failing line, as Lab.run does."""
        for _ in range(iterations):
            if not self.next():
                return
            while self.lab.cursor != 0:
                if not self.next():
                    return

    def lines(self, entries: list[str], times: int = 1) -> None:
        for _ in range(times):
            for entry in entries:
                self.line(entry)

    def lr(self, value: float) -> None:
        self.lab.lr = value
        self.events.append({"op": "lr", "lr": value})

    def program(self, program: list[str]) -> None:
        self.lab.set_program(program)
        self.events.append({"op": "program", "program": list(program)})

    def expected(self) -> dict[str, Any]:
        """The Lab's numbers, spelled as the API spells them (NaN as "NaN")."""
        # every element (the Session summarizes a tensor past 256 of them)
        numbers = {
            "params": [
                {
                    "name": n,
                    "value": p.tolist(),
                    "grad": None if p.grad is None else p.grad.tolist(),
                }
                for n, p in self.lab.named.items()
            ],
            "loss": self.lab.view()["loss"],
        }
        return json.loads(pydantic_core.to_json(numbers, inf_nan_mode="strings"))  # type: ignore[no-any-return]


# Runs several standalone scripts in one isolated interpreter, one after the other, each in
# fresh globals (runpy), so the suite pays torch's import once per test, not once per script.
RUNNER = """
import contextlib, io, runpy, sys, traceback
for path in sys.argv[1:]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    except BaseException:
        out.write(traceback.format_exc())
    sys.stdout.write(out.getvalue() + "\\x00")
"""


def run_all(sources: list[str], tmp_path: Path) -> list[tuple[Any, str]]:
    """Run each source as a file outside the project in an isolated interpreter (-I: no
    project on the path, no PYTHON* variables); each one's last line as JSON, and its output.
    One source runs alone as ``python -I script.py``; several share one interpreter."""
    paths = []
    for n, source in enumerate(sources):
        paths.append(tmp_path / f"run{n}.py")
        paths[-1].write_text(source)
    if len(paths) == 1:
        command = [sys.executable, "-I", str(paths[0])]
    else:
        (tmp_path / "runner.py").write_text(RUNNER)
        command = [sys.executable, "-I", str(tmp_path / "runner.py"), *map(str, paths)]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=os.environ | MORE_THREADS,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = done.stdout.split("\x00")[:-1] if len(paths) > 1 else [done.stdout]
    assert len(outputs) == len(paths), done.stdout
    for out in outputs:
        assert "Traceback (most recent call last)" not in out, out
    return [(json.loads(out.splitlines()[-1]), out) for out in outputs]


def imported(source: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.module is not None and node.level == 0
            modules.add(node.module.split(".")[0])
    return modules


def notebook_code(rec: Recorder) -> str:
    """The notebook, validated, as one program: its code cells in order."""
    book = export.notebook(rec.setup, rec.events, threads=torch.get_num_threads())
    json.dumps(book, allow_nan=False)  # the server sends it as it is
    nbformat.validate(nbformat.from_dict(book))
    cells = book["cells"]
    assert cells[0]["cell_type"] == "markdown" and cells[0]["source"].startswith("# ")
    assert cells[1]["cell_type"] == "code" and "optimizer = torch.optim." in cells[1]["source"]
    assert cells[-1]["cell_type"] == "code" and "json.dumps" in cells[-1]["source"]
    return "\n\n".join(c["source"] for c in cells if c["cell_type"] == "code") + "\n"


def check_all(recs: list[Recorder], tmp_path: Path, notebook: bool = False) -> list[str]:
    """Each script's (and notebook's) numbers are its Lab's, exactly; returns what the
    scripts printed."""
    threads = torch.get_num_threads()  # what the Labs computed with
    sources = [export.script(rec.setup, rec.events, threads=threads) for rec in recs]
    for source in sources:
        assert imported(source) <= ALLOWED_IMPORTS
    books = [notebook_code(rec) for rec in recs] if notebook else []
    results = run_all(sources + books, tmp_path)
    for n, (got, _) in enumerate(results):
        rec = recs[n % len(recs)]
        assert got == rec.expected(), f"setup {rec.setup}, events {rec.events}"
    return [stdout for _, stdout in results[: len(recs)]]


def check(rec: Recorder, tmp_path: Path, notebook: bool = False) -> tuple[str, str]:
    """One session: its script, and what the script printed."""
    (stdout,) = check_all([rec], tmp_path, notebook)
    return export.script(rec.setup, rec.events, threads=1), stdout


# -- the sessions -----------------------------------------------------------------


def test_neuron_correct_loop_three_iterations(tmp_path: Path) -> None:
    rec = Recorder(make_setup("neuron"))
    rec.run(3)
    source, _ = check(rec, tmp_path, notebook=True)
    assert rec.lab.loss_value is not None and rec.lab.iteration == 3
    loop = "\n".join(
        [
            "for _ in range(3):",
            "    out = model(X)",
            "    loss = loss_fn(out, y)",
            "    optimizer.zero_grad()",
            "    loss.backward()",
            "    optimizer.step()",
        ]
    )
    assert loop in source
    assert "# Seed 0, lr 0.05, SGD (momentum 0.0, weight_decay 0.0), accumulate 1." in source
    book = export.notebook(rec.setup, rec.events, threads=1)
    assert [c["cell_type"] for c in book["cells"]] == ["markdown", "code", "code", "code"]
    assert book["cells"][2]["source"] == loop


def test_moons_150_iterations_is_one_short_loop(tmp_path: Path) -> None:
    rec = Recorder(make_setup("moons"))
    rec.run(150)
    source, _ = check(rec, tmp_path)
    assert "for _ in range(150):" in source
    assert len(source.splitlines()) < 120
    assert "X, y = next(data)  # the next batch" in source


def test_bug_presets(tmp_path: Path) -> None:
    recs = []
    for scenario in ("neuron", "moons"):
        for preset in ("skip_zero_grad", "backward_twice_retain", "step_first"):
            rec = Recorder(make_setup(scenario, program=PRESET[preset]))
            rec.run(4)
            recs.append(rec)
            assert "for _ in range(4):" in export.script(rec.setup, rec.events, threads=1)
    check_all(recs, tmp_path)
    lesson = Recorder(make_setup("neuron", program=PRESET["backward_twice_retain"]))
    lesson.run(1)
    assert lesson.expected()["params"][0]["grad"] == [[-47.0]]  # the lesson's 2 x (-23.5)


OPTIMIZERS = [
    {"kind": "sgd", "momentum": 0.9, "weight_decay": 0.01},
    {"kind": "adam", "betas": [0.8, 0.99], "weight_decay": 0.01},
    {"kind": "adam", "betas": [0.9, 0.999], "weight_decay": 0.0},
]


@pytest.mark.parametrize("scenario", ["neuron", "moons"])
def test_stateful_optimizers(scenario: str, tmp_path: Path) -> None:
    recs = []
    for optimizer in OPTIMIZERS:
        rec = Recorder(make_setup(scenario, 0.07, optimizer=optimizer, seed=3))
        rec.run(12)
        recs.append(rec)
        maker = "Adam" if optimizer["kind"] == "adam" else "SGD"
        source = export.script(rec.setup, rec.events, threads=1)
        assert f"optimizer = torch.optim.{maker}(model.parameters(), lr=0.07," in source
    check_all(recs, tmp_path)


def test_neuron_accumulate_2(tmp_path: Path) -> None:
    rec = Recorder(make_setup("neuron", accumulate=2))
    rec.run(5)
    source, _ = check(rec, tmp_path, notebook=True)
    # the lesson's accumulation loop, nested in the iterations; an even split divides by k
    inner = "\n".join(
        [
            "    for _ in range(2):",
            "        X, y = next(data)  # the next micro-batch",
            "        out = model(X)",
            "        loss = loss_fn(out, y) / 2",
            "        loss.backward()",
        ]
    )
    assert "for _ in range(5):\n    optimizer.zero_grad()\n" + inner in source


@pytest.mark.parametrize("k", [4, 8])
def test_moons_accumulate_uneven_last_batch(k: int, tmp_path: Path) -> None:
    rec = Recorder(make_setup("moons", accumulate=k, seed=1))
    rec.run(12)  # two epochs and more: the batch of 22 splits unevenly
    rec.lines(["zero_grad", "forward", "loss", "backward"])  # a part of an iteration
    source, _ = check(rec, tmp_path, notebook=True)
    assert "loss = loss_fn(out, y) * share" in source
    assert "for _ in range(12):" in source and f"for _ in range({k}):" in source


def test_lr_change_midway(tmp_path: Path) -> None:
    rec = Recorder(make_setup("moons"))
    rec.run(3)
    rec.lines(["forward", "loss"])
    rec.lr(0.011)
    rec.lines(["zero_grad", "backward", "step"])
    rec.run(2)
    rec.lr(1 / 3)
    rec.run(2)
    source, _ = check(rec, tmp_path, notebook=True)
    assert 'group["lr"] = 0.011' in source
    assert f'group["lr"] = {1 / 3!r}' in source
    assert rec.lab.lr == 1 / 3


def test_program_change_midway(tmp_path: Path) -> None:
    rec = Recorder(make_setup("neuron"))
    rec.run(2)
    rec.next()
    rec.next()
    rec.program(PRESET["skip_zero_grad"])
    for _ in range(9):
        rec.next()
    rec.program(["forward", "loss", "zero_grad(set_to_none=False)", "backward", "step"])
    rec.run(3)
    source, _ = check(rec, tmp_path, notebook=True)
    assert (
        "# loop program changed to: forward, loss, backward, step (preset skip_zero_grad)" in source
    )
    assert "optimizer.zero_grad(set_to_none=False)" in source
    book = export.notebook(rec.setup, rec.events, threads=1)
    notes = [c["source"] for c in book["cells"][1:] if c["cell_type"] == "markdown"]
    assert notes[0] == (
        "The loop program changed to: `forward`, `loss`, `backward`, `step` "
        "(preset `skip_zero_grad`)."
    )
    assert len(notes) == 2


def test_backward_twice_is_pytorchs_error(tmp_path: Path) -> None:
    rec = Recorder(make_setup("moons", program=PRESET["backward_twice"]))
    rec.lines(PRESET["backward_twice"], times=3)
    failed = [e for e in rec.events if not e["ok"]]
    assert len(failed) == 3 and "second time" in failed[0]["error"]
    source, stdout = check(rec, tmp_path, notebook=True)
    assert "for _ in range(3):" in source
    assert stdout.count("RuntimeError: Trying to backward through the graph a second time") == 3


def test_a_failing_backward_keeps_the_buffers(tmp_path: Path) -> None:
    # retain_graph=True keeps the graph: the second backward adds, the third fails after it
    rec = Recorder(make_setup("neuron"))
    rec.lines(["forward", "loss", "backward(retain_graph=True)", "backward", "backward"])
    assert [e["ok"] for e in rec.events] == [True, True, True, True, False]
    rec.lines(["step", "forward", "loss", "zero_grad(set_to_none=False)", "backward", "step"])
    check(rec, tmp_path)


def test_the_labs_refusals(tmp_path: Path) -> None:
    rec = Recorder(make_setup("neuron"))
    rec.line("loss")
    rec.line("backward")
    rec.line("forward")
    rec.line("backward")
    rec.run(2)
    assert [e["ok"] for e in rec.events[:4]] == [False, False, True, False]
    source, stdout = check(rec, tmp_path, notebook=True)
    assert "# loss = loss_fn(out, y)" in source
    assert "print('refused:', 'loss needs an output: run forward first')" in source
    assert stdout.splitlines()[:3] == [
        "refused: loss needs an output: run forward first",
        "refused: backward needs a loss: run loss first",
        "refused: backward needs a loss: run loss first",
    ]


def test_a_refusal_is_known_by_its_message_too() -> None:
    # a Lab put back from a capture has no graph: it refuses loss although forward ran before
    ran = [{"op": "line", "entry": e, "ok": True} for e in PRESET["correct"]]
    refused = {"op": "line", "entry": "loss", "ok": False}
    refusal = {**refused, "error": "loss needs an output: run forward first"}
    source = export.script(make_setup("neuron"), [*ran, refusal], threads=1)
    assert source.count("\nloss = loss_fn(out, y)\n") == 1
    assert "\n# loss = loss_fn(out, y)\nprint('refused:'" in source
    source = export.script(make_setup("neuron"), [*ran, {**refused, "error": "other"}], threads=1)
    assert "try:\n    loss = loss_fn(out, y)\nexcept (RuntimeError, ValueError) as error:" in source


def test_no_loss_yet(tmp_path: Path) -> None:
    rec = Recorder(make_setup("moons"))
    rec.lines(["forward", "zero_grad", "step"])
    source, _ = check(rec, tmp_path)
    assert rec.expected()["loss"] is None
    assert "last_loss = None" in source


def test_empty_log(tmp_path: Path) -> None:
    rec = Recorder(make_setup("parabola"))
    check(rec, tmp_path, notebook=True)


def test_parabola_with_options(tmp_path: Path) -> None:
    setup = make_setup(
        "parabola",
        0.09,
        options={"curvature": 20.0, "theta_star": -0.7},
        program=PRESET["skip_zero_grad"],
    )
    rec = Recorder(setup)
    rec.run(10)
    rec.program(list(PRESET["correct"]))
    rec.run(10)
    source, _ = check(rec, tmp_path, notebook=True)
    assert "h, theta_star = 20.0, -0.7" in source
    assert rec.expected()["params"][0]["name"] == "theta"


def test_divergence_spells_non_finite_numbers(tmp_path: Path) -> None:
    rec = Recorder(make_setup("neuron", 3.0))
    rec.run(60)
    expected = rec.expected()
    assert "NaN" in json.dumps(expected) or "Infinity" in json.dumps(expected)
    check(rec, tmp_path)


def test_bad_logs_are_refused() -> None:
    setup = make_setup("neuron")
    with pytest.raises(ValueError, match="unknown op"):
        export.script(setup, [{"op": "reset"}], threads=1)
    with pytest.raises(ValueError, match="unknown entry"):
        export.script(setup, [{"op": "line", "entry": "print", "ok": True}], threads=1)
    with pytest.raises(ValueError, match="ran before its input existed"):
        export.script(setup, [{"op": "line", "entry": "loss", "ok": True}], threads=1)
    with pytest.raises(ValueError, match="unknown scenario"):
        export.script({**setup, "scenario": "mnist"}, [], threads=1)
    # nothing of the log reaches the code unchecked: not even a comment line
    sneaky = ["step\nimport os"]
    with pytest.raises(ValueError, match="unknown program entries"):
        export.script(setup, [{"op": "program", "program": sneaky}], threads=1)
    with pytest.raises(ValueError, match="unknown program entries"):
        export.notebook({**setup, "program": sneaky}, [], threads=1)
    with pytest.raises(ValueError, match="not a session log"):
        export.script(setup, [{"op": "lr"}], threads=1)
    with pytest.raises(ValueError, match="not a session log"):
        export.script(setup, ["step"], threads=1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="accumulate"):
        export.script({**setup, "accumulate": 0}, [], threads=1)
    parabola = make_setup("parabola", options={"curvature": 2.0, "x\nimport os": 1.0})
    assert "import os" not in export.script(parabola, [], threads=1)


# -- random sessions --------------------------------------------------------------

entries = st.sampled_from(sorted(export.EXPORTABLE))
actions = st.one_of(
    st.tuples(st.just("line"), entries),
    st.tuples(st.just("next"), st.integers(1, 6)),
    st.tuples(st.just("run"), st.integers(1, 4)),
    st.tuples(st.just("lr"), st.sampled_from([0.01, 0.05, 0.1, 0.37])),
    st.tuples(st.just("program"), st.lists(entries, min_size=1, max_size=7)),
)
optimizers = st.sampled_from(
    [
        {"kind": "sgd", "momentum": 0.0, "weight_decay": 0.0},
        {"kind": "sgd", "momentum": 0.5, "weight_decay": 0.1},
        {"kind": "adam", "betas": [0.9, 0.999], "weight_decay": 0.0},
    ]
)


def test_random_sessions_on_the_neuron(tmp_path: Path) -> None:
    """Hypothesis draws the sessions; their scripts then run in one interpreter (a process
    per example would spend most of its time importing torch)."""
    recs: list[Recorder] = []

    @settings(max_examples=10, deadline=None, database=None)
    @given(
        k=st.sampled_from([1, 2, 4]),
        optimizer=optimizers,
        program=st.lists(entries, min_size=1, max_size=7),
        steps=st.lists(actions, max_size=10),
    )
    def session(
        k: int, optimizer: dict[str, Any], program: list[str], steps: list[tuple[str, Any]]
    ) -> None:
        rec = Recorder(make_setup("neuron", optimizer=optimizer, accumulate=k, program=program))
        for kind, value in steps:
            if kind == "line":
                rec.line(value)
            elif kind == "next":
                for _ in range(value):
                    rec.next()
            elif kind == "run":
                rec.run(value)
            elif kind == "lr":
                rec.lr(value)
            else:
                rec.program(value)
        recs.append(rec)

    session()
    assert len(recs) == 10
    check_all(recs, tmp_path)


def test_clipping_logging_and_the_mode_export(tmp_path: Path) -> None:
    """clip_grad_norm_ (max_norm 0.5, before backward too), train/eval and both running_loss
    lines: the script prints the session's numbers exactly."""
    program = ["train", "forward", "loss", "zero_grad", "backward", "clip_grad_norm", "step"]
    rec = Recorder({**make_setup("moons", program=program), "max_norm": 0.5})
    rec.run(3)
    rec.program(["eval", "clip_grad_norm", "forward", "loss", "log_item", "backward", "log_tensor"])
    rec.run(2)
    source, _ = check(rec, tmp_path)
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)" in source
    assert "running_loss = 0.0" in source and "running_loss += loss.item()" in source


def test_dropout_batchnorm_and_softmax_run_to_the_same_numbers(tmp_path: Path) -> None:
    """Dropout's masks (torch's generator seeded right before the model, as the Lab's session),
    BatchNorm's running statistics through train and eval, softmax before CrossEntropyLoss,
    and both with micro-batches: each script prints its session's numbers exactly."""
    mode = ["train", "forward", "loss", "zero_grad", "backward", "step", "eval", "forward", "loss"]
    recs = []
    for extra, k in (
        ({"dropout": 0.5, "batchnorm": True}, 1),
        ({"dropout": 0.25}, 2),
        ({"softmax_before_loss": True}, 1),
        ({"dropout": 0.5, "batchnorm": True, "softmax_before_loss": True, "dtype": "float32"}, 1),
    ):
        rec = Recorder({**make_setup("moons", accumulate=k), **extra})
        rec.run(3)
        if k == 1:
            rec.program(mode)
            rec.run(2)
        recs.append(rec)
    check_all(recs, tmp_path, notebook=True)
    source = export.script(recs[0].setup, recs[0].events, threads=1)
    assert "nn.Linear(2, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5)," in source
    assert "loss = loss_fn(out.softmax(dim=1), y)" in export.script(
        recs[2].setup, recs[2].events, threads=1
    )


def test_what_a_session_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="moons only"):
        export.script({**make_setup("neuron"), "softmax_before_loss": True}, [], threads=1)
    with pytest.raises(ValueError, match="dropout"):
        export.notebook({**make_setup("moons"), "dropout": 1.0}, [], threads=1)


def test_the_export_stands_apart() -> None:
    """It uses the engine's catalogue only: no web layer, and the engine does not use it."""
    package = Path(export.__file__).parent
    root = package.parent
    outside: set[str | None] = set()
    ours: set[str | None] = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                outside |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                (ours if module.split(".")[0] == "app" else outside).add(module)
    assert outside <= {"__future__", "math", "textwrap", "dataclasses", "typing"}
    assert ours <= {
        "app.engine",
        "app.spec",
        "app.spec.data",  # a spec's rows (issue 28)
        "app.engine.entries",
        "app.spec.layers",
        "app.engine.program",
        "app.spec.spec",
        "app.spec.tables",  # the CSV files a spec names, parsed once
        "app.export",
        "app.export.setup",
        "app.export.units",
        "app.export.formats",
    }
    for path in (root / "engine").glob("*.py"):
        lines = path.read_text().splitlines()
        assert not [line for line in lines if "import" in line and "export" in line], path
