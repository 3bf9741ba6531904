"""``loop_stepper`` stands alone (issue 45): the wheel built from this checkout, installed with
``--no-deps`` into a fresh virtual environment beside torch and numpy alone (the lean install a
student's Colab or an engineer's project has), works from a project folder that holds its own
``app`` package: ``record`` gives plain PyTorch's numbers, ``watch`` names a missing zero_grad,
``loop-stepper doctor`` runs a script that imports the project's own ``app``, no module of ours
named ``app`` is ever imported, and ``loop-stepper`` (the server) says how to install it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.recorder.test_record import worked

ROOT = Path(__file__).resolve().parent.parent
SERVER_PACKAGES = {"fastapi", "uvicorn", "psycopg", "psycopg-pool", "pyjwt", "scikit-learn",
                   "jinja2", "pydantic", "pydantic-settings", "isal"}  # fmt: skip


def locked(name: str) -> str:
    """``name==version`` as requirements.lock pins it."""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.strip()
    raise AssertionError(f"{name} is not in requirements.lock")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        check=True,
    )  # fmt: skip
    return next(out.glob("loop_stepper-*.whl"))


@pytest.fixture(scope="module")
def lean(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv: torch and numpy at the lock's versions (with torch's own dependencies),
    then the wheel with ``--no-deps``. Yields its ``bin``."""
    home = tmp_path_factory.mktemp("lean")
    venv.create(home / "venv", with_pip=True)
    python = home / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, locked("torch"), locked("numpy"), "-c", str(ROOT / "requirements.lock")], check=True
    )
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    yield home / "venv" / "bin"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project folder with its own ``app`` package (FastAPI's and Flask's layout)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("WHOSE = 'the user'\n")
    (tmp_path / "app" / "models.py").write_text(
        "import torch\n\ndef make():\n    return torch.nn.Linear(1, 1)\n"
    )
    return tmp_path


def run(bin: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{bin}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


IN_THE_PROJECT = f"""\
import json, sys
import loop_stepper

trace = loop_stepper.record({worked()!r}, {{}}, iterations=2)
after = [
    {{p["name"]: [p["value"], p["grad"]] for p in m["params"]}}
    for m in trace.moments
    if m["code"] in ("loss.backward()", "optimizer.step()")
]
losses = [m["loss"] for m in trace.moments if m["code"] == "loss = loss_fn(out, y)"]
print(json.dumps({{
    "after": after,
    "losses": losses,
    "diagnoses": trace.diagnoses,
    "app": sorted(m for m in sys.modules if m == "app" or m.startswith("app.")),
}}))
"""

WATCHED = """\
import json, sys
import torch
import loop_stepper

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
with loop_stepper.watch() as doctor:
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
print(json.dumps({
    "bugs": [(d["bug"], d["line"]) for d in doctor.diagnoses],
    "app": sorted(m for m in sys.modules if m == "app" or m.startswith("app.")),
}))
"""

SCRIPT = """\
import torch
from app.models import make
import app

assert app.WHOSE == "the user", app.__file__
model = make()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 1), torch.randn(8, 1)
for _ in range(3):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
"""


def plain_worked() -> tuple[list[dict[str, list[Any]]], list[float]]:
    """The worked example in plain PyTorch: after each backward and step, each parameter's
    value and .grad; each iteration's loss."""
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    after: list[dict[str, list[Any]]] = []
    losses: list[float] = []

    def read() -> None:
        after.append({
            f"model.{n}": [p.tolist(), None if p.grad is None else p.grad.tolist()]
            for n, p in model.named_parameters()
        })  # fmt: skip

    for _ in range(2):
        loss = nn.MSELoss()(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        read()
        optimizer.step()
        read()
    return after, losses


def test_the_wheels_requirements_are_torch_and_numpy_and_the_servers_its_extra(
    wheel: Path,
) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
        entry_points = z.read(next(n for n in z.namelist() if n.endswith("entry_points.txt")))
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in meta.decode().splitlines()
        if line.startswith("Requires-Dist: ")
    ]
    base = sorted(r.split(">")[0].split("=")[0] for r in requires if ";" not in r)
    assert base == ["numpy", "torch"]
    assert "torch>=2.1" in requires  # a range: never a pin over the student's torch
    by_extra: dict[str, set[str]] = {}
    for r in requires:
        if ";" in r:
            name = r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip().lower()
            extra = r.split("extra ==")[1].strip().strip("\"'")
            by_extra.setdefault(extra, set()).add(name)
    assert by_extra["server"] == SERVER_PACKAGES
    assert not SERVER_PACKAGES & by_extra["notebook"]
    assert by_extra["notebook"] == {"anywidget", "ipython"}
    assert "loop-stepper = loop_stepper.cli:main" in entry_points.decode()


def test_record_in_a_project_with_its_own_app(lean: Path, project: Path) -> None:
    (project / "recorded.py").write_text(IN_THE_PROJECT)
    done = run(lean, [str(lean / "python"), "recorded.py"], project)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    after, losses = plain_worked()
    assert got["after"] == after  # bit for bit: JSON round-trips a float exactly
    assert got["losses"] == losses
    assert after[0]["model.weight"][1] == [[-23.5]] and after[0]["model.bias"][1] == [-8.0]
    assert losses[0] == 18.5
    assert got["diagnoses"] == []
    assert got["app"] == []


def test_watch_names_a_missing_zero_grad(lean: Path, project: Path) -> None:
    (project / "watched.py").write_text(WATCHED)
    done = run(lean, [str(lean / "python"), "watched.py"], project)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert ["skip_zero_grad", 12] in got["bugs"]
    assert got["app"] == []


def test_the_doctor_runs_a_script_that_imports_its_own_app(lean: Path, project: Path) -> None:
    (project / "train.py").write_text(SCRIPT)
    done = run(lean, [str(lean / "loop-stepper"), "doctor", "train.py", "--json", "-"], project)
    assert done.returncode == 1, done.stderr  # 1: bugs found
    found = json.loads(done.stdout)
    assert [(d["bug"], d["line"]) for d in found["diagnoses"]] == [("skip_zero_grad", 11)]


def test_the_server_without_its_extra_says_how_to_install_it(lean: Path, project: Path) -> None:
    done = run(lean, [str(lean / "loop-stepper")], project)
    assert done.returncode == 2
    assert 'pip install "loop-stepper[server]"' in done.stderr
    assert "Traceback" not in done.stderr
