"""Mixed precision on the page, in real Chromium: the GradScaler's store as its first steps are
skipped, each tensor's dtype under autocast, the float16_without_scaler preset, and amp picked
in the setup row."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import Watch
from .test_bugs import click_and_render, open_page, run_iterations
from .test_page import next_line

pytestmark = pytest.mark.browser


def test_float16_with_a_gradscaler_skips_its_first_steps(page: Page, watch: Watch) -> None:
    page = open_page(page, "/?amp=float16")
    panel = page.locator("#amp-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".amp-scale")).to_have_text("scaler.get_scale() = 65536 (2^16)")
    expect(panel.locator(".amp-found")).to_have_text("this iteration: no unscale yet")
    lines = page.locator("button.line .src")
    autocast = 'with torch.autocast("cpu", dtype=torch.float16): '
    expect(lines.nth(0)).to_have_text(autocast + "out = model(X)")
    expect(lines.nth(3)).to_have_text("scaler.scale(loss).backward()")
    expect(lines.nth(4)).to_have_text("scaler.step(optimizer)")
    expect(lines.nth(5)).to_have_text("scaler.update()")
    next_line(page)  # forward under autocast: a float16 output, float32 weights
    expect(panel.locator(".amp-dtypes")).to_contain_text(
        "autocast float16: weights float32, out float16, loss none yet"
    )
    expect(page.locator("#graph")).to_contain_text("AddmmBackward0 · float16")
    next_line(page, 3)  # loss, zero_grad, backward (reads the scale)
    expect(panel).to_have_attribute("data-io", "read")
    expect(panel.locator(".amp-dtypes")).to_contain_text("loss float32")
    next_line(page)  # scaler.step: 18.5 * 2**16 overflows float16: skipped
    expect(panel.locator(".amp-found")).to_contain_text("inf/NaN found in .grad")
    expect(panel).to_have_attribute("data-io", "read write")
    params = page.locator('[data-store="params"]')
    expect(params).not_to_have_attribute("data-io", re.compile("write"))  # nothing moved
    next_line(page)  # scaler.update halves the scale
    expect(panel.locator(".amp-scale")).to_have_text("scaler.get_scale() = 32768 (2^15)")
    run_iterations(page, 5)
    expect(panel.locator(".amp-scale")).to_have_text("scaler.get_scale() = 2048 (2^11)")
    expect(panel.locator(".amp-skipped")).to_have_text(
        "5 steps skipped so far; 1 good step in a row (2000 double the scale)"
    )
    expect(page.get_by_label("Mixed precision", exact=True)).to_have_value("float16")
    assert "amp=float16" in page.url and "grad_scaler" not in page.url, page.url


def test_the_float16_without_scaler_preset_and_amp_in_the_setup_row(
    page: Page, watch: Watch
) -> None:
    page = open_page(page, "/?amp=float16&grad_scaler=0&preset=float16_without_scaler")
    expect(page.get_by_label("Loop")).to_have_value("float16_without_scaler")
    expect(page.locator("#preset-note")).to_contain_text("underflows to exactly 0")
    panel = page.locator("#amp-panel")
    expect(panel.locator(".amp-dtypes")).to_contain_text("no GradScaler")
    expect(panel.locator(".amp-scale")).to_be_hidden()
    run_iterations(page, 2)
    expect(page.locator("#loss")).to_contain_text("0.55404")
    # bfloat16 from the setup row: a new session, in the URL
    page.get_by_label("Mixed precision", exact=True).select_option("bfloat16")
    expect(panel.locator(".amp-dtypes")).to_contain_text(
        "autocast bfloat16: weights float32, out none yet"
    )
    expect(page).to_have_url(re.compile(r"amp=bfloat16"))
    next_line(page, 2)
    expect(page.locator("#graph")).to_contain_text("AddmmBackward0 · bfloat16")
    expect(page.locator("#loss")).to_contain_text("18.5")


def test_compare_mode_gives_both_sides_what_the_preset_needs(page: Page, watch: Watch) -> None:
    """float16 without a GradScaler against the correct float16 loop (with one): the correct
    side skips its first steps; a scheduler or Adam goes on both sides, softmax on one."""
    page = open_page(page, "/?compare=float16_without_scaler")

    def pair() -> tuple[dict[str, Any], dict[str, Any]]:
        ids = json.loads(page.evaluate("sessionStorage.getItem('loop-stepper.compare')"))
        get = page.request.get
        return get(f"/api/sessions/{ids['correct']}").json(), get(
            f"/api/sessions/{ids['bug']}"
        ).json()

    run = page.get_by_role("button", name="Run", exact=True)
    page.get_by_label("Iterations", exact=True).fill("2")
    click_and_render(page, run)
    correct, bug = pair()
    assert correct["amp"] == {"dtype": "float16", "scaler": True} and correct["preset"] == "correct"
    assert bug["amp"] == {"dtype": "float16", "scaler": False}
    assert bug["preset"] == "float16_without_scaler"
    assert [h["loss"] for h in correct["history"]] == [18.5, 18.5]  # skipped: scale coming down
    assert bug["history"][1]["loss"] == pytest.approx(0.55404, abs=1e-5)
    assert correct["scaler"]["skipped_steps"] == 2
    for name, needs in [
        ("scheduler_before_step", lambda s: s["scheduler"] is not None),
        ("resume_without_optimizer", lambda s: s["optimizer"]["kind"] == "adam"),
        ("softmax_before_loss", lambda s: s["scenario"] == "moons"),
    ]:
        page.get_by_label("Bug", exact=True).select_option(name)
        expect(page).to_have_url(re.compile(f"compare={name}"))
        expect(page.locator('[data-pane="correct"] .iteration')).to_contain_text("iteration 0")
        correct, bug = pair()
        assert needs(correct) and needs(bug), name
        assert correct["preset"] == "correct" and bug["preset"] == name
    assert bug["model_options"]["softmax_before_loss"]
    assert not correct["model_options"]["softmax_before_loss"]
    # back to the stepper with the bug's setup: it opens as that preset
    page.get_by_role("link", name="Back to the stepper").click()
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_label("Loop")).to_have_value("softmax_before_loss")
    expect(page.get_by_label("Softmax before the loss", exact=True)).to_be_checked()
