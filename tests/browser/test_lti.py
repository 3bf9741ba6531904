"""The page after an LMS's launch (issue 30): ``/?session=<id>`` opens that session as this
tab's own and drops the parameter from the address bar."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from .conftest import Watch
from .test_page import value

pytestmark = pytest.mark.browser


def test_a_launched_session_opens_and_leaves_the_address_bar(
    page: Page, watch: Watch, base_url: str
) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        sid = c.post("/api/sessions", json={"lr": 0.1}).json()["id"]
        for name in ("forward", "loss", "zero_grad", "backward", "step"):
            assert c.post(f"/api/sessions/{sid}/{name}").status_code == 200
    page.goto(f"/?session={sid}")
    page.wait_for_selector("body[data-ready='1']")
    assert value(page, "Parameters", "weight") == "2.35"  # the launched session, stepped
    expect(page.get_by_label("lr")).to_have_value("0.1")
    assert "session=" not in page.url and "lr=0.1" in page.url
    assert page.evaluate("sessionStorage.getItem('loop-stepper.session')") == sid
    page.reload()  # the tab keeps it
    page.wait_for_selector("body[data-ready='1']")
    assert value(page, "Parameters", "weight") == "2.35"
    # an id the server does not have: the tab's own session, no error
    page.goto("/?session=gone")
    page.wait_for_selector("body[data-ready='1']")
    assert "session=" not in page.url and value(page, "Parameters", "weight") == "2.35"
    expect(page.locator("#problem")).to_be_hidden()
