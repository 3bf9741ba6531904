"""The page after an LMS's launch (issue 30): ``/?session=<id>`` opens that session as this
tab's own and drops the parameter from the address bar; deep linking, grades and the
instructor's view inside the LMS's iframe."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Frame, Page, Route, expect

from app.settings import Settings
from support.serve import serve
from tests.support.fake_lms import STUDENT, TEACHER, FakeLms, fake_lms

from .conftest import Watch
from .test_a11y import AXE, AXE_CONTEXT, violations
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
    expect(page.locator("#lr")).to_have_value("0.1")
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


@pytest.fixture()
def lms_and_tool(tmp_path: Path) -> Iterator[tuple[FakeLms, str]]:
    """A fake LMS and a tool that trusts it and lets it frame the page (another origin)."""
    with fake_lms() as lms:
        config = tmp_path / "lti.json"
        config.write_text(json.dumps(lms.config()))
        settings = Settings(data=str(tmp_path), lti_config=str(config), frame_ancestors=lms.url)
        with serve(settings) as url:
            lms.tool = url
            yield lms, url


def test_a_launch_inside_the_lms_iframe(page: Page, lms_and_tool: tuple[FakeLms, str]) -> None:
    """The LMS's course page frames its link; the browser goes through the tool's login, the
    LMS's authorization endpoint and the tool's launch, and the stepper opens in the frame on
    the link's setup, its first line runnable."""
    lms, _ = lms_and_tool
    setup = {"scenario": "neuron", "lr": 0.1}
    page.goto(lms.course_url(link="week-3", custom={"setup": json.dumps(setup)}))
    frame = page.frame_locator("iframe[title='Loop Stepper']")
    expect(frame.locator("body[data-ready='1']")).to_be_attached(timeout=30_000)
    expect(frame.locator("#lr")).to_have_value("0.1")
    inner = next(f for f in page.frames if f.url.startswith(lms.tool))
    assert "session=" not in inner.url and "lr=0.1" in inner.url
    # the link is graded (the fake LMS sends a line item): Predict first is on; off, Next line runs
    frame.get_by_role("checkbox", name="Predict first").uncheck()
    for _ in range(5):
        frame.get_by_role("button", name="Next line").click()
    expect(
        frame.locator('section[aria-label="Parameters"] .tensor[data-name="weight"] .tbody .value')
    ).to_have_text("2.35")
    assert [r["state"] for r in lms.auth_requests][-1]  # the tool's login reached the LMS


def test_a_launch_without_cookies_uses_the_platforms_storage(
    page: Page, lms_and_tool: tuple[FakeLms, str]
) -> None:
    """Third-party cookies blocked (the state cookie is dropped on its way in): the login
    stores the state in the LMS page's storage (lti.put_data), the launch reads it back
    (lti.get_data) and posts it again, and the stepper opens all the same."""
    lms, tool = lms_and_tool

    def no_cookie(route: Route) -> None:
        answer = route.fetch(max_redirects=0)
        headers = {k: v for k, v in answer.headers.items() if k.lower() != "set-cookie"}
        route.fulfill(response=answer, headers=headers)

    page.route(f"{tool}/lti/login*", no_cookie)
    page.goto(lms.course_url(link="storage", custom={"setup": '{"lr": 0.2}'}, storage=True))
    frame = page.frame_locator("iframe[title='Loop Stepper']")
    expect(frame.locator("body[data-ready='1']")).to_be_attached(timeout=30_000)
    expect(frame.locator("#lr")).to_have_value("0.2")
    stored = page.evaluate("window.ltiStore")
    state = lms.auth_requests[-1]["state"]
    assert stored[f"{tool} state_{state}"] == state
    assert stored[f"{tool} nonce_{lms.auth_requests[-1]['nonce']}"]
    assert page.context.cookies(tool) == []  # no cookie did it


def test_the_refused_page_names_the_check_and_is_accessible(
    browser: Browser, lms_and_tool: tuple[FakeLms, str]
) -> None:
    """A launch refused (here: no login before it, so no state) answers a page a screen reader
    reads: its heading, the failed check by name; axe finds nothing."""
    _, tool = lms_and_tool
    context = browser.new_context(base_url=tool, **AXE_CONTEXT)
    try:
        page = context.new_page()
        page.set_content(
            f"<form method='post' action='{tool}/lti/launch'><input name='id_token' value='x'>"
            "<input name='state' value='s'></form>"
        )
        with page.expect_navigation():
            page.evaluate("document.forms[0].submit()")
        expect(page.get_by_role("heading", level=1)).to_have_text("The LMS launch was refused")
        expect(page.locator("#lti-check")).to_have_text("state")
        assert violations(page) == []
    finally:
        context.close()


def axe_frame(frame: Frame) -> list[str]:
    """axe's WCAG 2 A/AA violations inside one frame (the tool's page in the LMS's iframe)."""
    frame.add_script_tag(path=str(AXE))
    result: dict[str, Any] = frame.evaluate(
        "() => axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"
    )
    return [f"{v['id']}: {v['help']}" for v in result["violations"]]


def test_deep_link_as_instructor_then_two_answers_reach_the_gradebook(
    page: Page, lms_and_tool: tuple[FakeLms, str]
) -> None:
    """The whole second round in the LMS's iframe (another origin): the instructor adds the
    stepper (deep linking: the picker, the signed answer auto-posted back); a student launches
    that link, answers two predict-first questions, and the LMS holds two scores for them."""
    lms, tool = lms_and_tool
    page.goto(lms.course_url(user=TEACHER, link="adding", deep=True))
    frame = page.frame_locator("iframe[title='Loop Stepper']")
    expect(frame.get_by_role("heading", name="Link the stepper")).to_be_visible(timeout=30_000)
    frame.get_by_label("Scenario", exact=True).select_option("neuron")
    frame.get_by_label("Title in the course").fill("Week 3: one neuron")
    frame.get_by_role("button", name="Add to the course").click()
    expect(frame.locator("#linked")).to_have_text("Linked", timeout=30_000)  # the LMS's page
    item = lms.links[-1]
    assert item["title"] == "Week 3: one neuron" and item["url"] == f"{tool}/lti/launch"
    assert item["custom"] == {"setup": '{"scenario":"neuron"}'}
    assert item["lineItem"] == {"scoreMaximum": 10, "label": "Week 3: one neuron"}

    page.goto(lms.course_url(user=STUDENT, link="week-3", custom=item["custom"]))
    expect(frame.locator("body[data-ready='1']")).to_be_attached(timeout=30_000)
    expect(frame.locator("body[data-lti='learner']")).to_be_attached()
    expect(frame.get_by_role("button", name="Start a lecture")).to_be_hidden()
    # a graded link opens with Predict first on
    expect(frame.get_by_role("checkbox", name="Predict first")).to_be_checked()
    rights = []
    for n in range(2):
        if n:
            frame.get_by_role("button", name="Next line").click()
        expect(frame.locator("#predict-verdict")).to_be_empty()
        frame.locator("#predict-choices input").first.check()
        frame.get_by_role("button", name="Answer").click()
        expect(frame.locator("#predict-score")).to_contain_text(f"of {n + 1}")
        rights.append(frame.locator("#predict-verdict").inner_text().startswith("Right."))
    deadline = time.monotonic() + 20
    while len(lms.scores) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores] == [
        ("student-1", int(rights[0]), 10),
        ("student-1", int(rights[0]) + int(rights[1]), 10),
    ]
    assert {s["lineitem"] for s in lms.scores} == {f"{lms.url}/lineitems/1"}


TWO_QUESTIONS: dict[str, Any] = {
    "format": "loop-stepper-lesson/1",
    "title": "Two questions on the neuron",
    "summary": "",
    "setup": {"scenario": "neuron", "lr": 0.05},
    "stops": [
        {
            "at": 2,
            "title": "The loss",
            "note": "The loss is 18.5.",
            "question": {
                "prompt": "What will backward write into `weight.grad`?",
                "choices": [
                    {"id": "a", "text": "-23.5", "correct": True, "feedback": "Yes."},
                    {"id": "b", "text": "0", "correct": False, "feedback": "None is not 0."},
                ],
            },
            "expect": {"loss": 18.5},
        },
        {
            "at": 4,
            "title": "After backward",
            "question": {
                "prompt": "What will `step` do to the weight?",
                "choices": [
                    {"id": "a", "text": "It rises by 1.175", "correct": True},
                    {"id": "b", "text": "Nothing", "correct": False},
                ],
            },
            "expect": {"grad": {"weight": [[-23.5]]}},
        },
    ],
}


def test_deep_link_a_lesson_then_two_answers_reach_the_gradebook(
    page: Page, lms_and_tool: tuple[FakeLms, str]
) -> None:
    """Issue 30's flow with a lesson: the instructor links it from the picker in the LMS's
    iframe (its line item counts the lesson's two questions), a student launches it, walks
    it with Next stop and answers its two questions; the LMS holds two scores out of 2."""
    lms, tool = lms_and_tool
    lesson = httpx.post(f"{tool}/api/lessons", json=TWO_QUESTIONS).json()["id"]
    page.goto(lms.course_url(user=TEACHER, link="adding-lesson", deep=True))
    frame = page.frame_locator("iframe[title='Loop Stepper']")
    expect(frame.get_by_role("heading", name="Link the stepper")).to_be_visible(timeout=30_000)
    frame.get_by_role("radio", name="A lesson").check()
    frame.get_by_label("Lesson (the gallery").fill(lesson)
    frame.get_by_label("Title in the course").fill("Week 4: two questions")
    frame.get_by_role("button", name="Add to the course").click()
    expect(frame.locator("#linked")).to_have_text("Linked", timeout=30_000)
    item = lms.links[-1]
    assert item["custom"] == {"lesson": lesson}
    assert item["lineItem"] == {"scoreMaximum": 2, "label": "Week 4: two questions"}

    page.goto(lms.course_url(user=STUDENT, link="week-4", custom=item["custom"]))
    expect(frame.locator("body[data-ready='1']")).to_be_attached(timeout=30_000)
    expect(frame.locator("#lesson-title")).to_have_text("Two questions on the neuron")
    for n, choice in enumerate(["a", "b"]):  # the first right, the second wrong
        frame.get_by_role("button", name="Next stop").click()
        box = frame.locator("#lesson-question fieldset")
        expect(box.locator("legend")).to_contain_text(["backward", "step"][n])
        box.locator(f"input[value='{choice}']").check()
        box.get_by_role("button", name="Answer").click()
        expect(frame.locator("#lesson-score")).to_contain_text(f"({n + 1} answered)")
    deadline = time.monotonic() + 20
    while len(lms.scores) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    got = [
        (s["userId"], s["scoreGiven"], s["scoreMaximum"], s["activityProgress"]) for s in lms.scores
    ]
    assert got == [("student-1", 1, 2, "InProgress"), ("student-1", 1, 2, "Completed")]


def test_an_instructor_keeps_start_a_lecture(page: Page, lms_and_tool: tuple[FakeLms, str]) -> None:
    lms, _ = lms_and_tool
    page.goto(lms.course_url(user=TEACHER, link="week-3"))
    frame = page.frame_locator("iframe[title='Loop Stepper']")
    expect(frame.locator("body[data-lti='instructor']")).to_be_attached(timeout=30_000)
    expect(frame.get_by_role("button", name="Start a lecture")).to_be_visible()


def test_the_picker_is_accessible(browser: Browser, lms_and_tool: tuple[FakeLms, str]) -> None:
    """The deep-linking picker in the LMS's iframe: labelled controls, a legend; axe finds
    nothing."""
    lms, tool = lms_and_tool
    context = browser.new_context(**AXE_CONTEXT)
    try:
        page = context.new_page()
        page.goto(lms.course_url(user=TEACHER, link="adding", deep=True))
        frame = page.frame_locator("iframe[title='Loop Stepper']")
        expect(frame.get_by_role("heading", name="Link the stepper")).to_be_visible(timeout=30_000)
        expect(frame.get_by_role("radio", name="A scenario")).to_be_checked()
        picker = next(f for f in page.frames if f.url.startswith(tool))
        assert axe_frame(picker) == []
    finally:
        context.close()
