"""``pip install "loop-stepper[notebook]"`` where students are: beside the torch they have.

Colab's torch is a CUDA build a ``torch==`` pin would uninstall; the package declares
``torch>=2.1``. The built wheel is resolved by pip (``--dry-run --report``, against PyPI) in a
fresh virtual environment that already holds a torch 2.11.0: pip must keep it. That torch is a
distribution of that name and version made here (a real 2.11 is a multi-GB CUDA download on
this machine): what is tested is pip's resolution against our metadata, not torch."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def wheel_of(tmp: Path) -> Path:
    out = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        check=True,
    )  # fmt: skip
    return next(out.glob("loop_stepper-*.whl"))


def installed_torch(tmp: Path, version: str) -> Path:
    """A distribution ``torch`` at ``version``: metadata and an empty module, as a wheel."""
    name = f"torch-{version}-py3-none-any.whl"
    path = tmp / name
    info = f"torch-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("torch/__init__.py", f"__version__ = {version!r}\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return path


def test_the_wheel_holds_the_widget_and_the_public_package(tmp_path: Path) -> None:
    names = zipfile.ZipFile(wheel_of(tmp_path)).namelist()
    assert "loop_stepper/__init__.py" in names
    assert {"loop_stepper/notebook/widget.js", "loop_stepper/notebook/widget.css"} <= set(names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel_of(tmp_path)).read(metadata).decode()
    assert "Requires-Dist: torch>=2.1" in text
    assert 'Requires-Dist: anywidget>=0.9; extra == "notebook"' in text


def test_installing_beside_another_torch_keeps_it(tmp_path: Path) -> None:
    env_dir = tmp_path / "student"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    torch = installed_torch(tmp_path, "2.11.0")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", str(torch)], check=True)
    wheel = wheel_of(tmp_path)
    report = tmp_path / "report.json"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--dry-run", "--report", str(report),
         f"{wheel}[notebook]"],
        check=True,
    )  # fmt: skip
    planned = {
        i["metadata"]["name"].lower(): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert "torch" not in planned  # kept as it is, not upgraded, not replaced
    assert {"loop-stepper", "anywidget"} <= set(planned)
    assert not [n for n in planned if n.startswith(("nvidia-", "triton"))]
