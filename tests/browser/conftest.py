"""Fixtures of the browser test: the built book served on localhost, and headless Chromium.

See book_browser.py for the environment variables and what a visit records.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from book_browser import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    HTML,
    OfflineBrowser,
    PageReport,
    html_pages,
    visit,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def book_html() -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail(f"no built book at {HTML}: run `make book` first (make browser-test does)")
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    #: Every path answered with an error, e.g. ``404 /favicon.ico``.
    errors: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per request would bury pytest's report

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self.errors.append(f"{code} {self.path}")
        super().send_error(code, message, explain)


@pytest.fixture(scope="session")
def base_url(book_html: Path) -> Iterator[str]:
    """``http://127.0.0.1:<free port>/`` serving the built book."""
    handler = functools.partial(_QuietHandler, directory=str(book_html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def not_found(base_url: str) -> list[str]:
    """Errors the server sent (``404 /favicon.ico``), over every request of the session so far."""
    return _QuietHandler.errors


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Headless Chromium, one for the session (playwright's sync API runs one at a time)."""
    # Imported here so that `make unit`, which only deselects these tests, never needs it.
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (or set CHROMIUM=...)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def browser(base_url: str, chromium: Any) -> Iterator[OfflineBrowser]:
    """A browser context in which only 127.0.0.1 is reachable."""
    offline = OfflineBrowser(chromium.new_context(viewport={"width": 1280, "height": 900}))
    offline.context.route("**/*", offline.route)
    yield offline
    offline.context.close()


@pytest.fixture(scope="session")
def pages(book_html: Path) -> list[str]:
    """Every page of the built book (``book/01_x.html``, ...), as :func:`html_pages` lists them."""
    return html_pages()


@pytest.fixture(scope="session")
def reports(browser: OfflineBrowser, base_url: str, pages: list[str]) -> dict[str, PageReport]:
    """One visit of every page of the book: ``{"book/01_x.html": PageReport, ...}``."""
    return {path: visit(browser, base_url, path) for path in pages}
