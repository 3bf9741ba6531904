"""``GET /script``: the session up to its current moment as plain PyTorch, run in a fresh
``python -I`` outside the project, prints exactly the Session's numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import nbformat


def run_python(code: str, where: Path) -> dict[str, Any]:
    path = where / "session.py"
    path.write_text(code)
    done = subprocess.run(
        [sys.executable, "-I", str(path)], cwd=where, capture_output=True, text=True, timeout=300
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
