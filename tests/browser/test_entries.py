"""The page's loop entries come from the server's table (app/engine/entries.py), in real
Chromium: the "Add line" menu lists every entry labelled with its Python (10 of 17 were once
empty), a line added from it shows its Python and comment, and the extra stores show from the
table's reads and writes."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from app.engine.entries import ENTRIES

from .conftest import Watch
from .test_bugs import click_and_render, open_page
from .test_page import next_line

pytestmark = pytest.mark.browser


def test_the_add_line_menu_lists_every_entry_labelled_with_its_python(
    page: Page, watch: Watch
) -> None:
    page = open_page(page)
    options = page.locator("#add-entry option")
    expect(options).to_have_count(len(ENTRIES))
    shown = options.evaluate_all("os => os.map((o) => [o.value, o.textContent, o.label])")
    # every entry of the server's table, in its order, labelled with the table's Python
    # (an option's label is its text with white space collapsed, as Chromium shows it)
    assert shown == [[e.name, e.code(), " ".join(e.code().split())] for e in ENTRIES.values()]
    labels = {value: text for value, text, _ in shown}
    # the ones Chromium showed empty before, spelled out (a table that lost one fails here)
    assert labels["clip_grad_norm"] == (
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"
    )
    assert labels["scheduler_step"] == "scheduler.step()"
    assert labels["train"] == "model.train()"
    assert labels["eval"] == "model.eval()"
    assert labels["log_item"] == "running_loss += loss.item()"
    assert labels["log_tensor"] == "running_loss += loss"
    assert labels["checkpoint"] == (
        'ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}'
    )
    assert labels["checkpoint(model_only=True)"] == 'ckpt = {"model": model.state_dict()}'
    assert labels["resume"].startswith("model, optimizer = fresh(ckpt)")
    assert labels["scaler_update"] == "scaler.update()"
    assert all(label.strip() for label in labels.values())
    # what the page was given is the server's table itself
    names = page.evaluate(
        "JSON.parse(document.getElementById('catalogue').textContent).entries.map((e) => e.name)"
    )
    assert names == list(ENTRIES)


def test_a_line_added_from_the_menu_runs_and_its_stores_show(page: Page, watch: Watch) -> None:
    page = open_page(page)
    expect(page.locator('#extras [data-store="running_loss"]')).to_be_hidden()
    page.get_by_role("button", name="Edit the loop").click()
    for name in ("clip_grad_norm", "log_item"):
        page.get_by_label("Add", exact=True).select_option(name)
        page.get_by_label("at", exact=True).select_option(label="after line 4: loss.backward()")
        click_and_render(page, page.get_by_role("button", name="Add line"))
    # the program is the server's: each new line with the table's Python and comment
    lines = page.locator("button.line:not(.skipped)")
    expect(lines.locator(".src")).to_have_text(
        [
            "out = model(X)",
            "loss = loss_fn(out, y)",
            "optimizer.zero_grad()",
            "loss.backward()",
            "running_loss += loss.item()",
            "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
            "optimizer.step()",
        ]
    )
    expect(lines.locator(".comment")).to_have_text(
        [ENTRIES[e].comment for e in ("forward", "loss", "zero_grad", "backward")]
        + [ENTRIES["log_item"].comment, ENTRIES["clip_grad_norm"].comment, ENTRIES["step"].comment]
    )
    # log_item writes running_loss (the table says so): its store shows, before it ever ran
    running = page.locator('#extras [data-store="running_loss"]')
    expect(running).to_contain_text("0 (a Python float: no graph kept)")
    expect(page.locator('#extras [data-store="ckpt"]')).to_be_hidden()
    next_line(page, 5)  # to running_loss += loss.item(): the worked example's first loss
    expect(running).to_contain_text("18.5 (a Python float: no graph kept)")
    expect(running).to_have_attribute("data-io", "read write")
    next_line(page)  # the clip: PyTorch's total norm of (-23.5, -8)
    expect(page.locator("#extras .line-said")).to_contain_text(
        "clip_grad_norm returned 24.8244: above max_norm 1, every .grad scaled down"
    )
