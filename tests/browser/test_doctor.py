"""The doctor on the page (issue 37), in real Chromium against a real server: a student's own
loop (no preset's program) gets its diagnosis under the code, at the program line and the
iteration the API names, in the words of the preset's explanation; a rewind and a preset take
it away; the correct loop shows none; the region passes axe."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from app.engine.program import PRESETS

from .conftest import Watch, shot
from .test_a11y import AXE_CONTEXT, violations
from .test_bugs import click_and_render, open_page, run_iterations
from .test_page import next_line

pytestmark = pytest.mark.browser

EXPLANATION = next(p.explanation for p in PRESETS if p.name == "skip_zero_grad")
# the worked example without zero_grad, plus a line that changes no number: no preset's loop
OWN = "forward,loss,backward,step,log_item"


def moment(page: Page) -> int:
    return int(page.evaluate("window.loopStepper.session.moment"))


def answered(page: Page) -> None:
    """Wait until the doctor has answered for the moment the page stands at."""
    expect(page.locator("#doctor")).to_have_attribute("data-moment", str(moment(page)))


def asked(base_url: str, page: Page) -> list[dict[str, Any]]:
    """The API's own answer for the page's session."""
    sid = page.evaluate("window.loopStepper.session.id")
    r = httpx.get(f"{base_url}/api/sessions/{sid}/diagnoses", timeout=60)
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["diagnoses"]
    return found


def test_an_edited_loop_is_named_at_its_line(page: Page, watch: Watch, base_url: str) -> None:
    page = open_page(page)
    doctor = page.get_by_role("region", name="Doctor: what the numbers show")
    page.get_by_role("button", name="Edit the loop").click()
    # without zero_grad the loop is the preset: its note explains it, the doctor stays out
    click_and_render(page, page.get_by_role("button", name="Remove line 3 (optimizer.zero_grad())"))
    expect(page.get_by_label("Loop")).to_have_value("skip_zero_grad")
    page.get_by_label("Add", exact=True).select_option("log_item")
    click_and_render(page, page.get_by_role("button", name="Add line"))
    expect(page.get_by_label("Loop")).to_have_value("")  # the student's own loop now
    expect(page.locator("#preset-note")).to_contain_text("Your own loop")
    assert page.evaluate("window.loopStepper.session.program") == OWN.split(",")

    # iteration 1, then iteration 2 up to its backward, which adds onto the gradient step 1
    # already used: nothing is named until a step reads that sum (accumulating on purpose
    # is no bug)
    next_line(page, 8)
    answered(page)
    expect(doctor).to_be_hidden()
    assert asked(base_url, page) == []

    next_line(page)  # iteration 2's optimizer.step(): it reads the sum
    answered(page)
    expect(doctor).to_be_visible()
    [d] = asked(base_url, page)
    # what tests/web/test_diagnoses.py knows of the worked example without zero_grad
    assert (d["bug"], d["file"], d["line"], d["iteration"]) == ("skip_zero_grad", "loop", 3, 2)
    assert d["message"] == EXPLANATION  # the preset's words: one source for both
    item = doctor.locator(".diagnosis")
    expect(item).to_have_count(1)
    expect(item.locator("code.bug")).to_have_text(d["bug"])
    expect(item.locator(".where")).to_have_text(f"line {d['line']} · iteration {d['iteration']}")
    expect(item.locator(".message")).to_have_text(EXPLANATION)
    # line 3 of the program (the struck-through zero_grad is no line of it): the backward
    assert page.evaluate("window.loopStepper.session.code[2]") == "loss.backward()"
    expect(item.locator("code.src")).to_have_text("loss.backward()")
    expect(item).to_have_text(
        f"skip_zero_grad line 3 · iteration 2 · loss.backward() — {EXPLANATION}"
    )

    next_line(page)  # to the end of iteration 2: the same one diagnosis
    answered(page)
    expect(item).to_have_count(1)
    shot(page, "37-doctor-own-loop")

    # one moment back at a time to before that step: the diagnosis is of a moment gone
    for _ in range(2):
        before = moment(page)
        page.keyboard.press("b")
        expect(page.locator("#doctor")).not_to_have_attribute("data-moment", str(before))
        answered(page)
    assert page.evaluate("window.loopStepper.session.cursor") == 3  # before the step
    expect(doctor).to_be_hidden()

    # a preset chosen from the menu: its note speaks, the doctor is hidden at once
    next_line(page)
    answered(page)
    expect(doctor).to_be_visible()
    page.get_by_label("Loop").select_option("correct")
    expect(page.get_by_label("Loop")).to_have_value("correct")
    expect(doctor).to_be_hidden()


def test_the_correct_loop_shows_no_doctor(page: Page, watch: Watch, base_url: str) -> None:
    diagnoses: list[str] = []
    page.on("request", lambda r: diagnoses.append(r.url) if r.url.endswith("/diagnoses") else None)
    page = open_page(page)
    run_iterations(page, 2)
    assert page.evaluate("window.loopStepper.session.iteration") == 2
    expect(page.locator("#doctor")).to_be_hidden()
    assert asked(base_url, page) == []
    assert diagnoses == []  # a preset's loop: the doctor asks nothing

    # the correct loop with one more line is no preset: asked, and still nothing to show
    page = open_page(page, "/?program=forward,loss,zero_grad,backward,step,log_item")
    expect(page.get_by_label("Loop")).to_have_value("")
    run_iterations(page, 2)
    answered(page)
    expect(page.locator("#doctor")).to_be_hidden()
    assert asked(base_url, page) == []
    assert diagnoses


def test_the_region_passes_axe(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    try:
        page = open_page(context.new_page(), f"/?program={OWN}")
        run_iterations(page, 2)
        answered(page)
        expect(page.locator("#doctor .diagnosis")).to_have_count(1)
        assert violations(page) == []
    finally:
        context.close()
