"""Making a lesson in a real Chromium (issue 29, "Make a lesson"): two stops added from a live
session, one with a custom question, their claims filled from the live stores, checked, saved;
the student link walked in a fresh context; the edit link changes it; a file downloaded and
opened again is the same lesson; a false claim shows PyTorch's number on its stop; axe clean."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, FilePayload, Page, expect

from tests.browser.test_a11y import AXE_CONTEXT, violations

pytestmark = pytest.mark.browser


def lesson_file(name: str, doc: dict[str, Any]) -> FilePayload:
    return {"name": name, "mimeType": "application/json", "buffer": json.dumps(doc).encode()}


def next_line(page: Page, moment: int) -> None:
    page.get_by_role("button", name="Next line").click()
    page.locator("#timeline-where", has_text=f"moment {moment} of").wait_for()


def test_make_save_and_walk_a_lesson(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    page = context.new_page()
    page.goto("/?scenario=neuron&lr=0.05")
    page.wait_for_selector("body[data-ready='1']")
    page.locator("#author-panel summary").click()
    page.get_by_label("Lesson title").fill("Loss, then .grad")
    next_line(page, 1)
    next_line(page, 2)
    page.get_by_role("button", name="Add a stop here").click()
    stop = page.locator("#a-stops > li").nth(0)
    stop.get_by_label("Note (Markdown)").fill("The loss is **18.5**.")
    stop.locator(".preview strong", has_text="18.5").wait_for()  # the preview, as Markdown
    stop.get_by_label("Question", exact=True).select_option("custom")
    stop = page.locator("#a-stops > li").nth(0)
    stop.get_by_label("Prompt").fill("What does backward write?")
    stop.get_by_label("Choice a", exact=True).fill("-23.5 and -8")
    stop.get_by_label("Choice b", exact=True).fill("zeros")
    expect(stop.get_by_label("Choice a is right")).to_be_checked()  # the first is, to begin
    stop.get_by_label("Feedback on b").fill("None is not zeros.")
    stop.get_by_role("button", name="Expect the current values").click()
    expect(page.locator("#a-stop-0-expect")).not_to_have_value("")
    assert json.loads(page.locator("#a-stop-0-expect").input_value())["loss"] == 18.5
    next_line(page, 3)
    next_line(page, 4)
    assert page.locator("#a-stop-0 button.a-fill, #a-stops li:first-child .a-fill").is_disabled()
    page.get_by_role("button", name="Add a stop here").click()
    page.locator("#a-stops > li").nth(1).get_by_role(
        "button", name="Expect the current values"
    ).click()
    expect(page.locator("#a-stop-1-expect")).not_to_have_value("")
    page.get_by_role("button", name="Check").click()
    page.locator("#a-status", has_text="All 2 stops hold.").wait_for()
    page.locator("#gallery-panel summary").click()  # the built-in lessons, links by keyboard
    page.locator("#gallery a[href='./?lesson=five-lines']").wait_for()
    assert page.locator("#gallery li").count() == len(httpx.get(f"{base_url}/api/lessons").json())
    assert violations(page) == []
    page.get_by_role("button", name="Save").click()
    page.locator("#a-links").wait_for()
    student = page.locator("#a-student").input_value()
    edit = page.locator("#a-edit").input_value()
    lesson_id = student.split("lesson=")[1]
    saved = httpx.get(f"{base_url}/api/lessons/{lesson_id}").json()
    assert saved["setup"]["lr"] == 0.05 and saved["title"] == "Loss, then .grad"
    assert [s["at"] for s in saved["stops"]] == [2, 4]
    assert saved["stops"][0]["expect"]["loss"] == 18.5
    assert saved["stops"][1]["expect"]["grad"] == {"weight": [[-23.5]], "bias": [-8.0]}
    assert saved["stops"][0]["question"]["choices"][0] == {
        "id": "a",
        "text": "-23.5 and -8",
        "correct": True,
        "feedback": "",
    }

    # a student, in a fresh context, walks it
    student_context = browser.new_context(base_url=base_url)
    walker = student_context.new_page()
    walker.goto(student)
    walker.wait_for_selector("body[data-ready='1']")
    assert walker.locator("#lesson-title").inner_text() == "Loss, then .grad"
    assert walker.locator("#timeline-stops option").count() == 2  # the slider's marks
    walker.get_by_role("button", name="Next stop").click()
    walker.locator("#lesson-note strong", has_text="18.5").wait_for()
    box = walker.locator("#lesson-question fieldset")
    box.get_by_label("zeros").check()
    box.get_by_role("button", name="Answer").click()
    walker.locator("#lesson-question .verdict", has_text="None is not zeros.").wait_for()
    walker.get_by_role("button", name="Next stop").click()
    walker.locator("#lesson-stops li[aria-current]", has_text="moment 4").wait_for()
    student_context.close()

    # the edit link: the saved lesson in the editor; Save changes it
    page.goto(edit)
    page.wait_for_selector("body[data-ready='1']")
    page.locator("#a-status", has_text="Editing the saved lesson").wait_for()
    page.get_by_label("Lesson title").fill("Loss, then .grad (edited)")
    page.get_by_role("button", name="Save").click()
    page.locator("#a-status", has_text="Saved.").wait_for()
    again = httpx.get(f"{base_url}/api/lessons/{lesson_id}").json()
    assert again["title"] == "Loss, then .grad (edited)"
    assert again["stops"] == saved["stops"]
    context.close()


def test_a_lesson_file_round_trips_and_a_false_claim_shows_pytorchs_number(
    page: Page, base_url: str
) -> None:
    original: dict[str, Any] = httpx.get(f"{base_url}/api/lessons/five-lines").json()
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    page.locator("#author-panel summary").click()
    page.set_input_files("#a-file", files=lesson_file("five.lesson.json", original))
    expect(page.locator("#a-status")).to_contain_text(f"All {len(original['stops'])} stops hold.")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download").click()
    served = httpx.get(f"{base_url}/api/lessons/five-lines/file").headers["content-disposition"]
    assert served == f'attachment; filename="{download.value.suggested_filename}"'
    assert download.value.suggested_filename == "Five-lines-four-stores.lesson.json"
    with open(download.value.path(), encoding="utf-8") as file:
        assert json.load(file) == original

    false = json.loads(json.dumps(original))
    at = next(i for i, s in enumerate(false["stops"]) if "loss" in s.get("expect", {}))
    told = false["stops"][at]["expect"]["loss"]
    false["stops"][at]["expect"]["loss"] = 99.0
    page.set_input_files("#a-file", files=lesson_file("false.json", false))
    page.locator("#a-status", has_text="1 of").wait_for()
    failing = page.locator("#a-stops > li.fails")
    assert failing.count() == 1
    assert f"loss: the lesson says 99, PyTorch has {told}" in failing.inner_text()
