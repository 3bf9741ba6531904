"""Real headless Chromium (Debian's, never a downloaded one) against the real server.

The page must work with no internet, so every test fails if the page asks for anything
outside the server, logs a console error or throws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, Request, Response

CHROMIUM = "/usr/bin/chromium"
# not test-results/: pytest-playwright empties that folder
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last. Sync Playwright leaves an asyncio loop running in the main
    thread for the rest of the session, so any later test calling asyncio.run() would fail."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1360, "height": 900}}


class Watch:
    """What the page asked for and complained about, checked after each test."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.errors: list[str] = []

    def attach(self, page: Page) -> Watch:
        """Record every request of the page's context, its console errors and page errors."""

        def on_request(request: Request) -> None:
            self.urls.append(request.url)

        def on_console(message: ConsoleMessage) -> None:
            # Chromium logs every non-2xx response; from the API they are expected answers (a
            # 409 refusal, a 404 for an expired session) that the page handles in words
            api = "/api/" in message.location.get("url", "")
            if message.type == "error" and not (api and "Failed to load resource" in message.text):
                self.errors.append(f"console: {message.text}")

        def on_page_error(error: Error) -> None:
            self.errors.append(f"pageerror: {error}")

        def on_response(response: Response) -> None:
            if response.status >= 400 and "/api/" not in response.url:
                self.errors.append(f"{response.status}: {response.url}")

        page.on("request", on_request)
        page.on("response", on_response)
        page.on("console", on_console)
        page.on("pageerror", on_page_error)
        page.context.on("request", on_request)
        return self

    def check(self, *bases: str) -> None:
        """Fail on a request outside every one of `bases` (a URL prefix) or any error seen."""
        outside = [u for u in self.urls if not any(u == b or u.startswith(b + "/") for b in bases)]
        assert outside == [], f"requests outside the server: {outside}"
        assert self.errors == [], self.errors


def attach(page: Page, seen: Watch | None = None) -> Watch:
    """Record a page's requests and complaints (one Watch may follow several pages)."""
    return (seen or Watch()).attach(page)


@pytest.fixture()
def watch(page: Page, base_url: str) -> Iterator[Watch]:
    seen = Watch().attach(page)
    yield seen
    seen.check(base_url)


@pytest.fixture()
def stepper(page: Page, watch: Watch) -> Page:
    """The page on the worked example, loaded and ready."""
    page.goto("/")
    page.wait_for_selector("body[data-ready='1']")
    return page


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


Opener = Callable[..., Page]


@pytest.fixture()
def opened(browser: Browser, base_url: str) -> Iterator[Opener]:
    """`opened(path, size, axe=False)`: a page at `size`, loaded and ready. `axe` lets the axe
    script past the page's CSP; otherwise the page runs under its own CSP, as served."""
    contexts = []
    watches = []

    def open_(path: str, size: dict[str, Any], axe: bool = False) -> Page:
        context = browser.new_context(base_url=base_url, bypass_csp=axe, **size)
        contexts.append(context)
        page = context.new_page()
        watches.append(attach(page))
        page.goto(path)
        page.wait_for_selector("body[data-ready='1']")
        return page

    yield open_
    for watch in watches:
        watch.check(base_url)
    for context in contexts:
        context.close()
