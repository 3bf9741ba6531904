"""Issue 31: the stepper on a phone (390 x 844, touch) and, at 1440 x 900, exactly the desktop
page as before. On the phone the loop and the stores come first, Back / Next line / Run sit in
a bar fixed at the bottom with the timeline on it, the setup and the share menu fold away, the
stores fit the width, a tap on a heat map's cell shows its value, and Predict first's question
sits above the bar."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from playwright.sync_api import FloatRect, Locator, Page, expect

from .conftest import Opener, shot
from .test_a11y import violations

pytestmark = pytest.mark.browser
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "has_touch": True,
    "is_mobile": True,
}
DESKTOP: dict[str, Any] = {"viewport": {"width": 1440, "height": 900}}
SCREEN = 844
SCENARIOS = ["neuron", "moons", "parabola"]


def box(locator: Locator) -> FloatRect:
    found = locator.bounding_box()
    assert found is not None, locator
    return found


def on_screen(page: Page, locator: Locator) -> FloatRect:
    """The element is visible, wholly inside the viewport and not under anything fixed (the
    element at its centre is the element itself or inside it)."""
    size = page.viewport_size
    assert size is not None
    expect(locator).to_be_visible()
    b = box(locator)
    assert b["x"] >= 0 and b["y"] >= 0, b
    assert b["x"] + b["width"] <= size["width"] + 0.5, (b, size)
    assert b["y"] + b["height"] <= size["height"] + 0.5, (b, size)
    on_top = locator.evaluate(
        "(el, [x, y]) => el.contains(document.elementFromPoint(x, y))",
        [b["x"] + b["width"] / 2, b["y"] + b["height"] / 2],
    )
    assert on_top, f"covered: {locator}"
    return b


def tap_next(page: Page, times: int = 1) -> None:
    """Tap Next line (a touch, as a finger does) and wait for the page to repaint."""
    for _ in range(times):
        before = page.locator("body").get_attribute("data-renders") or ""
        page.get_by_role("button", name="Next line").tap()
        expect(page.locator("body")).not_to_have_attribute("data-renders", before)


def value(page: Page, store: str, name: str) -> str:
    tensor = page.locator(f'section[aria-label="{store}"] .tensor[data-name="{name}"]')
    if tensor.locator(".none-word").count():
        return tensor.locator(".none-word").inner_text()
    return tensor.locator(".tbody .value").inner_text()


def widths(page: Page) -> dict[str, int]:
    result: dict[str, int] = page.evaluate(
        "({doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,"
        " view: innerWidth})"
    )
    return result


def no_sideways_scroll(page: Page) -> None:
    w = widths(page)
    assert w["doc"] == w["view"] == 390 and w["body"] <= w["view"], w


def session(page: Page) -> dict[str, Any]:
    """The page's own session, as the API holds it."""
    found: dict[str, Any] = page.evaluate(
        "async () => (await fetch('api/sessions/' +"
        " sessionStorage.getItem('loop-stepper.session'))).json()"
    )
    return found


@pytest.mark.parametrize("scenario", ["neuron", "moons"])
def test_the_loop_and_next_line_come_first(opened: Opener, scenario: str) -> None:
    page = opened(f"/?scenario={scenario}", PHONE)
    on_screen(page, page.get_by_role("heading", name=re.compile("^The loop")))
    on_screen(page, page.get_by_role("button", name="Next line"))
    on_screen(page, page.get_by_role("button", name="Back", exact=True))
    on_screen(page, page.get_by_role("button", name="Run", exact=True))
    on_screen(page, page.get_by_role("slider", name="Timeline: moment"))

    tap_next(page, 4)  # forward, loss, zero_grad, backward
    first = box(page.locator('section[aria-label="Parameters"] .tensor').first)
    assert first["y"] >= 0 and first["y"] + first["height"] <= 1.5 * SCREEN, first
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("freed")
    if scenario == "neuron":
        assert value(page, "Gradients", "weight") == "-23.5"
        assert value(page, "Gradients", "bias") == "-8"
    expect(page.get_by_role("slider", name="Timeline: moment")).to_have_value("4")

    # scrolled down to the loss, Next line is still there, under the thumb, and works
    page.locator('section[aria-label="Loss"]').evaluate("el => el.scrollIntoView({block: 'end'})")
    assert page.evaluate("scrollY") > 300
    on_screen(page, page.locator("#loss-value"))
    on_screen(page, page.get_by_role("button", name="Next line"))
    scrolled = page.evaluate("scrollY")
    tap_next(page)  # step
    # the stores stay where the student was (give or take a repainted line's height)
    assert abs(page.evaluate("scrollY") - scrolled) < 40
    on_screen(page, page.locator("#loss-value"))
    on_screen(page, page.get_by_role("button", name="Next line"))
    expect(page.locator('section[aria-label="Parameters"]')).to_have_attribute(
        "data-io", "read write"
    )
    if scenario == "neuron":
        assert value(page, "Parameters", "weight") == "1.175"
        assert value(page, "Parameters", "bias") == "0.4"
        expect(page.locator("#loss-value")).to_have_text("18.5")
    no_sideways_scroll(page)
    shot(page, f"31-phone-{scenario}-after-step")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_sideways_scroll(opened: Opener, scenario: str) -> None:
    page = opened(f"/?scenario={scenario}", PHONE)
    no_sideways_scroll(page)
    tap_next(page, 4)  # the graph drawn, .grad filled
    no_sideways_scroll(page)
    page.get_by_role("button", name="Setup", exact=True).tap()
    page.get_by_role("button", name="Share", exact=True).tap()
    page.get_by_role("button", name="Share this moment").tap()
    expect(page.get_by_role("textbox", name="Link to this moment")).to_be_visible()
    no_sideways_scroll(page)
    # every store, and what is in it, inside the page's width; the graph drawn to fit or
    # scrolling inside its own box
    for section in page.locator("main section.panel:visible").all():
        b = box(section)
        assert b["x"] >= 0 and b["x"] + b["width"] <= 390, (section, b)
    for tensor in page.locator(".stores .tensor:visible").all():
        t, store = box(tensor), box(tensor.locator("xpath=ancestor::section[1]"))
        assert t["x"] + t["width"] <= store["x"] + store["width"], (tensor, t, store)
    figure = page.locator(".graph-figure")
    f, svg = box(figure), box(figure.locator("svg"))
    scrolls = figure.evaluate("el => el.scrollWidth > el.clientWidth + 1")
    assert svg["width"] <= f["width"] + 0.5 or scrolls
    if scrolls:  # then it is a named Tab stop, so a keyboard reaches its hidden part
        expect(figure).to_have_attribute("tabindex", "0")


def test_heat_maps_fit_the_width(opened: Opener) -> None:
    """moons' 16x16 and 2x16 weights: cells sized to the store, so a row spans its width."""
    page = opened("/?scenario=moons", PHONE)
    store = box(page.locator('section[aria-label="Parameters"]'))
    for name, cols in (("2.weight", 16), ("4.weight", 16), ("0.weight", 2)):
        heatmap = page.locator(f'section[aria-label="Parameters"] [data-name="{name}"] .heatmap')
        b = box(heatmap)
        assert b["x"] + b["width"] <= store["x"] + store["width"], (name, b, store)
        cell = box(heatmap.locator(".cell").first)
        assert 6 <= cell["width"] <= 20.5, (name, cell)
        if cols == 16:  # as wide as fits: 16 cells of about 20px, not 13px ones
            assert b["width"] >= 0.8 * (store["width"] - 30), (name, b, store)


def test_a_tap_on_a_cell_shows_its_value_and_explains_grad(opened: Opener) -> None:
    page = opened("/?scenario=moons", PHONE)
    tap_next(page, 4)  # backward: .grad filled
    held = session(page)
    grad = next(p for p in held["params"] if p["name"] == "2.weight")["grad"]
    weight = next(p for p in held["params"] if p["name"] == "2.weight")["value"]
    # a cell with a gradient (a dead ReLU unit's row is all zeros)
    row, col = next((r, c) for r in range(16) for c in range(16) if grad[r][c] != 0)

    params = page.locator('section[aria-label="Parameters"] [data-name="2.weight"]')
    params.locator(".cell").nth(17).tap()  # row 1, column 1
    said = params.locator(".readout").inner_text()
    assert said.startswith("2.weight[1, 1] = "), said
    assert float(said.split(" = ")[1]) == weight[1][1]
    expect(params.locator(".explain-cell")).to_be_hidden()  # parameters: nothing to explain

    grads = page.locator('section[aria-label="Gradients"] [data-name="2.weight"]')
    expect(grads.locator(".readout")).to_have_text("tap a cell for its exact value")
    grads.locator(".cell").nth(16 * row + col).tap()
    said = grads.locator(".readout").inner_text()
    assert said.startswith(f"2.weight.grad[{row}, {col}] = "), said
    shown = float(said.split(" = ")[1])
    assert shown == grad[row][col]
    expect(page.locator("#explain")).not_to_be_visible()  # a tap shows; it does not open
    explain = grads.get_by_role("button", name=f"Explain 2.weight.grad[{row}, {col}]")
    explain.scroll_into_view_if_needed()
    on_screen(page, explain)
    explain.tap()
    title = page.locator("#explain-title")
    expect(title).to_have_text(re.compile(rf"^2\.weight\.grad element {16 * row + col} = "))
    assert float(title.inner_text().split(" = ")[1]) == shown
    parts = page.locator("#explain-body .parts > li")
    expect(parts).to_have_count(1)  # one backward since zero_grad
    assert math.isclose(float(parts.first.inner_text().split(" ")[0]), shown, rel_tol=1e-12)
    page.get_by_role("button", name="Close").tap()
    expect(page.locator("#explain")).not_to_be_visible()


def test_a_tap_offers_explain_only_where_grad_is_explained(opened: Opener) -> None:
    """Compare mode draws .grad with the same heat maps but has no explanations: a tap there
    shows the value and no Explain button that would do nothing."""
    page = opened("/?compare=skip_zero_grad&scenario=moons", PHONE)
    for row in range(1, 5):  # forward, loss, zero_grad, backward: one row each
        page.get_by_role("button", name="Next line").tap()
        expect(page.locator("body")).to_have_attribute("data-lockstep", str(row))
    tensor = page.locator(
        '[data-pane="correct"] section[aria-label="Gradients"] [data-name="2.weight"]'
    )
    tensor.locator(".cell").nth(20).tap()
    expect(tensor.locator(".readout")).to_have_text(re.compile(r"^2\.weight\.grad\[1, 4\] = "))
    expect(tensor.locator(".explain-cell")).to_be_hidden()
    expect(page.locator("#explain")).not_to_be_visible()


def test_setup_and_share_fold_away_and_setup_changes_lr(opened: Opener) -> None:
    page = opened("/", PHONE)
    setup = page.get_by_role("button", name="Setup", exact=True)
    share = page.get_by_role("button", name="Share", exact=True)
    lr = page.get_by_role("spinbutton", name="lr", exact=True)
    for toggle in (setup, share):
        expect(toggle).to_have_attribute("aria-expanded", "false")
    for hidden in (
        "#lr",
        "#scenario",
        "#optimizer",
        "#preset",
        "#skip_zero_grad",
        "#amp",
        "#share",
        "#download-py",
        "#download-ipynb",
    ):
        expect(page.locator(hidden)).to_be_hidden()

    setup.tap()
    expect(setup).to_have_attribute("aria-expanded", "true")
    for shown in ("#scenario", "#optimizer", "#preset", "#skip_zero_grad", "#scheduler"):
        expect(page.locator(shown)).to_be_visible()
    expect(lr).to_have_value("0.05")
    before = page.locator("body").get_attribute("data-renders") or ""
    lr.tap()
    lr.fill("0.1")
    lr.blur()  # change: the page PATCHes the session's lr
    expect(page.locator("body")).not_to_have_attribute("data-renders", before)
    assert session(page)["lr"] == 0.1
    assert "lr=0.1" in page.url
    tap_next(page, 5)
    assert value(page, "Parameters", "weight") == "2.35"  # 0 + 0.1 x 23.5
    assert value(page, "Parameters", "bias") == "0.8"  # 0 + 0.1 x 8
    setup.tap()
    expect(lr).to_be_hidden()

    share.tap()
    expect(share).to_have_attribute("aria-expanded", "true")
    sid = session(page)["id"]
    for link in ("Download as Python", "Download notebook"):
        expect(page.get_by_role("link", name=link)).to_have_attribute("href", re.compile(sid))
    page.get_by_role("button", name="Share this moment").tap()
    expect(page.get_by_role("textbox", name="Link to this moment")).to_have_value(
        re.compile(r"\?snapshot=")
    )


def test_predict_first_asks_above_the_bar(opened: Opener) -> None:
    page = opened("/?predict=1", PHONE)
    question = page.locator("#predict")
    expect(page.locator("#predict-prompt")).to_contain_text("out = model(X)")
    q, dock = box(question), box(page.locator(".timeline-pair"))
    assert q["y"] >= 0 and q["y"] + q["height"] <= dock["y"] + 0.5, (q, dock)
    choice = page.locator("#predict-choices input").last  # the questions vary: any choice
    on_screen(page, choice)
    choice.tap()
    on_screen(page, page.get_by_role("button", name="Answer"))
    page.get_by_role("button", name="Answer").tap()
    expect(page.locator("#predict-verdict")).to_have_text(re.compile(r"^(Right\.|Not quite)"))
    expect(page.locator("#predict-score")).to_have_text(re.compile(r"^Score: [01] of 1"))
    # the verdict comes up in the sheet, its start readable above the bar
    verdict, q = box(page.locator("#predict-verdict")), box(question)
    assert q["y"] - 0.5 <= verdict["y"] <= dock["y"] - 20, (verdict, q, dock)
    assert page.locator("#predict-verdict").evaluate(
        "(el, [x, y]) => el.contains(document.elementFromPoint(x, y))",
        [verdict["x"] + 5, verdict["y"] + 5],
    )
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("built")
    # the whole page still scrolls out from under the question: the last control clears it
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    last = box(page.locator("#controls"))
    q = box(question)
    assert last["y"] + last["height"] <= q["y"] + 0.5, (last, q)
    page.get_by_role("button", name="Next line").tap()  # the next question: about loss
    expect(page.locator("#predict-prompt")).to_contain_text("loss_fn")
    no_sideways_scroll(page)
    shot(page, "31-phone-predict-first")


def test_the_end_of_the_page_clears_the_bar(opened: Opener) -> None:
    page = opened("/?scenario=moons", PHONE)
    page.get_by_role("button", name="Setup", exact=True).tap()
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    last, dock = box(page.locator("#controls")), box(page.locator(".timeline-pair"))
    assert last["y"] + last["height"] <= dock["y"] + 0.5, (last, dock)
    on_screen(page, page.locator("#amp"))


@pytest.mark.parametrize("path", ["/?present=1", "/?embed=1"])
def test_presenting_and_embedded_keep_their_layout_on_a_phone(opened: Opener, path: str) -> None:
    page = opened(path, PHONE)
    expect(page.locator(".fold-toggle")).to_have_count(2)
    for toggle in page.locator(".fold-toggle").all():
        expect(toggle).to_be_hidden()
    for selector in (".dock-bar", ".timeline-pair", "#predict"):
        position = page.locator(selector).evaluate("el => getComputedStyle(el).position")
        assert position != "fixed", (selector, position)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_desktop_shows_every_control_without_opening_anything(
    opened: Opener, scenario: str
) -> None:
    page = opened(f"/?scenario={scenario}", DESKTOP)
    for toggle in page.locator(".fold-toggle").all():
        expect(toggle).to_be_hidden()
    controls = [
        "#back",
        "#next",
        "#run",
        "#predict-first",
        "#speed",
        "#reset",
        "#iterations",
        "#run-n",
        "#timeline",
        "#share",
        "#download-py",
        "#download-ipynb",
        "#scenario",
        "#lr",
        "#skip_zero_grad",
        "#step_first",
        "#preset",
        "#compare-link",
        "#optimizer",
        "#weight_decay",
        "#accumulate",
        "#max_norm",
        "#scheduler",
        "#keys",
    ]
    if scenario != "parabola":
        controls.append("#amp")
    for control in controls:
        on_screen(page, page.locator(control))
    # the controls above the layout, in one flow: nothing fixed, the loop beside the stores
    assert (
        box(page.locator("#controls"))["y"] + box(page.locator("#controls"))["height"]
        <= box(page.locator("main"))["y"]
    )
    for selector in (".dock-bar", ".timeline-pair"):
        assert page.locator(selector).evaluate("el => getComputedStyle(el).position") == "static"
    code, params = box(page.locator("#code-panel")), box(page.locator('[data-store="params"]'))
    assert code["x"] + code["width"] < params["x"] and abs(code["y"] - params["y"]) < 2
    no_scroll_x = widths(page)
    assert no_scroll_x["doc"] == no_scroll_x["view"] == 1440, no_scroll_x


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_axe_clean(opened: Opener, size: dict[str, Any]) -> None:
    page = opened("/?scenario=moons", size, axe=True)
    assert violations(page) == []
    if size is DESKTOP:
        page.keyboard.press("n")
    else:
        tap_next(page, 4)
        page.get_by_role("button", name="Setup", exact=True).tap()
        page.get_by_role("button", name="Share", exact=True).tap()
        grads = page.locator('section[aria-label="Gradients"] [data-name="2.weight"]')
        grads.locator(".cell").nth(3).tap()
        expect(grads.locator(".explain-cell")).to_be_visible()
    page.wait_for_timeout(200)
    assert violations(page) == []


def test_axe_clean_predicting_on_a_phone(opened: Opener) -> None:
    page = opened("/?predict=1", PHONE, axe=True)
    expect(page.locator("#predict-prompt")).not_to_be_empty()
    assert violations(page) == []
