"""Before the session exists the controls are off and say "Loading…"; nothing is dropped unsaid.

The server's answer to ``POST /api/sessions`` is held back (``page.route``) while the test
looks at the page, then let through: a slow server or network, made deterministic.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Route, expect

from .conftest import Watch

pytestmark = pytest.mark.browser


def hold_creation(page: Page) -> list[Route]:
    """Hold every POST /api/sessions until the test continues it; returns the held routes."""
    held: list[Route] = []

    def handle(route: Route) -> None:
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route("**/api/sessions", handle)
    return held


def wait_held(page: Page, held: list[Route], count: int) -> None:
    for _ in range(200):
        if len(held) >= count:
            return
        page.wait_for_timeout(25)
    raise AssertionError(f"{len(held)} session creations held, expected {count}")


def click_at(page: Page, selector: str) -> None:
    """A real mouse click on the element (Playwright's click waits until it is enabled)."""
    box = page.locator(selector).bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_stepper_controls_wait_for_the_session(page: Page, watch: Watch) -> None:
    held = hold_creation(page)
    page.goto("/")
    wait_held(page, held, 1)
    page.wait_for_timeout(1000)  # a second of a slow server: still loading, still saying so
    for name in ("#next", "#run", "#reset", "#run-n", "#lr", "#scenario", "#back", "#edit"):
        expect(page.locator(name)).to_be_disabled()
    expect(page.locator("#controls")).to_have_attribute("aria-busy", "true")
    expect(page.locator("main")).to_have_attribute("aria-busy", "true")
    status = page.get_by_role("status").filter(has_text="Loading…")
    expect(status).to_be_visible()
    # a click on the disabled button does nothing; a key says why it did nothing
    click_at(page, "#next")
    page.keyboard.press("n")
    expect(page.locator("#status")).to_have_text("Loading… not ready yet, try again in a moment.")

    held[0].continue_()
    expect(page.locator("#next")).to_be_enabled()
    expect(page.locator("#controls")).to_have_attribute("aria-busy", "false")
    expect(page.locator("main")).to_have_attribute("aria-busy", "false")
    expect(page.locator("#status")).to_be_hidden()
    expect(page.locator("#edit")).to_be_enabled()
    expect(page.locator("#back")).to_be_disabled()  # nothing to step back to
    # nothing ran behind the user's back: still at the start, forward next
    expect(page.locator("#iteration")).to_have_text("iteration 0, next: forward")
    expect(page.locator('button.line[data-line="forward"]')).to_have_attribute(
        "aria-current", "step"
    )
    page.get_by_role("button", name="Next line").click()
    expect(page.locator("#iteration")).to_have_text("iteration 1, next: loss")


def test_compare_controls_wait_for_both_sessions(page: Page, watch: Watch) -> None:
    held = hold_creation(page)
    page.goto("/?compare=skip_zero_grad")
    wait_held(page, held, 1)  # the correct loop's; the bug's comes after it
    for name in ("#c-next", "#c-run", "#c-reset", "#c-bug", "#c-lr"):
        expect(page.locator(name)).to_be_disabled()
    expect(page.locator("#compare-controls")).to_have_attribute("aria-busy", "true")
    expect(page.locator("#c-status")).to_have_text("Loading…")
    expect(page.locator("#c-status")).to_be_visible()
    click_at(page, "#c-next")
    page.keyboard.press("n")
    expect(page.locator("#c-status")).to_contain_text("not ready yet")

    held[0].continue_()
    wait_held(page, held, 2)
    expect(page.locator("#c-next")).to_be_disabled()  # one session is not enough
    held[1].continue_()
    expect(page.locator("#c-next")).to_be_enabled()
    expect(page.locator("#compare-controls")).to_have_attribute("aria-busy", "false")
    expect(page.locator("#c-status")).to_be_hidden()
    for pane in ("correct", "bug"):
        expect(page.locator(f'[data-pane="{pane}"] .line.next')).to_contain_text("model(X)")
    page.get_by_role("button", name="Next line").click()
    for pane in ("correct", "bug"):
        expect(page.locator(f'[data-pane="{pane}"] .line.next')).to_contain_text("loss_fn")
