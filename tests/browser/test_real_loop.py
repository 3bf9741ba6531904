"""The rest of the real loop on the page, in real Chromium: the new stores (lr, mode, buffers,
running_loss, the checkpoint), what a line returned or warned, two presets and the new setup."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import Watch
from .test_bugs import open_page, run_iterations
from .test_page import next_line

pytestmark = pytest.mark.browser


def store(page: Page, name: str):  # type: ignore[no-untyped-def]
    return page.locator(f'#extras [data-store="{name}"]')


def test_scheduler_before_step_on_moons_with_dropout_and_batchnorm(
    page: Page, watch: Watch
) -> None:
    page = open_page(
        page,
        "/?scenario=moons&dropout=0.5&batchnorm=1&scheduler=step&step_size=1&gamma=0.5"
        "&preset=scheduler_before_step",
    )
    expect(page.locator("#extras")).to_be_visible()
    expect(store(page, "lr")).to_contain_text('param_groups[0]["lr"] = 0.3')
    expect(store(page, "lr")).to_contain_text("StepLR(step_size=1, gamma=0.5)")
    expect(store(page, "mode")).to_contain_text("model.training = True")
    expect(store(page, "buffers")).to_contain_text("1.num_batches_tracked: 0")
    expect(store(page, "running_loss")).to_be_hidden()
    expect(store(page, "ckpt")).to_be_hidden()
    next_line(page)  # forward: train mode, so BatchNorm's statistics move
    expect(store(page, "buffers")).to_contain_text("1.num_batches_tracked: 1")
    expect(store(page, "buffers")).to_have_attribute("data-io", "write")
    expect(store(page, "mode")).to_have_attribute("data-io", "read")
    next_line(page, 3)  # loss, zero_grad, backward
    next_line(page)  # scheduler.step() before optimizer.step(): PyTorch's own warning
    expect(page.locator("#extras .line-said")).to_contain_text(
        "PyTorch warned: Detected call of `lr_scheduler.step()` before `optimizer.step()`."
    )
    expect(store(page, "lr")).to_contain_text('param_groups[0]["lr"] = 0.15')
    expect(store(page, "lr")).to_have_attribute("data-io", "read write")
    next_line(page)  # step reads the lr
    expect(store(page, "lr")).to_have_attribute("data-io", "read")
    expect(page.locator("#extras .line-said")).to_be_hidden()
    # the setup is in the URL and in the "New session with" row
    assert re.search(r"scheduler=step.*dropout=0\.5.*batchnorm=1", page.url), page.url
    expect(page.get_by_label("Scheduler", exact=True)).to_have_value("step")
    expect(page.get_by_label("Dropout p", exact=True)).to_have_value("0.5")
    expect(page.get_by_label("BatchNorm", exact=True)).to_be_checked()
    expect(page.get_by_label("Loop")).to_have_value("scheduler_before_step")


def test_log_tensor_keeps_graphs_and_clip_says_its_norm(page: Page, watch: Watch) -> None:
    page = open_page(page, "/?preset=log_tensor")
    expect(store(page, "running_loss")).to_contain_text("0 (a Python float: no graph kept)")
    run_iterations(page, 3)
    expect(store(page, "running_loss")).to_contain_text("keeps 3 loss graphs alive")
    expect(store(page, "mode")).to_be_hidden()
    expect(store(page, "buffers")).to_be_hidden()
    # a new loop: clip after backward, then a checkpoint; clip's result is said
    page.evaluate("sessionStorage.clear()")  # a fresh session, not this one reprogrammed
    page.goto("/?program=forward,loss,zero_grad,backward,clip_grad_norm,step,checkpoint")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("button.line .src").nth(4)).to_have_text(
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"
    )
    expect(store(page, "ckpt")).to_contain_text("None: no checkpoint taken yet")
    next_line(page, 5)
    expect(page.locator("#extras .line-said")).to_contain_text(
        "clip_grad_norm returned 24.8244: above max_norm 1, every .grad scaled down"
    )
    next_line(page, 2)
    expect(store(page, "ckpt")).to_contain_text(
        'holds "model" and "optimizer", taken at iteration 1 after 1 step'
    )
    expect(store(page, "ckpt")).to_have_attribute("data-io", "write")


def test_a_scheduler_chosen_in_the_setup_row_makes_a_new_session(page: Page, watch: Watch) -> None:
    page = open_page(page)
    expect(page.locator("#extras")).to_be_hidden()
    page.get_by_label("Scheduler", exact=True).select_option("cosine")
    expect(page.locator("#extras")).to_be_visible()
    expect(store(page, "lr")).to_contain_text("CosineAnnealingLR(T_max=10)")
    assert "scheduler=cosine" in page.url and "T_max=10" in page.url
