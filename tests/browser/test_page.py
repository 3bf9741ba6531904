"""The stepper page in real Chromium: numbers read off the page, as a student reads them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import Watch, shot

pytestmark = pytest.mark.browser


def value(page: Page, store: str, name: str) -> str:
    """The number (or None) shown for tensor `name` in the store's section."""
    tensor = page.locator(f'section[aria-label="{store}"] .tensor[data-name="{name}"]')
    if tensor.locator(".none-word").count():
        return tensor.locator(".none-word").inner_text()
    return tensor.locator(".tbody .value").inner_text()


def line(page: Page, name: str):  # type: ignore[no-untyped-def]
    return page.locator(f'button.line[data-line="{name}"]')


def next_line(page: Page, times: int = 1) -> None:
    for _ in range(times):
        before = int(page.locator("body").get_attribute("data-renders") or 0)
        page.get_by_role("button", name="Next line").click()
        expect(page.locator("body")).to_have_attribute("data-renders", str(before + 1))


def test_worked_example(stepper: Page) -> None:
    page = stepper
    expect(page).to_have_title(re.compile("Loop Stepper"))
    for store in ("Parameters", "Gradients", "Graph", "Loss"):
        expect(page.locator(f'section[aria-label="{store}"]')).to_be_visible()
    expect(line(page, "forward")).to_have_attribute("aria-current", "step")
    assert value(page, "Gradients", "weight") == "None"
    expect(page.locator('section[aria-label="Graph"]')).to_contain_text("empty")

    next_line(page)  # forward
    expect(page.locator('section[aria-label="Graph"]')).to_contain_text("AddmmBackward0")
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("built")
    expect(page.locator('section[aria-label="Graph"]')).to_have_attribute("data-io", "write")
    expect(page.locator('section[aria-label="Parameters"]')).to_have_attribute("data-io", "read")
    expect(line(page, "loss")).to_have_attribute("aria-current", "step")
    expect(line(page, "forward")).to_have_class(re.compile(r"\bran\b"))

    next_line(page)  # loss
    expect(page.locator("#loss-value")).to_have_text("18.5")
    expect(page.locator('section[aria-label="Graph"]')).to_contain_text("MseLossBackward0")
    next_line(page)  # zero_grad
    assert value(page, "Gradients", "weight") == "None"
    next_line(page)  # backward
    assert value(page, "Gradients", "weight") == "-23.5"
    assert value(page, "Gradients", "bias") == "-8"
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("freed")
    expect(page.locator("#announcer")).to_have_text(re.compile(r"backward: weight.grad -23.5"))
    shot(page, "01-worked-example-after-backward")

    next_line(page)  # step
    assert value(page, "Parameters", "weight") == "1.175"
    assert value(page, "Parameters", "bias") == "0.4"
    expect(page.locator('section[aria-label="Parameters"] .value.changed')).to_have_count(2)
    expect(page.locator('section[aria-label="Parameters"]')).to_have_attribute(
        "data-io", "read write"
    )
    expect(page.locator("#output .fit")).to_have_count(1)
    shot(page, "02-worked-example-after-step")

    next_line(page, 4)  # second iteration up to backward: fresh gradient
    assert value(page, "Gradients", "weight") == "-3.875"
    assert value(page, "Gradients", "bias") == "-1.325"
    next_line(page)
    assert value(page, "Parameters", "weight") == "1.36875"
    assert value(page, "Parameters", "bias") == "0.46625"
    expect(page.locator(".loss-chart path.series.loss")).to_have_count(1)


def test_skip_zero_grad_piles_up(stepper: Page) -> None:
    page = stepper
    page.get_by_label("Skip zero_grad").check()
    expect(line(page, "zero_grad")).to_have_class(re.compile("skipped"))
    expect(line(page, "zero_grad")).not_to_have_attribute("aria-current", "step")
    assert "skip_zero_grad=1" in page.url
    next_line(page, 8)  # forward, loss, backward, step twice
    assert value(page, "Gradients", "weight") == "-27.375"
    assert value(page, "Gradients", "bias") == "-9.325"
    assert value(page, "Parameters", "weight") == "2.54375"
    shot(page, "03-skip-zero-grad")


def test_step_first_moves_nothing(stepper: Page) -> None:
    page = stepper
    page.get_by_label("Step before backward").check()
    expect(page.locator("button.line").nth(3)).to_have_attribute("data-line", "step")
    next_line(page, 14)  # two iterations, then forward, loss, zero_grad, step
    assert value(page, "Parameters", "weight") == "0"
    assert value(page, "Parameters", "bias") == "0"
    assert value(page, "Gradients", "weight") == "None"
    expect(page.locator("#announcer")).to_have_text("step: nothing moved, every .grad is None.")
    shot(page, "04-step-first")


def test_backward_twice_shows_pytorchs_error(stepper: Page, watch: Watch) -> None:
    page = stepper
    next_line(page, 4)
    line(page, "backward").click()
    problem = page.get_by_role("alert")
    expect(problem).to_contain_text("Trying to backward through the graph a second time")
    expect(problem).to_contain_text("loss.backward()")
    # the message sits right under the line that failed
    expect(
        page.locator('[role="listitem"]:has(button[data-line="backward"]) .problem')
    ).to_be_visible()
    assert value(page, "Gradients", "weight") == "-23.5"  # the failed line changed nothing
    shot(page, "05-backward-twice")
    next_line(page)  # the page still works: step
    assert value(page, "Parameters", "weight") == "1.175"
    expect(problem).to_be_hidden()


def test_enter_on_a_line_runs_it(stepper: Page) -> None:
    page = stepper
    line(page, "loss").focus()
    page.keyboard.press("Enter")
    # loss before any forward: the server refuses, in words, beside the line
    expect(page.get_by_role("alert")).to_contain_text("loss")
    line(page, "forward").focus()
    page.keyboard.press("Enter")
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("built")


def test_run_pause_reset(stepper: Page) -> None:
    page = stepper
    page.get_by_label("Speed").select_option("30")
    run = page.get_by_role("button", name="Run", exact=True)
    run.click()
    pause = page.get_by_role("button", name="Pause")
    expect(pause).to_be_visible()
    expect(page.locator(".loss-chart path.series.loss")).to_have_count(1)
    # the page's CSP forbids eval (so no wait_for_function): wait on the text instead
    expect(page.locator("#iteration")).to_contain_text(re.compile(r"iteration ([3-9]|\d\d)"))
    pause.click()
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_visible()
    page.wait_for_timeout(200)
    stopped = page.evaluate("window.loopStepper.session.iteration")
    page.wait_for_timeout(300)
    assert page.evaluate("window.loopStepper.session.iteration") == stopped
    assert value(page, "Parameters", "weight") != "0"
    page.get_by_role("button", name="Reset").click()
    expect(page.locator(".tensor[data-name='weight'] .value").first).to_have_text("0")
    assert value(page, "Gradients", "weight") == "None"
    expect(line(page, "forward")).to_have_attribute("aria-current", "step")


def test_keyboard(stepper: Page) -> None:
    page = stepper
    expect(page.locator("#keys")).to_be_visible()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("n")
    expect(line(page, "loss")).to_have_attribute("aria-current", "step")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#loss-value")).to_have_text("18.5")
    page.keyboard.press(" ")
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    page.keyboard.press(" ")
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_visible()
    page.keyboard.press("r")
    expect(page.locator("#loss-value")).to_have_text("None")
    expect(line(page, "forward")).to_have_attribute("aria-current", "step")


def test_presenter_mode(page: Page, watch: Watch) -> None:
    page.set_viewport_size({"width": 1920, "height": 1080})  # type scales with the height
    page.goto("/?present=1")
    page.wait_for_selector("body[data-ready='1']")
    toggle = page.get_by_role("button", name="Presenter mode")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    big = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert big >= 20
    next_line(page, 4)
    shot(page, "06-presenter")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    assert "present=1" not in page.url
    small = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert small < big


def test_url_and_reload_keep_the_session(page: Page, watch: Watch) -> None:
    page.goto("/?scenario=neuron&lr=0.1&skip_zero_grad=0&step_first=0")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_label("lr")).to_have_value("0.1")
    next_line(page, 5)
    assert value(page, "Parameters", "weight") == "2.35"
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert value(page, "Parameters", "weight") == "2.35"  # same live session
    # a stored session the server no longer has: a fresh one, no error
    page.evaluate("sessionStorage.setItem('loop-stepper.session', 'gone')")
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert value(page, "Parameters", "weight") == "0"


def test_moons(page: Page, watch: Watch) -> None:
    page.goto("/?scenario=moons")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_label("Scenario")).to_have_value("moons")
    expect(page.get_by_label("lr")).to_have_value("0.3")
    next_line(page, 4)
    expect(page.locator("#loss-value")).to_have_text("0.7109")
    heat = page.locator('section[aria-label="Gradients"] .tensor[data-name="2.weight"] .heatmap')
    heat.focus()
    page.keyboard.press("ArrowRight")
    readout = page.locator('section[aria-label="Gradients"] .tensor[data-name="2.weight"] .readout')
    expect(readout).to_have_text(re.compile(r"2\.weight\.grad\[0, 1\] = -?\d"))
    expect(page.locator('section[aria-label="Graph"]')).to_contain_text("NllLossBackward0")
    expect(page.locator("#output .grid rect")).to_have_count(900)
    shot(page, "07-moons")
    page.get_by_label("Scenario").select_option("neuron")
    expect(page.get_by_label("lr")).to_have_value("0.05")
    assert value(page, "Gradients", "weight") == "None"


def test_controls_are_named_and_lr_is_patched(stepper: Page) -> None:
    page = stepper
    for name in ("Next line", "Run", "Reset", "Presenter mode"):
        expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
    for label in ("Speed", "Scenario", "lr", "Skip zero_grad", "Step before backward"):
        expect(page.get_by_label(label)).to_be_visible()
    # a store's role is said in words too, not only by a border colour
    expect(page.get_by_label("Legend")).to_contain_text("read")
    expect(page.get_by_label("Legend")).to_contain_text("written")
    lr = page.get_by_label("lr")
    lr.fill("0.1")
    lr.press("Tab")
    expect(page).to_have_url(re.compile(r"lr=0\.1\b"))
    next_line(page, 5)
    assert value(page, "Parameters", "weight") == "2.35"  # 0.1 * 23.5
    expect(page.locator("#announcer")).to_have_text("step: weight 2.35, bias 0.8.")
