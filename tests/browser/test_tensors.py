"""A big tensor on the page (issue 28): its summary as a heat map with its numbers, a block's
exact elements fetched through GET /api/sessions/{id}/tensor, by click and by keyboard, and
"explain this number" on a .grad element.

No scenario has a tensor past 256 elements yet, so the test rewrites the Sessions the page receives
(Playwright's routing, nothing else touched): moons' 16 x 16 weight ``2.weight`` and its .grad
arrive as the summaries the engine makes of their real values (``loop_stepper.stores.tensors``), in
4 x 4 blocks of 4 x 4 elements. Everything else is the real page against the real server: the paging
requests, the elements, the explanation.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import numpy as np
import pytest
import torch
from playwright.sync_api import Browser, Page, Route, expect

from loop_stepper.stores import tensors

from .conftest import attach
from .test_a11y import AXE_CONTEXT, violations
from .test_page import next_line

pytestmark = pytest.mark.browser
BIG = "2.weight"


def summarized(nested: Any) -> Any:
    """The engine's summary of these values, its heat map in 4 x 4 blocks (not 16 x 16 cells
    of one element: a block then holds 16 elements, on 4 rows)."""
    t = torch.tensor(nested, dtype=torch.float64)
    summary = dict(tensors.summary(t))
    summary["heatmap"] = tensors.heat_map(t.numpy().reshape(16, 16), side=4)
    return summary


def rewrite(route: Route) -> None:
    response = route.fetch()
    body = response.body()
    try:
        session = json.loads(body)
    except ValueError:
        session = None
    if isinstance(session, dict) and "params" in session:
        for p in session["params"]:
            if p["name"] == BIG:
                p["value"] = summarized(p["value"])
                if p["grad"] is not None:
                    p["grad"] = summarized(p["grad"])
        body = json.dumps(session).encode()
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    route.fulfill(status=response.status, headers=headers, body=body)


def exactly(title: str | None) -> float:
    """The number a value's title says it is exactly ("… (exactly 0.123)")."""
    found = re.search(r"exactly (\S+)\)$", title or "")
    assert found, title
    return float(found.group(1))


def test_a_summary_shows_a_heat_map_and_pages_a_blocks_elements(
    browser: Browser, base_url: str
) -> None:
    # CSP bypassed only to let axe in at the end (as test_a11y.py does)
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    try:
        page = context.new_page()
        watch = attach(page)
        shown_and_paged(page, base_url)
        assert violations(page) == []  # the maps, their numbers and an open block's elements
        watch.check(base_url)
    finally:
        context.close()


def shown_and_paged(page: Page, base_url: str) -> None:
    # every answer that is a Session (created, each line), not the pages of elements
    page.route(
        re.compile(
            r"/api/sessions(/[^/?]+(/(next|forward|loss|zero_grad|backward|step))?)?(\?.*)?$"
        ),
        rewrite,
    )
    page.goto("/?scenario=moons")
    page.wait_for_selector("body[data-ready='1']")
    sid: str = page.evaluate("window.loopStepper.session.id")
    params = page.locator(f'section[aria-label="Parameters"] .tensor[data-name="{BIG}"]')
    summap = params.locator(".summap")
    expect(summap.locator(".bcell")).to_have_count(16)
    real = httpx.get(f"{base_url}/api/sessions/{sid}").json()
    weight = next(p for p in real["params"] if p["name"] == BIG)["value"]
    summary = summarized(weight)
    mean = params.locator('[data-stat="mean"]')
    expect(mean).to_have_attribute("title", re.compile(".+"))
    assert float(mean.get_attribute("title") or "nan") == summary["mean"]
    assert (
        float(params.locator('[data-stat="norm"]').get_attribute("title") or "nan")
        == (summary["norm"])
    )
    expect(params.locator(".sumhist span")).to_have_count(16)
    label = summap.get_attribute("aria-label") or ""
    assert label.startswith(f"{BIG}, 16 by 16, 256 elements as 4 by 4 block means"), label
    # a click on block (1, 2): rows 4-7, columns 8-11, paged from the server
    summap.locator('.bcell[data-b="6"]').click()
    listed = params.locator(".sumelements .value")
    expect(listed).to_have_count(16)
    grid = np.array(weight)
    indices = [listed.nth(i).get_attribute("data-index") for i in range(16)]
    assert indices == [f"{r},{c}" for r in range(4, 8) for c in range(8, 12)]
    for i, (r, c) in enumerate((r, c) for r in range(4, 8) for c in range(8, 12)):
        assert exactly(listed.nth(i).get_attribute("title")) == grid[r, c]
    expect(params.locator(".sumhead")).to_contain_text("rows 4\u20137, columns 8\u201311")
    # the keyboard: focus the map (on the block clicked), arrows to block (0, 1), Enter
    summap.focus()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    expect(params.locator(".sumhead")).to_contain_text("rows 0\u20133, columns 4\u20137")
    expect(listed.first).to_have_attribute("data-index", "0,4")

    # .grad: None until backward, then its summary; an element explains itself
    grads = page.locator(f'section[aria-label="Gradients"] .tensor[data-name="{BIG}"]')
    next_line(page, 4)  # forward, loss, zero_grad, backward
    gmap = grads.locator(".summap")
    expect(gmap.locator(".bcell")).to_have_count(16)
    gmap.locator('.bcell[data-b="5"]').click()  # rows 4-7, columns 4-7
    glisted = grads.locator(".sumelements .value")
    expect(glisted).to_have_count(16)
    real = httpx.get(f"{base_url}/api/sessions/{sid}").json()
    grad = np.array(next(p for p in real["params"] if p["name"] == BIG)["grad"])
    assert exactly(glisted.first.get_attribute("title")) == grad[4, 4]
    glisted.first.click()
    dialog = page.locator("#explain")
    expect(dialog).to_be_visible()
    expect(page.locator("#explain-title")).to_contain_text(f"{BIG}.grad element {4 * 16 + 4} =")
    page.locator("#explain-close").click()
    # the open block follows the session: after step, its elements are the new ones
    next_line(page)
    real = httpx.get(f"{base_url}/api/sessions/{sid}").json()
    weight = np.array(next(p for p in real["params"] if p["name"] == BIG)["value"])
    block = [(r, c) for r in range(4) for c in range(4, 8)]
    moved = [k for k, (r, c) in enumerate(block) if weight[r, c] != grid[r, c]]
    assert moved, "step moved none of block (0, 1)"
    k = moved[0]
    r, c = block[k]
    after = re.escape(f"exactly {float(weight[r, c])!r})")
    expect(listed.nth(k)).to_have_attribute("title", re.compile(after))
    assert [exactly(listed.nth(j).get_attribute("title")) for j in range(16)] == [
        weight[r, c] for r, c in block
    ]
