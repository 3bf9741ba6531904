"""The timeline on the page (issue 9): Back, the slider, sharing a moment, downloads, and a
session that outlives a restart of the server. Numbers read off the page, as a student does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from app.settings import Settings

from support.serve import free_port, serve
from .conftest import Watch, attach, shot
from .test_page import next_line

pytestmark = pytest.mark.browser
KEY = "loop-stepper.session"


def shown(page: Page, store: str, name: str, text: str) -> None:
    """Wait until the store shows `text` (a number, or None) for tensor `name`."""
    tensor = page.locator(f'section[aria-label="{store}"] .tensor[data-name="{name}"]')
    expect(tensor.locator(".value:visible")).to_have_text(text)


def worked_example(page: Page, params: tuple[str, str], grads: tuple[str, str]) -> None:
    shown(page, "Parameters", "weight", params[0])
    shown(page, "Parameters", "bias", params[1])
    shown(page, "Gradients", "weight", grads[0])
    shown(page, "Gradients", "bias", grads[1])


def count_rewinds(page: Page) -> list[str]:
    """From now on, every rewind the page sends (the list fills as they go)."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/rewind" in r.url else None)
    return sent


def settled(page: Page) -> None:
    """The slider's last rewind has been answered and shown."""
    expect(page.locator("#timeline")).to_have_attribute("aria-busy", "false")


def test_back_and_the_slider_restore_earlier_moments(stepper: Page, watch: Watch) -> None:
    page = stepper
    back = page.get_by_role("button", name="Back", exact=True)
    slider = page.get_by_role("slider", name="Timeline: moment")
    where = page.locator("#timeline-where")
    rewinds = count_rewinds(page)
    expect(back).to_be_disabled()  # moment 0: nothing before it
    expect(back).to_have_attribute("aria-keyshortcuts", "b ArrowLeft")
    expect(where).to_have_text("moment 0 of 0 — the start")

    next_line(page, 4)  # forward, loss, zero_grad, backward
    worked_example(page, ("0", "0"), ("-23.5", "-8"))
    next_line(page)  # step
    worked_example(page, ("1.175", "0.4"), ("-23.5", "-8"))
    expect(slider).to_have_value("5")
    expect(slider).to_have_attribute("max", "5")
    expect(where).to_have_text("moment 5 of 5 — after optimizer.step()")

    back.click()  # moment 4: right after backward, before step
    expect(where).to_have_text("moment 4 of 5 — after loss.backward()")
    worked_example(page, ("0", "0"), ("-23.5", "-8"))
    expect(slider).to_have_value("4")
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("freed")
    expect(page.locator("#announcer")).to_have_text(
        re.compile(
            r"Back to moment 4 of 5 — after loss\.backward\(\)\. backward: weight\.grad -23\.5"
        )
    )
    shot(page, "20-back-after-backward")

    page.keyboard.press("b")  # moment 3: after zero_grad, .grad is None (not zeros)
    expect(where).to_have_text("moment 3 of 5 — after optimizer.zero_grad()")
    worked_example(page, ("0", "0"), ("None", "None"))
    page.keyboard.press("ArrowLeft")  # moment 2: after the loss
    expect(where).to_have_text("moment 2 of 5 — after loss = loss_fn(out, y)")
    expect(page.locator('section[aria-label="Graph"] .status-word')).to_have_text("built")

    slider.fill("5")
    settled(page)
    expect(where).to_have_text("moment 5 of 5 — after optimizer.step()")
    worked_example(page, ("1.175", "0.4"), ("-23.5", "-8"))
    slider.fill("2")
    settled(page)
    expect(page.locator("#loss-value")).to_have_text("18.5")
    worked_example(page, ("0", "0"), ("None", "None"))
    expect(slider).to_have_value("2")

    # keys on the slider scrub it; quick presses are coalesced and end where they stopped
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    settled(page)
    expect(slider).to_have_value("5")
    expect(where).to_have_text("moment 5 of 5 — after optimizer.step()")
    worked_example(page, ("1.175", "0.4"), ("-23.5", "-8"))
    page.keyboard.press("Home")
    settled(page)
    expect(where).to_have_text("moment 0 of 5 — the start")
    expect(page.locator("#loss-value")).to_have_text("None")
    expect(back).to_be_disabled()

    # a line run from the past discards the moments after it
    next_line(page)
    expect(slider).to_have_attribute("max", "1")
    expect(where).to_have_text("moment 1 of 1 — after out = model(X)")
    assert 3 <= len(rewinds) <= 6, rewinds  # 5, 2, at most one per key press, then Home


def test_dragging_never_floods_the_server(stepper: Page, watch: Watch) -> None:
    """Twenty positions sent as fast as the page takes them: at most one rewind in flight,
    and the page ends on the last one."""
    page = stepper
    page.get_by_label("Iterations").fill("4")
    page.get_by_role("button", name="Run iterations").click()
    slider = page.get_by_role("slider", name="Timeline: moment")
    expect(slider).to_have_attribute("max", "20")
    rewinds = count_rewinds(page)
    page.evaluate(
        """() => {
          const s = document.getElementById('timeline');
          for (let n = 19; n >= 0; n--) {
            s.value = String(n);
            s.dispatchEvent(new Event('input', { bubbles: true }));
          }
          s.value = '9';  // where the drag was let go: the second iteration's backward
          s.dispatchEvent(new Event('input', { bubbles: true }));
        }"""
    )
    settled(page)
    expect(page.locator("#timeline-where")).to_have_text("moment 9 of 20 — after loss.backward()")
    worked_example(page, ("1.175", "0.4"), ("-3.875", "-1.325"))
    assert len(rewinds) <= 3, rewinds  # the first position, then only the last one asked for


@pytest.fixture()
def server_on_a_port() -> Iterator[tuple[Settings, int]]:
    """A store folder and a port, for servers a test starts and stops itself."""
    with tempfile.TemporaryDirectory(prefix="loop-stepper-restart-") as data:
        yield Settings(data=data), free_port()


def test_a_reload_after_a_restart_keeps_the_session(
    browser: Browser, server_on_a_port: tuple[Settings, int]
) -> None:
    settings, port = server_on_a_port
    url = f"http://127.0.0.1:{port}"
    context = browser.new_context(base_url=url, viewport={"width": 1360, "height": 900})
    page = context.new_page()
    seen = attach(page)
    try:
        with serve(settings, port):
            page.goto("/")
            page.wait_for_selector("body[data-ready='1']")
            next_line(page, 5)
            worked_example(page, ("1.175", "0.4"), ("-23.5", "-8"))
            page.get_by_role("button", name="Back", exact=True).click()
            expect(page.locator("#timeline-where")).to_have_text(
                "moment 4 of 5 — after loss.backward()"
            )
            sid = page.evaluate(f"sessionStorage.getItem('{KEY}')")
        # the server is down: a click says so and keeps the session (no new one)
        page.get_by_role("button", name="Next line").click()
        problem = page.get_by_role("alert")
        expect(problem).to_contain_text("The server did not answer")
        worked_example(page, ("0", "0"), ("-23.5", "-8"))
        assert page.evaluate(f"sessionStorage.getItem('{KEY}')") == sid
        with serve(settings, port):  # a new server on the same store and port
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            worked_example(page, ("0", "0"), ("-23.5", "-8"))
            expect(page.locator("#timeline-where")).to_have_text(
                "moment 4 of 5 — after loss.backward()"
            )
            assert page.evaluate(f"sessionStorage.getItem('{KEY}')") == sid
            expect(page.get_by_role("alert")).to_be_hidden()
            expect(page.locator("body")).not_to_contain_text("expired")
            # and it carries on: the step it had stepped back over
            next_line(page)
            worked_example(page, ("1.175", "0.4"), ("-23.5", "-8"))
        with serve(settings, port):  # restarted again, and this time no reload: Back just works
            page.get_by_role("button", name="Back", exact=True).click()
            worked_example(page, ("0", "0"), ("-23.5", "-8"))
            expect(page.locator("#timeline-where")).to_have_text(
                "moment 4 of 5 — after loss.backward()"
            )
            expect(page.get_by_role("alert")).to_be_hidden()
            assert page.evaluate(f"sessionStorage.getItem('{KEY}')") == sid
        seen.check(url)
    finally:
        context.close()


def test_share_a_moment(stepper: Page, watch: Watch, context: BrowserContext) -> None:
    page = stepper
    next_line(page, 5)
    page.get_by_role("button", name="Back", exact=True).click()  # moment 4, after backward
    expect(page.locator("#timeline-where")).to_have_text("moment 4 of 5 — after loss.backward()")
    page.get_by_role("button", name="Share this moment").click()
    field = page.get_by_role("textbox", name="Link to this moment")
    expect(field).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/\?snapshot=[\w-]+$"))
    link = field.input_value()
    assert link.startswith(page.url.split("?")[0])
    expect(page.locator("#announcer")).to_have_text(re.compile(r"Link to moment 4 "))
    shot(page, "21-share")
    mine = page.evaluate(f"sessionStorage.getItem('{KEY}')")

    other = context.new_page()
    attach(other, watch)
    other.goto(link)
    other.wait_for_selector("body[data-ready='1']")
    worked_example(other, ("0", "0"), ("-23.5", "-8"))
    expect(other.locator("#timeline-where")).to_have_text("moment 4 of 4 — after loss.backward()")
    # the URL is the setup again, so a reload keeps this copy rather than opening a new one
    expect(other).to_have_url(re.compile(r"/\?scenario=neuron&lr=0\.05"))
    assert "snapshot" not in other.url
    copy = other.evaluate(f"sessionStorage.getItem('{KEY}')")
    assert copy and copy != mine
    other.get_by_role("button", name="Back", exact=True).click()  # its past came along
    expect(other.locator("#timeline-where")).to_have_text(
        "moment 3 of 4 — after optimizer.zero_grad()"
    )
    worked_example(other, ("0", "0"), ("None", "None"))
    other.reload()
    other.wait_for_selector("body[data-ready='1']")
    expect(other.locator("#timeline-where")).to_have_text(
        "moment 3 of 4 — after optimizer.zero_grad()"
    )
    assert other.evaluate(f"sessionStorage.getItem('{KEY}')") == copy
    # the original went nowhere
    worked_example(page, ("0", "0"), ("-23.5", "-8"))
    other.close()


def test_an_unknown_snapshot_says_so_and_starts_a_session(page: Page, watch: Watch) -> None:
    page.goto("/?snapshot=no-such-token")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.get_by_role("alert")).to_contain_text("This shared link does not open here")
    expect(page.get_by_role("alert")).to_contain_text("A new session was started")
    worked_example(page, ("0", "0"), ("None", "None"))
    assert "snapshot" not in page.url
    next_line(page)  # a working session
    expect(page.locator("#timeline-where")).to_have_text("moment 1 of 1 — after out = model(X)")


def test_download_links(stepper: Page) -> None:
    page = stepper
    sid = page.evaluate(f"sessionStorage.getItem('{KEY}')")
    python = page.get_by_role("link", name="Download as Python")
    notebook = page.get_by_role("link", name="Download notebook")
    expect(python).to_have_attribute("href", f"api/sessions/{sid}/script")
    expect(notebook).to_have_attribute("href", f"api/sessions/{sid}/script?format=ipynb")
    expect(python).to_have_attribute("download", re.compile(r"\.py$"))
    expect(notebook).to_have_attribute("download", re.compile(r"\.ipynb$"))
    # a new session (another scenario) moves the links with it
    page.get_by_label("Scenario").select_option("moons")
    expect(page.get_by_label("lr")).to_have_value("0.3")
    moons = page.evaluate(f"sessionStorage.getItem('{KEY}')")
    assert moons != sid
    expect(python).to_have_attribute("href", f"api/sessions/{moons}/script")
    expect(notebook).to_have_attribute("href", f"api/sessions/{moons}/script?format=ipynb")
    next_line(page, 7)  # an iteration and a half of moons
    # what the browser would save: the hrefs resolved against the page, as a click does; run in
    # a fresh python -I outside the project, it prints the session's numbers
    script = page.request.get(urljoin(page.url, python.get_attribute("href") or ""))
    assert script.status == 200 and "import torch" in script.text()
    session = page.request.get(urljoin(page.url, f"api/sessions/{moons}")).json()
    expected = {
        "params": [{k: p[k] for k in ("name", "value", "grad")} for p in session["params"]],
        "loss": session["loss"],
    }
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "loop_stepper.py"
        path.write_text(script.text())
        done = subprocess.run(
            [sys.executable, "-I", str(path)],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected
    nb = page.request.get(urljoin(page.url, notebook.get_attribute("href") or ""))
    assert nb.status == 200 and "import torch" in nb.text() and '"cells"' in nb.text()


def test_a_session_really_gone_is_replaced(stepper: Page, base_url: str) -> None:
    """A 404 on a line replaces the session only because the session itself is gone."""
    page = stepper
    next_line(page, 2)
    sid = page.evaluate(f"sessionStorage.getItem('{KEY}')")
    assert page.request.delete(f"{base_url}/api/sessions/{sid}").status == 204
    page.get_by_role("button", name="Next line").click()
    expect(page.get_by_role("alert")).to_contain_text("Your session had expired")
    worked_example(page, ("0", "0"), ("None", "None"))
    expect(page.locator("#timeline-where")).to_have_text("moment 0 of 0 — the start")
    fresh = page.evaluate(f"sessionStorage.getItem('{KEY}')")
    assert fresh and fresh != sid
    expect(page.get_by_role("link", name="Download as Python")).to_have_attribute(
        "href", f"api/sessions/{fresh}/script"
    )
