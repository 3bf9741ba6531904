"""Lecture mode on real pages (issue 11): an instructor and two followers in Chromium. Every
instructor click shows the same numbers on both followers (rewind and reset too); "Try it
yourself" gives a session the lecture no longer drives; a question hides the program from the
followers' JSON and DOM, counts their answers and reveals. Also /join and /?quiz=1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Watch, attach, shot
from .test_page import next_line

pytestmark = pytest.mark.browser
TENSORS = [("Parameters", "weight"), ("Parameters", "bias"), ("Gradients", "weight")]


def value(page: Page, store: str, name: str) -> str:
    tensor = page.locator(f'section[aria-label="{store}"] .tensor[data-name="{name}"]')
    return tensor.locator(".value:visible").first.inner_text()


def same_numbers(instructor: Page, followers: list[Page]) -> list[str]:
    """Every follower shows the instructor's parameters, gradients and loss."""
    numbers = [value(instructor, store, name) for store, name in TENSORS]
    loss = instructor.locator("#loss-value").inner_text()
    for page in followers:
        for (store, name), text in zip(TENSORS, numbers, strict=True):
            tensor = page.locator(f'section[aria-label="{store}"] .tensor[data-name="{name}"]')
            expect(tensor.locator(".value:visible").first).to_have_text(text)
        expect(page.locator("#loss-value")).to_have_text(loss)
    return numbers


def moment(page: Page) -> int:
    result: int = page.evaluate("window.loopStepper.session.moment")
    return result


@pytest.fixture()
def followers(browser: Browser, base_url: str) -> Iterator[tuple[list[Page], Watch]]:
    seen = Watch()
    contexts = [browser.new_context(base_url=base_url) for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    for p in pages:
        attach(p, seen)
    yield pages, seen
    for c in contexts:
        c.close()
    seen.check(base_url)


def test_two_followers_see_every_click_then_fork_and_answer(
    stepper: Page, followers: tuple[list[Page], Watch], base_url: str
) -> None:
    page = stepper
    pages, _ = followers
    page.get_by_role("button", name="Start a lecture").click()
    code_el = page.locator("#lecture-code")
    expect(code_el).to_have_text(re.compile(r"^[2-9A-HJ-NP-Z]{7}$"))
    code = code_el.inner_text()
    expect(page.locator("#lecture-url")).to_have_text(f"{base_url}/l/{code}")
    expect(page.locator("#lecture-qr svg")).to_be_visible()
    for p in pages:
        p.goto(f"/l/{code}")
        expect(p.locator("#live-badge")).to_have_text("Following — live")
    expect(page.locator("#lecture-followers")).to_have_text("2")
    same_numbers(page, pages)
    for p in pages:  # read-only: the loop's lines run nothing
        expect(p.locator("#watch .line").first).to_be_disabled()

    for _ in range(4):  # forward, loss, zero_grad, backward: each shows up on both
        next_line(page)
        same_numbers(page, pages)
    assert same_numbers(page, pages)[2] == "-23.5"
    before = int(page.locator("body").get_attribute("data-renders") or 0)
    page.get_by_role("button", name="Back", exact=True).click()  # rewind follows too
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1))
    expect(page.locator("#timeline")).to_have_attribute("aria-busy", "false")
    same_numbers(page, pages)
    next_line(page, 2)
    same_numbers(page, pages)
    shot(pages[0], "lecture-follower")
    shot(page, "lecture-instructor")

    # "Try it yourself": the first follower's own session, at this moment
    at = moment(page)
    pages[0].get_by_role("button", name="Try it yourself").click()
    pages[0].wait_for_selector("body[data-ready='1'][data-mode='stepper']")
    assert moment(pages[0]) == at
    mine = pages[0].evaluate("window.loopStepper.session.id")
    next_line(page)  # the lecture moves on; the copy does not
    same_numbers(page, pages[1:])
    assert moment(pages[0]) == at
    next_line(pages[0])  # and it is the follower's to drive
    assert moment(pages[0]) == at + 1
    assert pages[0].evaluate("window.loopStepper.session.id") == mine

    before = int(page.locator("body").get_attribute("data-renders") or 0)
    page.get_by_role("button", name="Reset", exact=True).click()
    expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1))
    same_numbers(page, pages[1:])
    expect(pages[1].locator("#loss-value")).to_have_text("None")

    # a question: the program leaves the followers' JSON and DOM
    follower = pages[1]
    # the instructor picks the choices by the presets' titles; their ids are what is sent
    choices = page.locator("#quiz-choices")
    expect(choices.get_by_label("Skip zero_grad", exact=True)).to_be_checked()
    expect(choices.get_by_label("Skip zero_grad", exact=True)).to_have_value("skip_zero_grad")
    expect(choices.get_by_label("running_loss += loss (the tensor)")).not_to_be_checked()
    assert "log_tensor" not in choices.inner_text()
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(follower.locator("#question")).to_be_visible()
    expect(follower.locator(".w-hidden")).to_be_visible()
    assert follower.locator("#watch .line").count() == 0
    assert "optimizer.zero_grad()" not in follower.locator("body").inner_text()
    data: dict[str, Any] = follower.evaluate(f"fetch('../api/lectures/{code}').then(r => r.json())")
    assert not {"program", "code", "preset", "toggles"} & set(data)
    expect(follower.get_by_role("button", name="Try it yourself")).to_be_disabled()
    pages[0].goto(f"/l/{code}")  # the first follower comes back to answer too
    expect(pages[0].locator("#question")).to_be_visible()
    # every choice is named by its preset's title, as the Loop menu names it, on both sides
    expect(follower.locator("#question .choice")).to_have_text(
        ["The correct loop", "Skip zero_grad", "Step before backward"]
    )
    pages[0].get_by_role("button", name="Skip zero_grad", exact=True).click()
    follower.get_by_role("button", name="Step before backward", exact=True).click()
    correct = follower.get_by_role("button", name="The correct loop", exact=True)
    correct.click()  # answering again replaces
    expect(correct).to_have_attribute("aria-pressed", "true")
    expect(follower.locator("#verdict")).to_have_text(
        "Your answer: The correct loop. You can change it until it is revealed."
    )
    tally = page.locator("#tally")
    expect(tally.locator('[data-choice="correct"] .tally-count')).to_have_text("1")
    expect(tally.locator('[data-choice="skip_zero_grad"] .tally-count')).to_have_text("1")
    expect(tally.locator('[data-choice="step_first"] .tally-count')).to_have_text("0")
    expect(tally.locator(".tally-name")).to_have_text(
        ["The correct loop", "Skip zero_grad", "Step before backward"]
    )
    expect(tally.locator(".tally-total")).to_have_text("2 answered")
    shot(page, "lecture-tally")
    page.get_by_role("button", name="Reveal", exact=True).click()
    expect(tally.locator(".tally-total")).to_have_text("2 answered — answer: The correct loop")
    for p in pages:
        expect(p.locator("#verdict")).to_contain_text("Answer: The correct loop.")
        expect(p.locator("#watch .line").first).to_be_visible()
    expect(follower.locator("#verdict")).to_contain_text("You were right.")
    expect(pages[0].locator("#verdict")).to_contain_text("Not your answer.")
    expect(tally.locator(".tally-row.right")).to_have_attribute("data-choice", "correct")
    shot(follower, "lecture-revealed")


def test_join_by_code_and_an_unknown_one(page: Page, watch: Watch, client: Any) -> None:
    sid = client.post("/api/sessions", json={}).json()["id"]
    code = client.post(f"/api/sessions/{sid}/lecture").json()["code"]
    page.goto("/join")
    page.get_by_label("Join code").fill("NOPE234")
    page.get_by_role("button", name="Follow").click()
    expect(page.locator("#join-error")).to_contain_text("No lecture runs under NOPE234")
    page.get_by_label("Join code").fill(code.lower())
    page.get_by_role("button", name="Follow").click()
    expect(page).to_have_url(re.compile(f"/l/{code}$"))
    expect(page.locator("#live-badge")).to_have_text("Following — live")
    client.post(f"/api/sessions/{sid}/next")
    expect(page.locator("#watch .iteration")).to_have_text("iteration 1, next: loss")
    client.delete(f"/api/sessions/{sid}/lecture")
    expect(page.locator("#live-badge")).to_have_text("The lecture has ended.")


def test_self_study_question(page: Page, watch: Watch) -> None:
    page.goto("/?quiz=1")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator(".w-hidden")).to_be_visible()
    assert page.locator("main .line").count() == 0
    page.get_by_role("button", name="Run 1 iteration").click()
    expect(page.locator("main .iteration")).to_have_text(re.compile(r"iteration [01],"))
    titles = page.evaluate("JSON.parse(document.getElementById('catalogue').textContent)"
                           ".presets.map(p => p.title)")  # fmt: skip
    for text in page.locator(".question .choice").all_inner_texts():
        assert text in titles, text  # a preset's title, never its id
    # never right: a bug always runs
    page.get_by_role("button", name="The correct loop", exact=True).click()
    expect(page.locator("#q-status")).to_have_text(
        re.compile("^Not quite: it was (" + "|".join(map(re.escape, titles)) + r")\.$")
    )
    expect(page.locator(".question .verdict")).to_contain_text("Answer: ")
    expect(page.locator("main .line").first).to_be_visible()  # the program, revealed
    shot(page, "self-study")
