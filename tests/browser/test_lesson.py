"""A lesson beside the stepper (issue 29), in a real Chromium: the built-in worked example walked
with Next stop and the key s, its custom question answered and scored, a reload resuming where
the student was; a note with raw HTML or a javascript: link runs no script; axe clean."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.test_a11y import AXE_CONTEXT, violations

pytestmark = pytest.mark.browser


def test_walking_the_worked_example(page: Page, base_url: str) -> None:
    page.goto("/?lesson=five-lines")
    page.wait_for_selector("body[data-ready='1']")
    panel = page.locator("#lesson-panel")
    assert panel.locator("#lesson-title").inner_text() == "Five lines, four stores"
    page.get_by_role("button", name="Next stop").click()
    page.locator("#lesson-stops [aria-current]").wait_for()
    assert "The forward pass" in page.locator("#lesson-stops [aria-current]").inner_text()
    assert "Nothing about the parameters changed" in page.locator("#lesson-note").inner_text()
    page.locator("#lesson-note").click()  # focus off any field: the key is the page's
    page.keyboard.press("s")
    page.locator("#lesson-note", has_text="18.5").wait_for()
    page.keyboard.press("s")
    box = page.locator("#lesson-question fieldset")
    box.wait_for()
    box.locator("input").first.check()
    box.get_by_role("button", name="Answer").click()
    page.locator("#lesson-question .verdict", has_text=".").wait_for()
    page.locator("#lesson-score", has_text="answered").wait_for()
    sid = page.evaluate("sessionStorage.getItem('loop-stepper.session')")
    moment = httpx.get(f"{base_url}/api/sessions/{sid}").json()["moment"]
    assert moment == 3
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.evaluate("sessionStorage.getItem('loop-stepper.session')") == sid
    assert "lesson=five-lines" in page.url
    page.locator("#lesson-stops [aria-current]").wait_for()  # still at the third stop


def test_a_note_never_runs_script(page: Page, base_url: str) -> None:
    doc: dict[str, Any] = {
        "format": "loop-stepper-lesson/1",
        "title": "Hostile",
        "summary": "",
        "setup": {"scenario": "neuron"},
        "stops": [
            {
                "at": 1,
                "title": "one",
                "note": '<img src=x onerror="window.pwned=1"> and '
                "[click](javascript:window.pwned=2) and [fine](https://example.org/) and **bold**",
            }
        ],
    }
    made = httpx.post(f"{base_url}/api/lessons", json=doc).json()
    page.goto(f"/?lesson={made['id']}")
    page.wait_for_selector("body[data-ready='1']")
    page.get_by_role("button", name="Next stop").click()
    note = page.locator("#lesson-note")
    note.locator("strong", has_text="bold").wait_for()
    assert '<img src=x onerror="window.pwned=1">' in note.inner_text()
    assert note.locator("img").count() == 0
    links = note.locator("a")
    assert links.count() == 1 and links.first.get_attribute("href") == "https://example.org/"
    assert links.first.get_attribute("target") == "_blank"
    assert page.evaluate("window.pwned === undefined")


def test_the_lesson_view_is_axe_clean(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    page = context.new_page()
    page.goto("/?lesson=five-lines")
    page.wait_for_selector("body[data-ready='1']")
    for _ in range(3):
        page.get_by_role("button", name="Next stop").click()
        page.wait_for_timeout(200)
    page.locator("#lesson-question fieldset").wait_for()
    assert violations(page) == []
    context.close()


def test_a_lectures_followers_see_the_stop_and_its_note(page: Page, base_url: str) -> None:
    """A lecture on a lesson: the instructor's Next stop moves the follower's page to the stop,
    its title and note shown there (issue 29's lecture)."""
    made = httpx.post(f"{base_url}/api/lessons/five-lines/sessions").json()
    sid = made["id"]
    code = httpx.post(f"{base_url}/api/sessions/{sid}/lecture").json()["code"]
    page.goto(f"/l/{code}")
    page.wait_for_selector("body[data-ready='1']")
    panel = page.locator("#stop-note")
    expect(panel.locator("#stop-note-title")).to_have_text("Five lines, four stores")
    stop = httpx.post(f"{base_url}/api/sessions/{sid}/lesson/next-stop").json()["lesson"]
    expect(panel.locator("#stop-note-where")).to_have_text(
        f"Stop 1 of {len(stop['stops'])}: {stop['stops'][0]['title']}"
    )
    expect(panel.locator("#stop-note-text")).to_contain_text("Nothing about the parameters changed")
    httpx.post(f"{base_url}/api/sessions/{sid}/lesson/next-stop")
    expect(panel.locator("#stop-note-text")).to_contain_text("18.5")
