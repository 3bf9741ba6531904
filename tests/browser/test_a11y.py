"""Accessibility rules (axe-core, WCAG 2 A and AA) on every view a student or instructor sees.

axe runs inside the page, so these tests use a context that lets a test script in past the
page's CSP; everything else about the page is as served.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
VIEWS = [
    "/",
    "/?scenario=moons",
    "/?scenario=parabola&skip_zero_grad=1",
    "/?optimizer=sgd&momentum=0.9",
    "/?present=1",
    "/?compare=skip_zero_grad",
    "/?compare=step_first&scenario=moons",  # after 3 rows: the correct side's slot is next
    "/?amp=float16",
]


AXE_CONTEXT: dict[str, Any] = {"bypass_csp": True, "viewport": {"width": 1360, "height": 900}}


@pytest.fixture()
def audited(browser: Browser, base_url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    yield context.new_page()
    context.close()


def violations(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        "() => axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:4]}"
        for v in result["violations"]
    ]


@pytest.mark.parametrize("path", VIEWS)
def test_no_violations(audited: Page, path: str) -> None:
    page = audited
    page.goto(path)
    page.wait_for_selector("body[data-ready='1']")
    assert violations(page) == []
    # and after lines ran: highlighted stores, a graph, values, a curve
    page.keyboard.press("n")
    page.keyboard.press("n")
    page.keyboard.press("n")
    page.wait_for_timeout(300)
    assert violations(page) == []


def test_editor_open_and_an_error_shown(audited: Page) -> None:
    page = audited
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    page.get_by_role("button", name="Edit the loop").click()
    for line in ("out = model(X)", "loss = loss_fn(out, y)", "loss.backward()", "loss.backward()"):
        page.locator(".line", has_text=line).first.click()
        page.wait_for_timeout(150)
    page.get_by_role("alert").first.wait_for()
    assert violations(page) == []


def test_timeline_controls(audited: Page) -> None:
    """Back, the slider, a shared link's field and the download links, in use."""
    page = audited
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    for _ in range(5):
        page.keyboard.press("n")
        page.wait_for_timeout(100)
    page.get_by_role("button", name="Back", exact=True).click()
    page.get_by_role("slider", name="Timeline: moment").fill("2")
    page.get_by_role("button", name="Share this moment").click()
    page.get_by_role("textbox", name="Link to this moment").wait_for()
    page.wait_for_timeout(300)
    assert violations(page) == []


def test_the_class_predicting(audited: Page) -> None:
    """Issue 18: the instructor's panel with the class's bars, a follower voting, then the
    revealed answer on both."""
    page = audited
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    page.get_by_role("button", name="Start a lecture").click()
    page.wait_for_function(
        "/^[2-9A-Z]{7}$/.test(document.getElementById('lecture-code').textContent)"
    )
    code = page.locator("#lecture-code").inner_text()
    page.get_by_role("button", name="Ask the class").click()
    page.locator("#poll .tally-row").first.wait_for()
    follower = page.context.new_page()
    follower.goto(f"/l/{code}")
    follower.locator("#prediction .choice").first.click()
    if follower.locator("#prediction .prediction-send").is_visible():
        follower.locator("#prediction .prediction-send").click()
    follower.locator("#prediction .verdict", has_text="Your answer").wait_for()
    assert violations(follower) == []
    assert violations(page) == []
    page.get_by_role("button", name="Next line").click()
    follower.locator("#prediction .verdict", has_text="Answer:").wait_for()
    page.locator("#poll .poll-state", has_text="Answer shown").wait_for()
    assert violations(follower) == []
    assert violations(page) == []
