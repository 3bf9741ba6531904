"""Build your own (issue 28) in a real Chromium: a digits MLP built in the panel, created and
stepped, its big tensors as heat maps and its confusion matrix; a CSV uploaded by the file
input; a bad layer's error on that layer; a shared link that opens the same setup; axe clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import Watch
from tests.browser.test_a11y import AXE_CONTEXT, violations

pytestmark = pytest.mark.browser


def open_panel(page: Page) -> None:
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    page.locator("#build-panel summary").click()


def layer_args(page: Page, index: int, **values: str) -> None:
    for name, value in values.items():
        field = page.locator(f"#b-l{index}-{name}")
        field.fill(value)
        field.dispatch_event("change")


def test_a_digits_mlp_built_in_the_panel(stepper: Page, watch: Watch) -> None:
    page = stepper
    page.locator("#build-panel summary").click()
    page.select_option("#b-dataset", "sklearn:load_digits")
    page.check("#b-standardize")
    page.fill("#b-batch", "64")
    page.dispatch_event("#b-batch", "change")
    # the starting 16-16-2 list becomes 64 -> 128 -> 64 -> 10
    layer_args(page, 0, out_features="128")
    layer_args(page, 2, out_features="64")
    layer_args(page, 4, out_features="10")
    page.locator("#b-l4-shape", has_text="(N, 10)").wait_for()
    assert page.locator("#b-l0-shape").inner_text() == "→ (N, 128) · 8320 parameters"
    page.locator("#b-summary", has_text="17226 parameters").wait_for()
    assert page.locator("#b-preview svg").count() == 16  # 8 x 8 images of digits
    page.get_by_role("button", name="Create the session").click()
    page.wait_for_url(re.compile(r"[?&]spec="))  # the page's CSP forbids wait_for_function's eval
    for _ in range(4):
        page.keyboard.press("n")
        page.wait_for_timeout(150)
    # 0.weight is 128 x 64: a heat map with its summary, not 8192 numbers
    weight = page.locator('section[aria-label="Parameters"] .tensor[data-name="0.weight"]')
    weight.locator(".summap .bcell").first.wait_for()
    grad = page.locator('section[aria-label="Gradients"] .tensor[data-name="0.weight"]')
    grad.locator(".summap .bcell").first.wait_for()
    page.locator("#output-panel").scroll_into_view_if_needed()
    page.locator("table.confusion caption", has_text="validation split").wait_for()
    caption = page.locator("table.confusion caption").inner_text()
    assert "accuracy" in caption and "loss" in caption
    assert page.locator("table.confusion tr").count() == 11  # the head and ten classes


def test_a_bad_layer_shows_its_error_on_that_layer(stepper: Page) -> None:
    page = stepper
    page.locator("#build-panel summary").click()
    layer_args(page, 2, in_features="32")
    error = page.locator("#b-l2-error")
    error.wait_for()
    assert error.inner_text() == "layer 2, Linear: expects 32 features, gets 16"
    field = page.locator("#b-l2-out_features")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.get_attribute("aria-describedby") == "b-l2-error"
    assert page.locator("#b-l0-error").count() == 0


def test_a_csv_by_the_file_input_and_a_shared_link(
    stepper: Page, tmp_path: Path, browser: Browser, base_url: str
) -> None:
    page = stepper
    page.locator("#build-panel summary").click()
    page.select_option("#b-dataset", "csv")
    csv = tmp_path / "shop.csv"
    csv.write_text("size,colour,price\n1.5,red,3\n2,blue,4.25\n3.5,red,7\n4,blue,8.5\n")
    page.set_input_files("#b-file", str(csv))
    page.locator("#b-target option[value='colour']").wait_for(state="attached")
    page.select_option("#b-target", "colour")
    page.dispatch_event("#b-target", "change")
    page.fill("#b-validation", "0")
    page.dispatch_event("#b-validation", "change")
    page.locator("#b-summary", has_text="classification of 2 classes").wait_for()
    page.get_by_role("button", name="Share this setup").click()
    link = page.get_by_role("textbox", name="Link to this setup").input_value()
    other = browser.new_context(base_url=base_url).new_page()
    other.goto(link)
    other.wait_for_selector("body[data-ready='1']")
    other.locator("#b-l4-title").wait_for(state="attached")
    assert other.locator("#scenario").input_value() == "custom"
    sid = other.evaluate("sessionStorage.getItem('loop-stepper.session')")
    spec = other.request.get(f"{base_url}/api/sessions/{sid}").json()["spec"]
    assert spec["data"]["kind"] == "csv" and spec["data"]["target"] == "colour"
    assert [layer["type"] for layer in spec["model"]] == [
        "Linear",
        "ReLU",
        "Linear",
        "ReLU",
        "Linear",
    ]
    other.context.close()


def test_the_panel_is_axe_clean(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, **AXE_CONTEXT)
    page = context.new_page()
    open_panel(page)
    page.locator("#b-l4-shape", has_text="(N, 2)").wait_for()
    layer_args(page, 2, in_features="32")
    page.locator("#b-l2-error").wait_for()
    assert violations(page) == []
    context.close()
