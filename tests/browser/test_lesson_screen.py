"""Issue 40: a lesson as a student sees it, in a real Chromium at 1440 x 900 and at a 1280 x 720
projector. The stop's note, Next stop, the loop's current line and the Parameters and .grad
stores on one screen with the setup folded behind "Setup"; the stops one a row, each a button to
its moment; an auto stop's question asked there and counted in the lesson's score; a follower of
a lecture on the lesson sees the note and the stores on one screen; the Build panel starts on
make_moons and a 30-feature preview scrolls in its own box; axe clean; on a phone, as before."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from support.classroom import truth

from .conftest import SHOTS, Opener
from .test_a11y import violations
from .test_phone import PHONE, box, no_sideways_scroll, on_screen, session, widths

pytestmark = pytest.mark.browser

SIZES: dict[str, dict[str, Any]] = {
    "1440x900": {"viewport": {"width": 1440, "height": 900}},
    "1280x720": {"viewport": {"width": 1280, "height": 720}},
}
LESSON = "/?lesson=forgetting-zero-grad"
AUTO_STOP = 3  # "Before the second backward", moment 6: its question is auto


def lesson_doc(base_url: str) -> dict[str, Any]:
    doc: dict[str, Any] = httpx.get(f"{base_url}/api/lessons/forgetting-zero-grad").json()
    return doc


def stop_item(page: Page, n: int) -> Locator:
    return page.locator("#lesson-stops li").nth(n - 1)


def stop_button(page: Page, n: int) -> Locator:
    return stop_item(page, n).get_by_role("button")


def to_stop(page: Page, n: int) -> None:
    """Next stop until the n-th stop (1-based) is the current one."""
    for _ in range(n):
        if stop_item(page, n).get_attribute("aria-current") == "step":
            break
        before = page.locator("body").get_attribute("data-renders") or ""
        page.get_by_role("button", name="Next stop").click()
        expect(page.locator("body")).not_to_have_attribute("data-renders", before)
    expect(stop_item(page, n)).to_have_attribute("aria-current", "step")


def screenshot(page: Page, name: str) -> None:
    """The screen as the student sees it (the viewport, not the whole page)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def first_value(page: Page, store: str) -> Locator:
    return page.locator(f'[data-store="{store}"] .body .tensor').first.locator(".tbody")


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_the_note_the_loop_and_the_stores_on_one_screen(
    opened: Opener, size: dict[str, Any]
) -> None:
    page = opened(LESSON, size)
    name = f"{size['viewport']['width']}x{size['viewport']['height']}"
    to_stop(page, AUTO_STOP)
    expect(page.locator("#lesson-ask #predict-choices input").first).to_be_visible()
    assert page.evaluate("scrollY") == 0
    title, note = page.locator("#lesson-title"), page.locator("#lesson-note")
    expect(note).to_contain_text("Nobody emptied .grad")
    line = page.locator('#code [aria-current="step"]')
    expect(line).to_contain_text("loss.backward()")
    params, grad = page.locator('[data-store="params"]'), page.locator('[data-store="grad"]')
    for seen in (title, note, page.get_by_role("button", name="Next stop"), line):
        on_screen(page, seen)
    # both stores whole: their headings and their values (w 1.175, b 0.4; .grad -23.5, -8)
    for store in (params, grad):
        on_screen(page, store)
        on_screen(page, store.locator("h2"))
    expect(first_value(page, "params")).to_have_text("1.175")
    expect(first_value(page, "grad")).to_have_text("-23.5")
    on_screen(page, first_value(page, "params"))
    on_screen(page, first_value(page, "grad"))
    # the stop's question and its Answer too
    on_screen(page, page.locator("#predict-prompt"))
    on_screen(page, page.get_by_role("button", name="Answer", exact=True))
    # the lesson, the loop, the stores side by side; the stores level with each other
    n, code, p, g = box(note), box(page.locator("#code-panel")), box(params), box(grad)
    assert n["x"] + n["width"] < code["x"], (n, code)
    assert code["x"] + code["width"] < p["x"] < g["x"], (code, p, g)
    assert abs(p["y"] - g["y"]) < 1 and abs(p["y"] - code["y"]) < 1, (p, g, code)
    # Back, Next line and the timeline stay; the setup is folded behind "Setup"
    for control in ("#back", "#next", "#run", "#timeline", "#share"):
        on_screen(page, page.locator(control))
    setup = page.get_by_role("button", name="Setup", exact=True)
    on_screen(page, setup)
    expect(setup).to_have_attribute("aria-expanded", "false")
    for folded in ("#scenario", "#lr", "#preset", "#optimizer", "#scheduler", "#amp"):
        expect(page.locator(folded)).to_be_hidden()
    for panel in ("#build-panel", "#gallery-panel", "#author-panel"):
        expect(page.locator(panel)).to_be_hidden()
    assert widths(page)["doc"] == size["viewport"]["width"]
    screenshot(page, f"40-lesson-{name}-auto-stop")

    # the next stop (its custom question): the same screen
    to_stop(page, AUTO_STOP + 1)
    expect(page.locator("#lesson-question fieldset")).to_be_visible()
    for seen in (note, page.get_by_role("button", name="Next stop"), line, params, grad):
        on_screen(page, seen)
    expect(first_value(page, "grad")).to_have_text("-27.375")
    assert page.evaluate("scrollY") == 0
    screenshot(page, f"40-lesson-{name}-custom-stop")

    # Setup opens on everything the phone's Setup holds, and the lesson's other panels
    setup.click()
    expect(setup).to_have_attribute("aria-expanded", "true")
    for shown in ("#scenario", "#lr", "#preset", "#optimizer", "#scheduler", "#build-panel"):
        expect(page.locator(shown)).to_be_visible()
    expect(page.locator("#lr")).to_have_value("0.05")


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_the_stops_one_a_row_each_a_button_to_its_moment(
    opened: Opener, size: dict[str, Any], base_url: str
) -> None:
    page = opened(LESSON, size)
    stops = lesson_doc(base_url)["stops"]
    to_stop(page, AUTO_STOP)
    items = page.locator("#lesson-stops li")
    expect(items).to_have_count(len(stops))
    assert items.all_inner_texts() == [f"{s['title']} (moment {s['at']})" for s in stops]
    rows = [box(item) for item in items.all()]
    for above, below in pairwise(rows):
        assert below["y"] >= above["y"] + above["height"] - 0.5, (above, below)  # one a row
        assert abs(below["x"] - above["x"]) < 0.5, (above, below)  # in one column
    current = page.locator("#lesson-stops [aria-current]")
    expect(current).to_have_count(1)
    expect(current).to_have_text(f"{stops[AUTO_STOP - 1]['title']} (moment 6)")

    # a stop run already: the session goes back to its moment, the moments after it kept
    stop_button(page, 1).click()
    expect(stop_item(page, 1)).to_have_attribute("aria-current", "step")
    expect(page.get_by_role("slider", name="Timeline: moment")).to_have_value(str(stops[0]["at"]))
    held = session(page)
    assert (held["moment"], held["moments"]) == (stops[0]["at"], 6)
    assert page.evaluate("document.activeElement.textContent").startswith(stops[0]["title"])
    # a stop ahead: walked to from the newest moment
    stop_button(page, len(stops)).click()
    expect(stop_item(page, len(stops))).to_have_attribute("aria-current", "step")
    held = session(page)
    assert held["moment"] == held["moments"] == stops[-1]["at"]
    expect(page.locator("#lesson-note")).to_contain_text("12.09")
    expect(page.get_by_role("button", name="Next stop")).to_be_disabled()


def test_an_auto_question_is_asked_at_its_stop_and_scored(opened: Opener, base_url: str) -> None:
    page = opened(LESSON, SIZES["1440x900"])
    doc = lesson_doc(base_url)
    to_stop(page, AUTO_STOP)
    score = page.locator("#lesson-score")
    expect(score).to_have_text("Score: 0 of 2 questions right (0 answered).")
    # asked at the stop, in its panel, with no key pressed and Predict first off
    asked = page.locator("#lesson-panel #predict")
    expect(asked).to_be_visible()
    expect(page.locator("#predict-first")).not_to_be_checked()
    expect(page.locator("#predict-prompt")).to_contain_text("loss.backward()")
    # Next line asks rather than runs: it moves into the choices
    page.locator("#lesson-note").click()
    page.keyboard.press("n")
    expect(page.locator("#predict-choices input:focus")).to_have_count(1)
    held = session(page)
    assert held["moment"] == 6

    with httpx.Client(base_url=base_url, timeout=30) as client:
        q = client.get(f"/api/sessions/{held['id']}/question").json()
        right = truth(client, doc["setup"], 6, q)
    for choice in page.locator("#predict-choices input").all():
        wanted = choice.get_attribute("value") in right
        if wanted != choice.is_checked():
            choice.click()
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.locator("#predict-verdict")).to_have_text(re.compile(r"^Right\. "))
    # the line ran: the session is at the next stop, the verdict still beside its question
    expect(stop_item(page, AUTO_STOP + 1)).to_have_attribute("aria-current", "step")
    expect(asked).to_be_visible()
    expect(page.locator("#lesson-question fieldset")).to_be_visible()  # stop 4's, custom
    # the verdict is read first: on the screen, over the next stop's note, its choices folded
    verdict = on_screen(page, page.locator("#predict-verdict"))
    assert verdict["y"] < box(page.locator("#lesson-note"))["y"], verdict
    expect(page.locator("#predict-choices")).to_be_hidden()
    expect(score).to_have_text("Score: 1 of 2 questions right (1 answered).")
    expect(page.locator("#predict-score")).to_be_hidden()  # the lesson's score is the one here
    said = httpx.get(f"{base_url}/api/sessions/{held['id']}/lesson/score").json()
    auto = next(s for s in said["by_stop"] if s["kind"] == "auto")
    assert (auto["stop"], auto["answered"], auto["correct"]) == (AUTO_STOP - 1, True, True)
    assert session(page)["moment"] == 7
    # moving on gives predict first its place under the loop back, hidden with the switch off
    to_stop(page, AUTO_STOP + 2)
    expect(page.locator("#code-panel > #predict")).to_be_hidden()
    expect(page.locator("#lesson-ask")).to_be_empty()


@pytest.mark.parametrize("path", ["/", LESSON])
def test_the_build_panel_starts_on_moons_and_a_wide_preview_scrolls_in_its_box(
    opened: Opener, path: str
) -> None:
    page = opened(path, SIZES["1440x900"])
    if path == LESSON:
        page.get_by_role("button", name="Setup", exact=True).click()
    page.locator("#build-panel summary").click()
    expect(page.locator("#b-dataset")).to_have_value("sklearn:make_moons")
    expect(page.locator("#b-preview svg.preview-chart")).to_be_visible()  # two features: a scatter
    page.select_option("#b-dataset", "sklearn:load_breast_cancer")
    rows = page.locator("#b-preview .preview-rows")
    expect(rows.locator("th")).to_have_count(31)  # 30 features and the target
    w = widths(page)
    assert w["doc"] <= w["view"] == 1440 and w["body"] <= w["view"], w
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    b = box(rows)
    assert b["x"] >= 0 and b["x"] + b["width"] <= 1440, b
    assert rows.evaluate("el => el.scrollWidth > el.clientWidth + 100")  # it scrolls in its box
    expect(rows).to_have_attribute("tabindex", "0")  # and by keyboard


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_a_follower_sees_the_note_and_the_stores_on_one_screen(
    opened: Opener, size: dict[str, Any], base_url: str
) -> None:
    made = httpx.post(f"{base_url}/api/lessons/forgetting-zero-grad/sessions").json()
    sid = made["id"]
    code = httpx.post(f"{base_url}/api/sessions/{sid}/lecture").json()["code"]
    for _ in range(AUTO_STOP):
        httpx.post(f"{base_url}/api/sessions/{sid}/lesson/next-stop").raise_for_status()
    page = opened(f"/l/{code}", size)
    expect(page.locator("#stop-note-where")).to_have_text("Stop 3 of 6: Before the second backward")
    watch = page.locator("#watch")
    line = watch.locator('[aria-current="step"]')
    expect(line).to_contain_text("loss.backward()")
    for seen in (page.locator("#stop-note-text"), line):
        on_screen(page, seen)
    for store in ("params", "grad"):
        on_screen(page, watch.locator(f'[data-store="{store}"]'))
        on_screen(page, watch.locator(f'[data-store="{store}"] .tensor').first)
    note, stores = box(page.locator("#stop-note")), box(watch.locator(".stores"))
    assert note["x"] + note["width"] < stores["x"] and stores["y"] < note["y"] + note["height"]
    # the stop asks the class (its vote): the question beside the loop too, its first choice
    expect(page.locator("#prediction")).to_be_visible()
    on_screen(page, page.locator("#prediction .choice").first)
    assert widths(page)["doc"] == size["viewport"]["width"]
    screenshot(page, f"40-follower-{size['viewport']['width']}x{size['viewport']['height']}")


def test_the_lesson_layout_is_axe_clean(opened: Opener, base_url: str) -> None:
    page = opened(LESSON, SIZES["1280x720"], axe=True)
    to_stop(page, AUTO_STOP)
    expect(page.locator("#lesson-ask #predict-choices input").first).to_be_visible()
    assert violations(page) == []
    page.locator("#predict-choices input").first.check()
    page.get_by_role("button", name="Answer", exact=True).click()
    expect(page.locator("#predict-verdict")).not_to_be_empty()
    page.locator("#lesson-question fieldset").wait_for()
    assert violations(page) == []
    page.get_by_role("button", name="Setup", exact=True).click()
    page.locator("#build-panel summary").click()
    page.select_option("#b-dataset", "sklearn:load_breast_cancer")
    page.locator("#b-preview .preview-rows th").first.wait_for()
    assert violations(page) == []
    # a follower of a lecture on the lesson
    sid = session(page)["id"]
    code = httpx.post(f"{base_url}/api/sessions/{sid}/lecture").json()["code"]
    follower = opened(f"/l/{code}", SIZES["1440x900"], axe=True)
    expect(follower.locator("#stop-note-where")).to_contain_text("Stop 4 of 6")
    assert violations(follower) == []


def test_on_a_phone_the_lesson_is_as_before(opened: Opener) -> None:
    """390 x 844, touch: none of the desktop's lesson layout. The panel over the loop, as wide
    as it, its parts in their order (Next stop under the note), the stops one a row; Setup
    closed while the lesson's other panels show as before; the bar at the bottom; and an auto
    stop's question is predict first's sheet above the bar."""
    page = opened(LESSON, PHONE)
    to_stop(page, 2)
    panel, code = page.locator("#lesson-panel"), page.locator("#code-panel")
    assert page.locator(".layout").evaluate("el => getComputedStyle(el).display") == "flex"
    assert panel.evaluate("el => getComputedStyle(el).display") == "block"
    p, c = box(panel), box(code)
    assert p["y"] + p["height"] <= c["y"], (p, c)
    assert abs(p["x"] - c["x"]) < 0.5 and abs(p["width"] - c["width"]) < 0.5, (p, c)
    parts = [
        box(page.locator(s))
        for s in ("#lesson-title", "#lesson-stops", "#lesson-note", "#lesson-next", "#lesson-score")
    ]
    for above, below in pairwise(parts):
        assert above["y"] + above["height"] <= below["y"] + 0.5, (above, below)
    rows = [box(item) for item in page.locator("#lesson-stops li").all()]
    assert max(r["x"] for r in rows) - min(r["x"] for r in rows) < 0.5, rows
    for above, below in pairwise(rows):
        assert below["y"] >= above["y"] + above["height"] - 0.5, rows
    for seen in ("#lesson-title", "#lesson-note", "#lesson-next"):
        on_screen(page, page.locator(seen))
    for seen in ("Back", "Next line", "Run"):
        on_screen(page, page.get_by_role("button", name=seen, exact=True))
    assert page.locator(".dock-bar").evaluate("el => getComputedStyle(el).position") == "fixed"
    setup = page.get_by_role("button", name="Setup", exact=True)
    expect(setup).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#scenario")).to_be_hidden()
    for summary in ("#build-panel", "#gallery-panel", "#author-panel"):
        expect(page.locator(f"{summary} > summary")).to_be_visible()
    no_sideways_scroll(page)

    to_stop(page, AUTO_STOP)
    question, dock = box(page.locator("#predict")), box(page.locator(".timeline-pair"))
    assert question["y"] + question["height"] <= dock["y"] + 0.5, (question, dock)
    on_screen(page, page.locator("#predict-choices input").first)
    no_sideways_scroll(page)
