"""Embedding: ``?embed=1`` in a 960x540 slide, and an iframe on another origin (an LMS, reveal.js).

The iframe is allowed only when LOOP_STEPPER_FRAME_ANCESTORS names the embedding origin; by
default the browser refuses to show the page in a frame at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Browser, FrameLocator, Page, ViewportSize, expect

from app.settings import Settings
from support.serve import serve

from .conftest import Watch, shot
from .test_a11y import violations

pytestmark = pytest.mark.browser
SLIDE = ViewportSize(width=960, height=540)


class Host:
    """A second origin (another 127.0.0.1 port) serving one page: an iframe of `src`."""

    def __init__(self) -> None:
        self.src = ""
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = (
                    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                    "<title>Lecture 3</title></head><body style='margin:0'>"
                    f"<iframe src='{host.src}' width='960' height='540' "
                    "title='Loop Stepper' style='border:0'></iframe></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Host:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def host() -> Iterator[Host]:
    with Host() as h:
        yield h


@pytest.fixture()
def slide(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1000, "height": 600})
    yield context.new_page()
    context.close()


def store_value(frame: FrameLocator, store: str, name: str) -> str:
    return frame.locator(
        f'section[aria-label="{store}"] .tensor[data-name="{name}"] .tbody .value'
    ).inner_text()


def test_iframe_allowed_for_the_configured_origin(slide: Page, host: Host) -> None:
    with serve(Settings(frame_ancestors=host.origin)) as app:
        host.src = f"{app}/?embed=1"
        watch = Watch().attach(slide)
        slide.goto(host.origin + "/")
        frame = slide.frame_locator("iframe")
        next_line = frame.get_by_role("button", name="Next line")
        expect(next_line).to_be_enabled()
        for _ in range(4):  # forward, loss, zero_grad, backward
            next_line.click()
            expect(frame.locator("#iteration")).not_to_have_text("iteration 0, next: forward")
        expect(frame.locator("#iteration")).to_have_text("iteration 1, next: step")
        assert store_value(frame, "Gradients", "weight") == "-23.5"
        assert store_value(frame, "Gradients", "bias") == "-8"
        next_line.click()
        expect(frame.locator("#iteration")).to_have_text("iteration 1, next: forward")
        assert store_value(frame, "Parameters", "weight") == "1.175"
        assert store_value(frame, "Parameters", "bias") == "0.4"
        expect(frame.locator("header.top")).to_be_hidden()  # the compact page
        shot(slide, "21-embedded-in-another-origin")
        watch.check(app, host.origin)


def test_iframe_refused_by_default(slide: Page, host: Host, base_url: str) -> None:
    host.src = f"{base_url}/?embed=1"  # the shared server runs with the default settings
    # Chromium's refusal in its own words is the sign it has decided (a wait and "nothing
    # loaded" would pass as well when the frame had merely not loaded yet)
    with slide.expect_console_message(
        lambda m: m.type == "error" and "frame-ancestors 'none'" in m.text, timeout=15_000
    ):
        slide.goto(host.origin + "/")
    expect(slide.locator("iframe")).to_be_attached()
    frame = slide.frames[1]
    assert not frame.url.startswith(base_url), frame.url  # Chromium's error page instead
    assert frame.locator("#next").count() == 0


def in_view(page: Page, selector: str) -> None:
    """Every element matching `selector` is visible and wholly inside the viewport."""
    items = page.locator(selector)
    assert items.count() > 0, selector
    for i in range(items.count()):
        expect(items.nth(i)).to_be_visible()
        box = items.nth(i).bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["y"] >= 0, (selector, box)
        assert box["x"] + box["width"] <= SLIDE["width"], (selector, box)
        assert box["y"] + box["height"] <= SLIDE["height"], (selector, box)


def fits_the_slide(page: Page) -> None:
    expect(page.locator(".line")).to_have_count(5)
    in_view(page, ".line")
    for store in ("Parameters", "Gradients", "Graph", "Loss"):
        in_view(page, f'section[aria-label="{store}"]')
    for button in ("#next", "#back", "#run"):
        in_view(page, button)
    size = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    assert size == [SLIDE["width"], SLIDE["height"]]  # nothing to scroll to


def test_embed_fits_a_slide(page: Page, watch: Watch) -> None:
    page.set_viewport_size(SLIDE)
    page.goto("/?embed=1")
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("header.top")).to_be_hidden()
    for panel in ("#build-panel", "#gallery-panel", "#author-panel"):  # the stepper's own
        expect(page.locator(panel)).to_be_hidden()
    expect(page.locator("#back")).to_be_disabled()  # nothing to step back to yet
    fits_the_slide(page)
    shot(page, "22-embed-960x540-start")
    for n in range(1, 10):  # into the second iteration: graph, .grad, loss curve all drawn
        page.get_by_role("button", name="Next line").click()
        expect(page.locator("body")).to_have_attribute("data-renders", str(n + 1))
    expect(page.locator('section[aria-label="Gradients"]')).to_contain_text("-3.875")
    fits_the_slide(page)
    assert "embed=1" in page.url  # a reload inside the slide stays compact
    shot(page, "23-embed-960x540-second-iteration")  # the full page is the slide: no scroll


@pytest.mark.parametrize("scenario", ["neuron", "moons"])
def test_embed_accessibility(browser: Browser, base_url: str, scenario: str) -> None:
    context = browser.new_context(base_url=base_url, bypass_csp=True, viewport=SLIDE)
    page = context.new_page()
    page.goto(f"/?embed=1&scenario={scenario}")
    page.wait_for_selector("body[data-ready='1']")
    assert violations(page) == []
    for _ in range(4):
        page.keyboard.press("n")
    expect(page.locator("#iteration")).to_have_text("iteration 1, next: step")
    if scenario == "neuron":
        expect(page.locator('section[aria-label="Gradients"]')).to_contain_text("-23.5")
    else:  # 2-16-16-2 heat maps: the stores scroll inside the slide, the slide does not
        fits_the_slide(page)
    assert violations(page) == []
    context.close()
