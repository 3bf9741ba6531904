"""``GET /script``: the session up to its current moment as plain PyTorch, run in a fresh
``python -I`` outside the project, prints exactly the Session's numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import nbformat
import torch
from nbclient import NotebookClient

from app.settings import Settings
from support.serve import serve

# More intra-op threads than the server computes with (1 by default): a student's laptop.
# (MKL_DYNAMIC=FALSE: else torch starts with no more threads than the machine has cores.)
MORE_THREADS = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "MKL_DYNAMIC": "FALSE"}


def run_python(code: str, where: Path) -> dict[str, Any]:
    path = where / "session.py"
    path.write_text(code)
    done = subprocess.run(
        [sys.executable, "-I", str(path)],
        cwd=where,
        env=os.environ | MORE_THREADS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return printed


def numbers(s: dict[str, Any]) -> dict[str, Any]:
    params = [{"name": p["name"], "value": p["value"], "grad": p["grad"]} for p in s["params"]]
    return {"params": params, "loss": s["loss"]}


def test_the_script_prints_the_sessions_numbers(client: httpx.Client, tmp_path: Path) -> None:
    """moons with skip_zero_grad, an lr change, PyTorch's own error (both bugs: backward after a
    step moved the weights) and a rewind: the script stops where the session stands."""
    sid = client.post("/api/sessions", json={"scenario": "moons", "skip_zero_grad": True}).json()[
        "id"
    ]
    client.post(f"/api/sessions/{sid}/run", json={"iterations": 20})
    client.patch(f"/api/sessions/{sid}", json={"lr": 0.1, "step_first": True})
    r = client.post(f"/api/sessions/{sid}/run", json={"iterations": 2})
    assert r.status_code == 409 and "inplace" in r.json()["detail"]
    client.patch(f"/api/sessions/{sid}", json={"step_first": False})  # the cursor on backward
    client.post(f"/api/sessions/{sid}/forward")  # a fresh graph, out of order
    client.post(f"/api/sessions/{sid}/loss")
    client.post(f"/api/sessions/{sid}/run", json={"iterations": 2})
    s = client.post(f"/api/sessions/{sid}/back").json()
    assert (s["moment"], s["moments"]) == (90, 91)
    r = client.get(f"/api/sessions/{sid}/script")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/x-python")
    assert 'filename="loop_stepper.py"' in r.headers["content-disposition"]
    code = r.text
    assert "import torch" in code and "app." not in code and "for _ in range(" in code
    assert "except RuntimeError" in code and 'group["lr"] = 0.1' in code
    assert run_python(code, tmp_path) == numbers(s)


def test_the_notebook_is_valid_and_runs_to_the_same_numbers(
    client: httpx.Client, tmp_path: Path
) -> None:
    sid = client.post("/api/sessions", json={"preset_free": 1}).status_code  # a 422: unknown key
    assert sid == 422
    sid = client.post("/api/sessions", json={}).json()["id"]
    client.post(f"/api/sessions/{sid}/run", json={"iterations": 3})
    client.post(f"/api/sessions/{sid}/forward")
    s = client.post(f"/api/sessions/{sid}/loss").json()
    r = client.get(f"/api/sessions/{sid}/script", params={"format": "ipynb"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ipynb+json"
    nb = nbformat.reads(r.text, as_version=4)
    nbformat.validate(nb)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert run_python(code, tmp_path) == numbers(s)
    assert client.get(f"/api/sessions/{sid}/script", params={"format": "pdf"}).status_code == 422
    assert client.get("/api/sessions/nope/script").status_code == 404


def test_batchnorm_in_a_script_and_a_real_kernel_with_more_threads(
    client: httpx.Client, tmp_path: Path
) -> None:
    """The issue's session: moons with BatchNorm, one iteration on the server's one thread.
    The script under ``python -I`` and the notebook run by nbclient in a real ipykernel, each
    with 4 threads, print exactly its numbers."""
    sid = client.post("/api/sessions", json={"scenario": "moons", "batchnorm": True}).json()["id"]
    s = client.post(f"/api/sessions/{sid}/run", json={"iterations": 1}).json()
    code = client.get(f"/api/sessions/{sid}/script").text
    assert "torch.set_num_threads(1)  # the session's count" in code
    assert run_python(code, tmp_path) == numbers(s)
    # without that line the script sums BatchNorm's statistics on 4 threads: other digits
    assert run_python(code.replace("torch.set_num_threads(1)", "pass"), tmp_path) != numbers(s)
    r = client.get(f"/api/sessions/{sid}/script", params={"format": "ipynb"})
    assert run_kernel(nbformat.reads(r.text, as_version=4), tmp_path) == numbers(s)


def run_kernel(nb: nbformat.NotebookNode, where: Path) -> dict[str, Any]:
    """Every cell in a fresh ipykernel (the venv's python3 kernelspec), offline, in ``where``,
    its Jupyter and IPython folders there too; the last cell's output as JSON. A first cell
    checks that the kernel is this venv's Python and starts with the 4 threads."""
    probe = "import sys, torch\nprint(sys.executable, torch.get_num_threads())"
    nb.cells.insert(0, nbformat.v4.new_code_cell(probe))
    env = os.environ | MORE_THREADS
    env |= {f"JUPYTER_{d}_DIR": str(where / d.lower()) for d in ("CONFIG", "DATA", "RUNTIME")}
    env["IPYTHONDIR"] = str(where / "ipython")
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(where)}}
    )
    client.execute(env=env)
    assert nb.cells[0].outputs[0]["text"].split() == [sys.executable, "4"]
    printed: dict[str, Any] = json.loads(nb.cells[-1].outputs[-1]["text"].splitlines()[-1])
    return printed


def test_a_server_with_two_threads_exports_them(tmp_path: Path) -> None:
    """LOOP_STEPPER_TORCH_THREADS=2: the script says so, sets 2, and with 4 threads on this
    machine prints the session's numbers."""
    before = torch.get_num_threads()
    try:
        settings = Settings(torch_threads=2, data=str(tmp_path / "store"))
        with serve(settings) as url, httpx.Client(base_url=url, timeout=60) as client:
            body = {"scenario": "moons", "batchnorm": True}
            sid = client.post("/api/sessions", json=body).json()["id"]
            s = client.post(f"/api/sessions/{sid}/run", json={"iterations": 3}).json()
            code = client.get(f"/api/sessions/{sid}/script").text
            book = client.get(f"/api/sessions/{sid}/script", params={"format": "ipynb"})
    finally:
        torch.set_num_threads(before)  # create_app set it for the whole process
    assert "torch.set_num_threads(2)  # the session's count" in code
    assert "# The session was computed with 2 intra-op threads" in code
    assert "computed with 2 intra-op threads" in book.json()["cells"][0]["source"]
    assert run_python(code, tmp_path) == numbers(s)
