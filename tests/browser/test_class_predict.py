"""The class predicts together (issue 18) on real pages: an instructor and two followers in
Chromium. The instructor asks about the next line, one follower votes right and one wrong, the
bars count 1/1, Vote again, both right, Next line: both followers show the truth, "round 1: 1
of 2, round 2: 2 of 2" and the line's numbers; the report has that row. The question and its
bars fit a projector (presenter mode at 1920x1080 and 1280x720) without scrolling."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from support.classroom import truth, wrong

from .conftest import Watch, shot
from .test_lecture import followers, same_numbers  # noqa: F401 (a fixture)
from .test_page import next_line

pytestmark = pytest.mark.browser


def vote(page: Page, q: dict[str, Any], ids: list[str]) -> None:
    """Click the choices as a student would (several: toggle, then send)."""
    section = page.locator("#prediction")
    for i in ids:
        section.locator(f'.choice[data-choice="{i}"]').click()
    if q["multiple"]:
        section.get_by_role("button", name="Send my answer").click()
    texts = [c["text"] for c in q["choices"] if c["id"] in ids]
    expect(section.locator(".verdict")).to_contain_text(
        f"Your answer: {'; '.join(texts) or 'nothing'}."
    )


def bars(page: Page, q: dict[str, Any], *answers: list[str]) -> None:
    for c in q["choices"]:
        n = sum(c["id"] in a for a in answers)
        count = page.locator(f'#poll [data-choice="{c["id"]}"] .tally-count')
        expect(count).to_have_text(str(n))


def fits(page: Page, width: int, height: int) -> None:
    """Presenter mode at this size: no page scroll, the question and every bar on screen,
    the question in large type."""
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(200)
    scroll = page.evaluate("[document.scrollingElement.scrollHeight, window.innerHeight]")
    assert scroll[0] <= scroll[1], scroll
    # measured in one call: the bars are drawn again every 700 ms while the class votes, and
    # an element taken before a redraw has no box after it
    boxes = page.evaluate(
        """[...document.querySelectorAll('#poll .poll-prompt, #poll .tally-row')].map(e => {
            const r = e.getBoundingClientRect();
            return {x: r.x, y: r.y, width: r.width, height: r.height};
        })"""
    )
    assert len(boxes) >= 3, boxes  # the question and its bars
    for box in boxes:
        assert box["y"] >= 0 and box["y"] + box["height"] <= height, box
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    size = page.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('.poll-prompt')).fontSize)"
    )
    assert size >= 20, size
    panel = page.evaluate("document.getElementById('lecture').scrollTop")
    assert panel == 0


def test_the_class_votes_twice_and_the_next_line_reveals(
    stepper: Page,
    followers: tuple[list[Page], Watch],  # noqa: F811 (the fixture)
    client: httpx.Client,
) -> None:
    page = stepper
    pages, _ = followers
    page.get_by_role("button", name="Start a lecture").click()
    expect(page.locator("#lecture-code")).to_have_text(re.compile(r"^[2-9A-HJ-NP-Z]{7}$"))
    code = page.locator("#lecture-code").inner_text()
    sid = page.evaluate("window.loopStepper.session.id")
    for p in pages:
        p.goto(f"/l/{code}")
        expect(p.locator("#live-badge")).to_have_text("Following — live")
    next_line(page, 3)  # forward, loss, zero_grad: the class predicts backward
    same_numbers(page, pages)

    page.get_by_role("button", name="Ask the class").click()
    q = client.get(f"/api/sessions/{sid}/question").json()
    expect(page.locator("#poll .poll-prompt")).to_have_text(q["prompt"])
    for p in pages:
        expect(p.locator("#prediction .prediction-prompt")).to_have_text(q["prompt"])
        expect(p.get_by_role("button", name="Try it yourself")).to_be_disabled()
    # the second follower is on a phone: large buttons, one per row, no sideways scroll
    pages[1].set_viewport_size({"width": 390, "height": 844})
    for button in pages[1].locator("#prediction .choice").all():
        box = button.bounding_box()
        assert box is not None and box["height"] >= 44 and box["x"] + box["width"] <= 390, box
    assert pages[1].evaluate("document.scrollingElement.scrollWidth") <= 390
    right = truth(client, {"scenario": "neuron"}, 3, q)
    other = wrong(q, right)
    theirs = other if isinstance(other, list) else [other]
    vote(pages[0], q, right)
    vote(pages[1], q, theirs)
    bars(page, q, right, theirs)  # 1/1
    expect(page.locator("#poll .poll-state")).to_contain_text("Round 1: 2 of 2 answered")
    shot(page, "class-predict-instructor")
    shot(pages[1], "class-predict-follower")

    # presenter mode: the question and its bars read from the back of the room
    page.get_by_role("button", name="Presenter mode").click()
    for width, height in ((1920, 1080), (1280, 720)):
        fits(page, width, height)
        shot(page, f"class-predict-present-{height}")
    page.get_by_role("button", name="Presenter mode").click()
    page.set_viewport_size({"width": 1280, "height": 900})

    page.get_by_role("button", name="Vote again").click()
    for p in pages:
        expect(p.locator("#prediction .prediction-round")).to_contain_text("Round 2")
        vote(p, q, right)
    bars(page, q, right, right)
    expect(page.locator("#poll .poll-state")).to_contain_text("Round 2: 2 of 2 answered")

    next_line(page)  # the instructor's next line runs it and reveals
    texts = "; ".join(c["text"] for c in q["choices"] if c["id"] in right) or "nothing"
    for p in pages:
        expect(p.locator("#prediction .verdict")).to_contain_text(f"Answer: {texts}.")
        expect(p.locator("#prediction .prediction-shares")).to_have_text(
            "Right in the class: round 1: 1 of 2, round 2: 2 of 2"
        )
        expect(p.locator("#prediction .prediction-why")).not_to_be_empty()
        for i in right:
            expect(p.locator(f'#prediction .choice[data-choice="{i}"]')).to_have_class(
                re.compile(r"\bright\b")
            )
    expect(pages[0].locator("#prediction .verdict")).to_contain_text("You were right.")
    assert same_numbers(page, pages)[2] == "-23.5"  # the line's numbers: weight.grad
    expect(page.locator("#poll .poll-state")).to_have_text(
        "Answer shown. Right: round 1: 1 of 2, round 2: 2 of 2"
    )
    shot(pages[0], "class-predict-revealed")

    href = page.locator("#lecture-report").get_attribute("href")
    assert href is not None
    report = page.request.get(href)
    assert report.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(report.text())))
    assert len(rows) == 1 and rows[0]["line"] == "backward" and rows[0]["kind"] == q["kind"]
    assert [rows[0][k] for k in ("answered_1", "correct_1", "answered_2", "correct_2")] == [
        "2",
        "1",
        "2",
        "2",
    ]
