"""Helpers of the browser test: where the book is, how Chromium runs, what one page visit records.

Run by ``make browser-test`` (part of ``make test``) after ``make book``; ``make unit`` skips these
tests (they are all marked ``browser``). Everything is offline: a request to any host other than
127.0.0.1 is blocked and recorded, so a page that needs a CDN fails the test.

Environment: ``BOOK_ROOT`` (the book's source folder, default the repository), ``BOOK_HTML``
(default ``$BOOK_ROOT/_build/html``), ``BOOK_SCREENSHOTS`` (default ``_build/screenshots``),
``CHROMIUM`` (default ``/usr/bin/chromium``; Debian's package, playwright does not download one).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
BOOK_ROOT = Path(os.environ.get("BOOK_ROOT", ROOT))
HTML = Path(os.environ.get("BOOK_HTML", BOOK_ROOT / "_build" / "html"))
SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", BOOK_ROOT / "_build" / "screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class OfflineBrowser:
    """A playwright browser context whose requests to hosts other than 127.0.0.1 are blocked.

    ``blocked`` lists every blocked URL, in order.
    """

    context: Any
    blocked: list[str] = field(default_factory=list)

    def route(self, route: Any) -> None:
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort("blockedbyclient")


def screenshot_name(path: str) -> str:
    """``book/01_x.html`` -> ``book_01_x.png``."""
    return re.sub(r"[^\w.-]+", "_", path.removesuffix(".html")) + ".png"


@dataclass
class PageReport:
    """What one page did in the browser; each test asserts on one aspect of every report."""

    path: str
    bad_responses: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    js_errors: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    images: int = 0
    math: int = 0
    math_rendered: int = 0
    math_errors: list[str] = field(default_factory=list)
    unrendered_tex: list[str] = field(default_factory=list)
    widgets: list[dict] = field(default_factory=list)
    wide_blocks: list[dict] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    colab_links: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    nav_links: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    title: str = ""


_REFRESH = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"', re.IGNORECASE)


def redirects() -> dict[str, str]:
    """Redirect stubs (Jupyter Book's root ``index.html``) -> the page they send the reader to."""
    found = {}
    for page in HTML.glob("*.html"):
        match = _REFRESH.match(page.read_text(encoding="utf-8", errors="replace")[:500])
        if match:
            found[page.name] = (page.parent / match[1]).relative_to(HTML).as_posix()
    return found


def html_pages() -> list[str]:
    """Every HTML page of the book but redirect stubs, relative to its root (``book/01_x.html``)."""
    skip = {"_static", "_sources", "_images"}
    stubs = redirects()
    return sorted(
        path
        for p in HTML.rglob("*.html")
        if not skip & set(p.relative_to(HTML).parts)
        and (path := p.relative_to(HTML).as_posix()) not in stubs
    )


# Runs in the page once it has loaded: waits for MathJax's first typeset and for lazy images, then
# reports what a reader would see.
_COLLECT = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener("load", done);
    img.addEventListener("error", done);
    setTimeout(done, 5000);
  })));
  const visible = (el) => !!el && el.offsetWidth > 0 && el.offsetHeight > 0;
  const maths = Array.from(document.querySelectorAll(".math"));
  const article = document.querySelector("article") || document.body;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const unrendered = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent.closest("pre, code, script, style, mjx-container, .math, .highlight")) continue;
    const found = node.textContent.match(/\\$[^$\\n]+\\$|\\\\\\(|\\\\\\[/);
    if (found) unrendered.push(found[0].slice(0, 80));
  }
  const views = Array.from(document.querySelectorAll('script[type="WIDGET_VIEW"]'));
  // Code, printed output and printed tables wider than their box (a reader scrolls sideways):
  // the box's start and its longest line, to name it in the allow-list.
  const blocks = Array.from(document.querySelectorAll(
    ".bd-article pre, .bd-article div.cell_output table"));
  const wide = blocks.filter((b) => b.scrollWidth > b.clientWidth).map((b) => {
    const lines = (b.textContent || "").split("\\n");
    const longest = lines.reduce((a, l) => (l.length > a.length ? l : a), "");
    return {
      kind: b.closest(".cell_output") ? "output" : "code",
      scroll: b.scrollWidth,
      client: b.clientWidth,
      longest: longest.slice(0, 120),
    };
  });
  return {
    title: document.title,
    images: images.length,
    brokenImages: images.filter((img) => img.naturalWidth === 0)
      .map((img) => img.getAttribute("src")),
    math: maths.length,
    mathRendered: maths.filter((m) => m.querySelector("mjx-container")).length,
    mathErrors: Array.from(document.querySelectorAll("mjx-merror"))
      .map((e) => e.getAttribute("data-mjx-error") || e.textContent),
    unrendered: unrendered,
    wide: wide,
    scripts: Array.from(document.scripts).map((s) => s.getAttribute("src")).filter(Boolean),
    widgets: views.map((script) => {
      const cell = script.closest(".cell") || script.parentElement;
      return {
        rendered: visible(script.parentElement.querySelector(".jupyter-widgets")),
        fallback: Array.from(cell.querySelectorAll("img"))
          .some((img) => img.naturalWidth > 0 && visible(img)),
      };
    }),
    colab: Array.from(document.querySelectorAll('a[href^="https://colab.research.google.com"]'))
      .map((a) => a.href),
    links: Array.from(document.querySelectorAll("a[href]")).map((a) => a.href),
    nav: Array.from(document.querySelectorAll("nav.bd-links a[href], .bd-sidenav a[href]"))
      .map((a) => a.href),
    ids: Array.from(document.querySelectorAll("[id]")).map((e) => e.id),
  };
}
""".replace("WIDGET_VIEW", WIDGET_VIEW)

#: True once the HTML manager has drawn every saved widget view of the page.
WIDGETS_DRAWN = f"""
() => Array.from(document.querySelectorAll('script[type="{WIDGET_VIEW}"]'))
  .every((s) => s.parentElement.querySelector(".jupyter-widgets"))
"""


def visit(browser: OfflineBrowser, base_url: str, path: str) -> PageReport:
    """Load one page, collect its report and save a full-page screenshot."""
    report = PageReport(path)
    page = browser.context.new_page()
    blocked_before = len(browser.blocked)
    page.on("pageerror", lambda error: report.js_errors.append(f"{error}"))
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            # resource failures are reported with their URL by the response/request checks
            and not message.text.startswith("Failed to load resource")
            and report.js_errors.append(f"console: {message.text}")
        ),
    )
    page.on(
        "response",
        lambda response: (
            response.status >= 400
            and report.bad_responses.append(f"{response.status} {response.url}")
        ),
    )
    page.on(
        "requestfailed",
        lambda request: (
            urlparse(request.url).hostname == "127.0.0.1"
            and report.failed_requests.append(f"{request.url} ({request.failure})")
        ),
    )
    page.goto(base_url + path, wait_until="load")
    if page.locator(f'script[type="{WIDGET_VIEW}"]').count():
        # The HTML manager draws saved widgets asynchronously after the page has loaded; on a
        # timeout the report shows which ones are missing.
        with contextlib.suppress(Exception):
            page.wait_for_function(WIDGETS_DRAWN, timeout=15_000)
    data = page.evaluate(_COLLECT)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / screenshot_name(path)), full_page=True)
    page.close()
    report.external_requests = browser.blocked[blocked_before:]
    report.title = data["title"]
    report.images = data["images"]
    report.broken_images = data["brokenImages"]
    report.math, report.math_rendered = data["math"], data["mathRendered"]
    report.math_errors = data["mathErrors"]
    report.unrendered_tex = data["unrendered"]
    report.widgets = data["widgets"]
    report.wide_blocks = data["wide"]
    report.scripts = data["scripts"]
    report.colab_links = data["colab"]
    report.links = data["links"]
    report.nav_links = data["nav"]
    report.ids = set(data["ids"])
    return report
