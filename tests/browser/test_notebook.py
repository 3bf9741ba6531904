"""The widget in a real JupyterLab 4 in Chromium: a notebook's ``%load_ext loop_stepper`` and a
``%%step`` cell run (Run → Run All Cells), then Next line steps the user's own loop in the
widget, with plain PyTorch's numbers, offline, axe clean."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from support.process import free_port
from tests.browser.conftest import attach
from tests.browser.test_a11y import AXE

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext loop_stepper",
    """%%step --iterations 2
import torch
from torch import nn

x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
model = nn.Linear(1, 1)
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(100):
    out = model(x)
    loss = loss_fn(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()""",
]


def notebook(cells: list[str]) -> dict[str, Any]:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    empty: dict[str, Any] = {"metadata": {}, "outputs": [], "execution_count": None}
    return {
        "cells": [{"cell_type": "code", "source": c, **empty} for c in cells],
        "metadata": {"kernelspec": kernel},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


NOTEBOOKS: dict[str, Path] = {}  # each lab's root folder, by its URL


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """JupyterLab on a free loopback port, no token, its own config, data and runtime dirs
    (the venv's share/jupyter still gives it the widget extensions), the notebook beside it."""
    root = tmp_path_factory.mktemp("lab")
    home = root / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    port = free_port()
    log = (root / "lab.log").open("wb")
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
        f"--port={port}", "--ServerApp.token=", "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    NOTEBOOKS[url] = root
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError((root / "lab.log").read_text())
            try:
                if httpx.get(f"{url}/api", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        else:
            raise RuntimeError("jupyter lab did not answer /api in 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def run_all(browser: Browser, lab: str, name: str, cells: list[str]) -> Iterator[Page]:
    """A new notebook of ``cells`` opened, Run All Cells, the widget drawn."""
    (NOTEBOOKS[lab] / name).write_text(json.dumps(notebook(cells)))
    context = browser.new_context(bypass_csp=True, viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    seen = attach(page)
    page.goto(f"{lab}/lab/tree/{name}?reset")  # a workspace of its own: no earlier tab
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(cells), timeout=60_000)
    # The kernel must be up first: JupyterLab 4.6 enables Run All before it is, and a cell run
    # with no kernel yet is silently left unrun (its prompt stays "[ ]:"; a CI run failed so)
    idle = page.get_by_role("button", name=re.compile(r"\| Idle$"))
    expect(idle).to_be_visible(timeout=90_000)
    # "Run All" in JupyterLab 4.6, "Run All Cells" before it
    run_all = page.get_by_role("menuitem", name=re.compile(r"^Run All( Cells)?\s*$"))
    prompts = page.locator(".jp-Notebook .jp-InputPrompt")
    for attempt in range(3):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        expect(run_all).not_to_have_attribute("aria-disabled", "true", timeout=30_000)
        run_all.click()
        try:  # the first cell queued or run: "[*]:" or "[1]:"
            expect(prompts.first).not_to_have_text(re.compile(r"^\[ \]:$"), timeout=20_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    expect(page.get_by_role("button", name="Next line")).to_be_visible(timeout=90_000)
    yield page
    # nothing from outside: JupyterLab, its extensions and the widget all come from the server
    outside = [u for u in seen.urls if not u.startswith((lab, "blob:", "data:"))]
    assert outside == []
    context.close()


@pytest.fixture()
def stepped(browser: Browser, lab: str, request: pytest.FixtureRequest) -> Iterator[Page]:
    """The worked example's notebook, run."""
    yield from run_all(browser, lab, f"{request.node.name.split('[')[0]}.ipynb", CELLS)


def widget(page: Page) -> Any:
    return page.locator(".loop-stepper")


def test_next_line_steps_the_users_own_loop_in_jupyterlab(stepped: Page) -> None:
    page = stepped
    box = widget(page)
    expect(box.locator(".ls-where")).to_have_text("moment 0 of 19 — the start")
    expect(box.locator(".ls-ended")).to_contain_text("stopped after 2 iterations")
    nxt = box.get_by_role("button", name="Next line")
    grads = box.locator('[data-store="grad"]')
    params = box.locator('[data-store="params"]')
    while "loss.backward()" not in (box.locator(".ls-where").text_content() or ""):
        nxt.click()
    # after the first backward: .grad is (-23.5, -8), the graph freed, the loss 18.5
    expect(grads.locator(".value")).to_have_text(["-23.5", "-8"])
    expect(box.locator('[data-store="graph"] .status-word')).to_have_text("freed")
    expect(box.locator(".loss-value .value")).to_have_text("18.5")
    expect(grads).to_have_attribute("data-io", "read write")
    expect(box.locator('.source li[aria-current="step"]')).to_have_text("    loss.backward()")
    nxt.click()  # optimizer.step(): w = 1.175, b = 0.4 (float32, as PyTorch holds them)
    expect(params.locator(".value")).to_have_text(["1.175", "0.4"])
    nxt.click()
    nxt.click()
    nxt.click()  # iteration 2's zero_grad: None, not zeros
    expect(box.locator(".ls-iteration")).to_have_text("iteration 2")
    expect(grads.locator(".none-word")).to_have_count(2)
    # Back and the page's keys step back and forth without the kernel
    box.get_by_role("button", name="Back").click()
    expect(grads.locator(".value")).to_have_text(["-23.5", "-8"])
    box.focus()
    page.keyboard.press("n")
    expect(grads.locator(".none-word")).to_have_count(2)


def test_the_widget_is_axe_clean(stepped: Page) -> None:
    page = stepped
    box = widget(page)
    for _ in range(12):
        box.get_by_role("button", name="Next line").click()
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        """() => axe.run(document.querySelector('.loop-stepper'),
             {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"""
    )
    found = [
        f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in result["violations"]
    ]
    assert found == []


def test_the_doctors_diagnosis_shows_at_its_moment(browser: Browser, lab: str) -> None:
    """Without zero_grad, the second backward adds onto the used .grad: the widget names
    skip_zero_grad under that moment (line 15, the backward once zero_grad's line is gone),
    and only there."""
    cells = [CELLS[0], CELLS[1].replace("    optimizer.zero_grad()\n", "")]
    for page in run_all(browser, lab, "doctor.ipynb", cells):
        box = widget(page)
        nxt = box.get_by_role("button", name="Next line")
        diagnosis = box.locator(".ls-diagnoses .diagnosis")
        where = box.locator(".ls-where")
        backwards = 0
        for _ in range(40):
            nxt.click()
            if "loss.backward()" in (where.text_content() or ""):
                backwards += 1
                if backwards == 2:
                    break
            expect(diagnosis).to_have_count(0)  # every moment before it: nothing named
        expect(box.locator(".ls-iteration")).to_have_text("iteration 2")
        expect(diagnosis).to_have_count(1)
        expect(diagnosis).to_contain_text("line 15: skip_zero_grad — this backward() added")
        nxt.click()
        expect(diagnosis).to_have_count(0)


EARLIER = """\
import torch
from torch import nn

def train(model, optimizer, x, y, n):
    loss_fn = nn.MSELoss()
    for _ in range(n):
        out = model(x)
        loss = loss_fn(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()

x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[2.0], [3.0], [5.0], [6.0]])
model = nn.Linear(1, 1)
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)"""


def test_a_function_of_an_earlier_cell_shows_that_cells_source(browser: Browser, lab: str) -> None:
    """The %%step cell calls ``train`` from the cell before it: the widget steps the statements
    inside ``train``, showing that cell's source with the statement marked, and the numbers of
    the worked example (the same loop, in a function)."""
    cells = [CELLS[0], EARLIER, "%%step --iterations 2\nfinal = train(model, optimizer, x, y, 100)"]
    for page in run_all(browser, lab, "earlier.ipynb", cells):
        box = widget(page)
        nxt = box.get_by_role("button", name="Next line")
        title = box.locator(".ls-title")
        marked = box.locator('.source li[aria-current="step"]:visible')
        expect(box.locator(".ls-where")).to_have_text("moment 0 of 11 — the start")
        expect(title).to_have_text("The cell")
        expect(box.locator(".source:visible li")).to_have_text(
            ["final = train(model, optimizer, x, y, 100)"]
        )
        nxt.click()
        expect(title).to_have_text("train() in In [2]")
        expect(box.get_by_role("region", name="train() in In [2]")).to_be_visible()
        expect(marked).to_have_text("    loss_fn = nn.MSELoss()")
        expect(box.locator(".source:visible li")).to_have_count(len(EARLIER.splitlines()))
        expect(box.locator(".ls-where")).to_contain_text("after line 5 of In [2]")
        while "loss.backward()" not in (box.locator(".ls-where").text_content() or ""):
            nxt.click()
        expect(marked).to_have_text("        loss.backward()")
        grads = box.locator('[data-store="grad"]')
        expect(grads.locator(".value")).to_have_text(["-23.5", "-8"])
        nxt.click()
        expect(box.locator('[data-store="params"] .value')).to_have_text(["1.175", "0.4"])
        expect(box.locator(".ls-ended")).to_contain_text("inside train() of In [2]")
        back = box.get_by_role("button", name="Back")
        for _ in range(6):  # back to the start: the recorded cell again
            back.click()
        expect(back).to_be_disabled()
        expect(title).to_have_text("The cell")
