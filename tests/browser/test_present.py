"""Presenter mode fits the projector: at 1920x1080 and at 1280x720 the loop (its lines and Next
line) and every store (params, the graph, .grad, the loss, and the optimizer state when the
session has one) are wholly on screen, and the page itself has nothing to scroll to."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from .conftest import Watch, attach, shot
from .test_a11y import violations

pytestmark = pytest.mark.browser
PROJECTORS = [ViewportSize(width=1920, height=1080), ViewportSize(width=1280, height=720)]
STORES = ["Parameters", "Gradients", "Graph", "Loss"]


@pytest.fixture(params=PROJECTORS, ids=lambda v: f"{v['width']}x{v['height']}")
def projector(request: pytest.FixtureRequest, browser: Browser, base_url: str) -> Iterator[Page]:
    """A page at the projector's size; the CSP bypassed only so axe can be added later."""
    context = browser.new_context(base_url=base_url, bypass_csp=True, viewport=request.param)
    page = context.new_page()
    watch = attach(page)
    yield page
    watch.check(base_url)
    context.close()


def inside(page: Page, selector: str, within: str | None = None) -> int:
    """Every element matching `selector` is visible and wholly inside the viewport (and inside
    the box of `within`, the store holding it: nothing hidden by a store's own scrolling)."""
    size = page.viewport_size
    assert size is not None
    items = page.locator(selector)
    assert items.count() > 0, selector
    outer = page.locator(within).bounding_box() if within else None
    for i in range(items.count()):
        expect(items.nth(i)).to_be_visible()
        box = items.nth(i).bounding_box()
        assert box is not None, selector
        right, bottom = box["x"] + box["width"], box["y"] + box["height"]
        assert box["x"] >= 0 and box["y"] >= 0, (selector, box)
        assert right <= size["width"] and bottom <= size["height"], (selector, box, size)
        if outer:
            assert box["x"] >= outer["x"] - 0.5 and box["y"] >= outer["y"] - 0.5, (selector, box)
            assert right <= outer["x"] + outer["width"] + 0.5, (selector, box, outer)
            assert bottom <= outer["y"] + outer["height"] + 0.5, (selector, box, outer)
    return items.count()


def no_scroll(page: Page) -> None:
    scroll = page.evaluate(
        "({w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight,"
        " iw: innerWidth, ih: innerHeight})"
    )
    assert scroll["h"] <= scroll["ih"] and scroll["w"] <= scroll["iw"], scroll


def fits(page: Page, stores: list[str], graph: bool = True) -> None:
    """The loop and the stores on screen, with what they hold; nothing to scroll."""
    assert inside(page, "#code-panel .line") == 5
    inside(page, "#code-panel")
    inside(page, "#next")
    for store in stores:
        section = f'section[aria-label="{store}"]'
        inside(page, section)
        inside(page, f"{section} h2", section)
    for store in ("Parameters", "Gradients"):
        inside(page, f'section[aria-label="{store}"] .tensor', f'section[aria-label="{store}"]')
    inside(page, ".graph-status", 'section[aria-label="Graph"]')
    if graph:  # none before the first forward
        inside(page, '[data-store="graph"] svg', 'section[aria-label="Graph"]')
    inside(page, "#loss-value", 'section[aria-label="Loss"]')
    inside(page, '[data-store="loss"] svg', 'section[aria-label="Loss"]')
    no_scroll(page)


def step(page: Page, lines: int) -> None:
    next_line = page.get_by_role("button", name="Next line")
    for _ in range(lines):
        before = page.locator("body").get_attribute("data-renders")
        next_line.click()
        expect(page.locator("body")).not_to_have_attribute("data-renders", before or "")


def value(page: Page, store: str, name: str) -> str:
    return page.locator(
        f'section[aria-label="{store}"] .tensor[data-name="{name}"] .tbody .value'
    ).inner_text()


@pytest.mark.parametrize("setup", ["", "&optimizer=sgd&momentum=0.9"], ids=["sgd", "momentum"])
def test_presenter_mode_fits_the_projector(projector: Page, setup: str) -> None:
    page = projector
    size = page.viewport_size
    assert size is not None
    page.goto(f"/?present=1{setup}")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_role("button", name="Presenter mode")).to_have_attribute(
        "aria-pressed", "true"
    )
    # type scales with the screen: 21 px at 1080, 15 px at 720
    font = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert font == pytest.approx(min(21, max(15, 0.0195 * size["height"])), abs=0.1)
    stores = STORES + (["Optimizer state"] if setup else [])
    fits(page, STORES, graph=False)  # before any line: the stores are there, empty
    step(page, 5)  # one iteration: forward, loss, zero_grad, backward, step
    expect(page.locator("#iteration")).to_have_text("iteration 1, next: forward")
    assert value(page, "Parameters", "weight") == "1.175"
    assert value(page, "Parameters", "bias") == "0.4"
    assert value(page, "Gradients", "weight") == "-23.5"
    expect(page.locator("#loss-value")).to_have_text("18.5")
    if setup:
        expect(page.locator('section[aria-label="Optimizer state"]')).to_contain_text("-23.5")
    fits(page, stores)
    step(page, 4)  # into the second: a graph drawn, .grad of the second batch
    expect(page.locator('section[aria-label="Gradients"]')).to_contain_text("-3.875")
    expect(page.locator('section[aria-label="Graph"] svg')).to_be_visible()
    fits(page, stores)
    shot(page, f"24-present-{size['width']}x{size['height']}-{'momentum' if setup else 'sgd'}")
    assert violations(page) == []


@pytest.mark.parametrize(
    ("setup", "extra", "after", "groups"),
    [
        ("optimizer=adam", "Optimizer state", "step", 5),
        (
            "scenario=moons&batchnorm=1&scheduler=step&step_size=1&gamma=0.5",
            "More stores",
            "step",
            4,
        ),
        ("amp=float16", "Autocast and GradScaler", "backward", 5),  # its loop: 6 lines
    ],
    ids=["adam", "moons-more-stores", "float16-scaler"],
)
def test_stores_too_big_for_their_cell_scroll_inside_it(
    projector: Page, setup: str, extra: str, after: str, groups: int
) -> None:
    """Adam's four tensors a parameter, moons' heat maps, the "More stores" row, the GradScaler:
    they scroll inside their cell (by keyboard too: axe), and the page still has nothing to
    scroll."""
    page = projector
    page.goto(f"/?present=1&{setup}")
    page.wait_for_selector("body[data-ready='1']")
    step(page, 9)
    expect(page.locator("#iteration")).to_have_text(f"iteration 2, next: {after}")
    stores = [*STORES, extra]
    for store in stores:
        inside(page, f'section[aria-label="{store}"]')
    inside(page, "#code-panel .line")
    no_scroll(page)
    scrolls = page.locator('.stores > .store:not([hidden]) > [role="group"][tabindex="0"]')
    expect(scrolls).to_have_count(groups)  # each shown store's body, reachable by keyboard
    assert violations(page) == []


def test_presenter_mode_with_a_lecture_fits(projector: Page) -> None:
    """Starting a lecture while presenting puts its panel (code, QR, followers) in a column on
    the right; the loop and the stores still fit beside it."""
    page = projector
    page.goto("/?present=1")
    page.wait_for_selector("body[data-ready='1']")
    page.get_by_role("button", name="Start a lecture").click()
    expect(page.locator("#lecture-code")).to_have_text(re.compile(r"^[2-9A-HJ-NP-Z]{7}$"))
    step(page, 4)
    expect(page.locator('section[aria-label="Gradients"]')).to_contain_text("-23.5")
    fits(page, STORES)
    inside(page, "#lecture-code")
    inside(page, "#lecture-qr svg")
    inside(page, ".followers")
    page.get_by_role("button", name="End the lecture").click()
    expect(page.locator("#lecture")).to_be_hidden()
    fits(page, STORES)


def test_presenter_mode_is_off_by_default(page: Page, watch: Watch) -> None:
    """The normal page is untouched: it is a document that scrolls, at the usual type size."""
    page.set_viewport_size(PROJECTORS[1])
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    font = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert font == 15
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height > PROJECTORS[1]["height"]  # the full page with its setup rows scrolls
