"""A click whose connection drops after the server has it (issue 27): the page sends it again
with the moment it makes, and the line runs once: the worked example's .grad is -23.5 after the
first backward, not -47, and the log holds four moments, not five."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, Route

pytestmark = pytest.mark.browser


def test_a_dropped_click_runs_its_line_once(stepper: Page, base_url: str) -> None:
    page = stepper
    dropped: list[str] = []

    def drop_the_first_backward(route: Route) -> None:
        if dropped:
            route.continue_()
            return
        route.fetch()  # the server has it, runs it and answers ...
        dropped.append(route.request.url)
        route.abort("connectionreset")  # ... and the answer never reaches the page

    for _ in range(3):  # forward, loss, zero_grad
        page.keyboard.press("n")
        page.wait_for_timeout(150)
    page.route("**/api/sessions/*/next*", drop_the_first_backward)
    page.keyboard.press("n")  # backward
    page.locator("#grads").get_by_text("-23.5").first.wait_for()
    assert dropped and "moment=4" in dropped[0]
    sid = page.evaluate("sessionStorage.getItem('loop-stepper.session')")
    session = httpx.get(f"{base_url}/api/sessions/{sid}").json()
    assert [p["grad"] for p in session["params"]] == [[[-23.5]], [-8.0]]
    timeline = httpx.get(f"{base_url}/api/sessions/{sid}/timeline").json()
    assert [m["n"] for m in timeline["moments"]] == [0, 1, 2, 3, 4]
    assert not page.locator("#problem").is_visible()
