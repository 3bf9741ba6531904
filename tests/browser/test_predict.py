"""Predict first and Explain a number on the page (issue 17), on the worked example."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from .test_a11y import AXE_CONTEXT, violations
from .test_page import next_line

pytestmark = pytest.mark.browser


def test_predict_first_marks_answers_and_keeps_score(stepper: Page) -> None:
    page = stepper
    page.keyboard.press("p")
    expect(page.get_by_role("checkbox", name="Predict first")).to_be_checked()
    expect(page).to_have_url(re.compile(r"predict=1"))
    section = page.locator("#predict")
    verdict = page.locator("#predict-verdict")
    score = page.locator("#predict-score")
    rights = 0
    for n in range(4):
        page.get_by_role("button", name="Next line").click()
        expect(page.locator("#predict-prompt")).not_to_be_empty()
        # the new question is in: its choices replaced the last ones, the verdict is cleared
        expect(verdict).to_be_empty()
        expect(page.get_by_role("button", name="Answer")).to_be_enabled()
        inputs = section.locator("#predict-choices input")
        expect(inputs.first).to_be_visible()
        ids = [inputs.nth(i).get_attribute("value") for i in range(inputs.count())]
        # pick a wrong one first time round on backward: its misconception is shown
        choice = "yes" if "yes" in ids else ids[0]
        section.locator(f'#predict-choices input[value="{choice}"]').check()
        page.get_by_role("button", name="Answer").click()
        expect(score).to_contain_text(f"of {n + 1}")
        text = verdict.inner_text()
        if text.startswith("Right."):
            rights += 1
        else:  # the true choice in words, then why the one picked is wrong
            assert re.match(r"Not quite: (the answers? (is|are) “|none of them is true)", text)
            assert "You chose “" in text, text
    expect(score).to_contain_text(f"Score: {rights} of 4")
    expect(page.locator('section[aria-label="Gradients"] .tensor[data-name="weight"] .value')
           ).to_have_text("-23.5")  # fmt: skip


def test_predict_first_asks_as_soon_as_the_session_is_ready(page: Page) -> None:
    """?predict=1: the first question is there before any click, never an empty panel with a
    lone Answer button; switching Predict first on asks at once too. The page asks by itself,
    so the focus stays put and n goes on asking."""
    page.goto("/?predict=1")
    page.wait_for_selector("body[data-ready='1']")
    prompt = page.locator("#predict-prompt")
    expect(prompt).to_contain_text("`out = model(X)`")  # the first line: forward
    expect(page.locator("#predict-choices input").first).to_be_visible()
    expect(page.get_by_role("button", name="Answer")).to_be_enabled()
    expect(page.locator("#predict-verdict")).to_be_empty()
    expect(page.locator("#predict-choices input").first).not_to_be_focused()
    page.get_by_role("button", name="Answer").click()
    expect(page.locator("#predict-score")).to_have_text(re.compile(r"^Score: [01] of 1"))

    page.keyboard.press("p")  # off, then on again: the next line's question at once
    expect(page.locator("#predict")).to_be_hidden()
    page.keyboard.press("p")
    expect(prompt).to_contain_text("`loss = loss_fn(out, y)`")
    expect(page.locator("#predict-verdict")).to_be_empty()
    page.keyboard.press("n")  # the same question, now with the focus in its choices
    expect(page.locator("#predict-choices input").first).to_be_focused()
    expect(prompt).to_contain_text("`loss = loss_fn(out, y)`")


def test_a_wrong_prediction_is_told_as_a_teacher_would(page: Page) -> None:
    """backward twice: the second backward raises. Whatever kind of question it draws, the
    verdict names the true choice in quotes, says what the raise means with PyTorch's words
    last, and why the choice picked is wrong; never a template ("believes …; it runs")."""
    page.goto("/?preset=backward_twice")
    page.wait_for_selector("body[data-ready='1']")
    next_line(page, 4)  # forward, loss, zero_grad, backward: the next backward raises
    page.keyboard.press("p")
    inputs = page.locator("#predict-choices input")
    expect(inputs.first).to_be_visible()
    values = [inputs.nth(i).get_attribute("value") or "" for i in range(inputs.count())]
    texts = [t.strip() for t in page.locator("#predict-choices label").all_inner_texts()]
    if "no" in values:  # raises: "no, it runs" is wrong
        wrong = "no"
    elif inputs.first.get_attribute("type") == "checkbox":  # writes: it writes no store
        wrong = values[0]
    else:  # grad: any value but "it raises an error"
        wrong = next(v for v, t in zip(values, texts, strict=True) if t != "it raises an error")
    page.locator(f'#predict-choices input[value="{wrong}"]').check()
    page.get_by_role("button", name="Answer").click()
    verdict = page.locator("#predict-verdict")
    expect(verdict).to_have_text(
        re.compile(
            r"^Not quite: (the answer is “(yes, it raises an error|it raises an error)”"
            r"|none of them is true)\. "
            r"`loss\.backward\(\)` (raises an error, so|cannot run here\.) .*"
            r"The error says: Trying to backward through the graph a second time.*\. "
            r"You chose “[^”]+”: [^:]*`loss\.backward\(\)` [^;]+\.$"
        )
    )
    assert "believes" not in verdict.inner_text()


def test_explain_popover_after_skip_zero_grad(page: Page) -> None:
    page.goto("/?skip_zero_grad=1")
    page.wait_for_selector("body[data-ready='1']")
    next_line(page, 7)  # iteration 2's backward
    weight = page.locator('section[aria-label="Gradients"] .tensor[data-name="weight"] .value')
    weight.click()
    dialog = page.locator("#explain")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("-23.5 from iteration 1")
    expect(dialog).to_contain_text("-3.87499")
    expect(dialog).to_contain_text("from iteration 2")
    expect(dialog).to_contain_text("example 3: -12")


def test_predict_and_explain_are_axe_clean(browser: Browser, base_url: str) -> None:
    """The question, its answer and the explanation dialog open: no WCAG 2 A/AA violation;
    all by keyboard (p is in the URL, n asks, Enter answers, Enter on a number explains)."""
    page = browser.new_context(base_url=base_url, **AXE_CONTEXT).new_page()
    page.goto("/?predict=1")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_role("checkbox", name="Predict first")).to_be_checked()
    for _ in range(4):
        page.keyboard.press("n")
        expect(page.locator("#predict-verdict")).to_be_empty()  # the new question is shown
        expect(page.locator("#predict-choices input").first).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#predict-verdict")).not_to_be_empty()
    assert violations(page) == []
    page.locator('section[aria-label="Gradients"] .tensor[data-name="weight"] .value').focus()
    page.keyboard.press("Enter")
    expect(page.locator("#explain")).to_contain_text("example 3: -12")
    assert violations(page) == []
    page.context.close()


def test_a_heat_map_cell_explains_itself(page: Page) -> None:
    """moons: the arrows pick a cell of a heat map, Enter explains it (and so does a click)."""
    page.goto("/?scenario=moons")
    page.wait_for_selector("body[data-ready='1']")
    next_line(page, 4)
    grads = page.locator('section[aria-label="Gradients"] .tensor[data-name="0.weight"]')
    grads.locator(".heatmap").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    dialog = page.locator("#explain")
    expect(dialog).to_contain_text("0.weight.grad element 1 = ")
    expect(dialog).to_contain_text("from iteration 1: backward (moment 4)")
    expect(dialog).to_contain_text("example 31: ")
    page.get_by_role("button", name="Close").click()
    grads.locator('.cell[data-i="5"]').click()
    expect(dialog).to_contain_text("0.weight.grad element 5 = ")
