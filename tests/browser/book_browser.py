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


def screenshot_name(path: str, suffix: str = ".png") -> str:
    """``book/01_x.html`` -> ``book_01_x.png`` (or ``suffix``)."""
    return re.sub(r"[^\w.-]+", "_", path.removesuffix(".html")) + suffix


#: The full-page screenshot of every page is a JPEG: a chapter is 30 000 px tall, and encoding it
#: as PNG took 5-7 s a page (JPEG at this quality: 3 s, the text as legible).
FULL_PAGE_SUFFIX = ".jpg"
FULL_PAGE_QUALITY = 80


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
    #: OVERFLOW's finding: what sticks out of the text column (see there).
    overflow: dict = field(default_factory=dict)
    #: The entries of the page's in-page contents list, in order.
    contents: list[str] = field(default_factory=list)
    #: Where each language switch of the page leads (``_static/language-switch.js``).
    language_switches: list[str] = field(default_factory=list)


_REFRESH = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"', re.IGNORECASE)


def redirects() -> dict[str, str]:
    """Redirect stubs (Jupyter Book's root ``index.html``, the Chinese edition's ``zh/index.html``)
    -> the page they send the reader to."""
    found = {}
    for page in [*HTML.glob("*.html"), *HTML.glob("*/index.html")]:
        match = _REFRESH.match(page.read_text(encoding="utf-8", errors="replace")[:500])
        if match:
            stub = page.relative_to(HTML).as_posix()
            found[stub] = (page.parent / match[1]).relative_to(HTML).as_posix()
    return found


#: The editions of the book: the folder each is served from ("" for the English book at the root,
#: "zh/" for the Chinese edition, built beside it by ``make book``).
EDITIONS = ("", "zh/")


def edition(path: str) -> str:
    """The edition folder of ``path`` (``"zh/"`` for ``zh/book/01_x.html``, else ``""``)."""
    return next((e for e in EDITIONS if e and path.startswith(e)), "")


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
    contents: Array.from(document.querySelectorAll("#pst-page-toc-nav a"))
      .map((a) => a.textContent.replace(/\\s+/g, " ").trim()),
    switches: Array.from(document.querySelectorAll("a.book-language-switch")).map((a) => a.href),
  };
}
""".replace("WIDGET_VIEW", WIDGET_VIEW)

# What makes the page wider than the window, or sticks out of the text column: every element of
# the article whose box reaches past the column's content edges (or the window's), and every
# element of the article's header (its buttons) that reaches past the window, unless it is inside
# a box that scrolls sideways and itself fits (a code block, a wide equation, a printed table
# scroll in their own box by design). Hidden elements (a closed fold's content, MathJax's text
# for screen readers) do not count. The window is the device's width: a phone's browser widens
# its layout to whatever is too wide (window.innerWidth grows), the screen stays. Returns the
# page's width, the window's, and the outermost offending elements ("tag.class: text"), at most 8.
OVERFLOW = """
() => {
  const view = Math.min(window.innerWidth, window.screen.width);
  const result = {page: document.documentElement.scrollWidth, view: view, out: []};
  const article = document.querySelector("article.bd-article") || document.querySelector("article");
  if (!article) return result;
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const scrolls = new Map();
  const scroller = (el, root) => {
    for (let a = el.parentElement; a && a !== root; a = a.parentElement) {
      if (!scrolls.has(a)) {
        scrolls.set(a, ["auto", "scroll"].includes(getComputedStyle(a).overflowX));
      }
      if (scrolls.get(a)) return a;
    }
    return null;
  };
  const reported = new Set();
  const scan = (root, left, right) => {
    const inside = (r) => r.left >= left - 1 && r.right <= right + 1;
    for (const el of root.querySelectorAll("*")) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || inside(r)) continue;
      if (el.closest("mjx-assistive-mml, .visually-hidden, .sr-only")) continue;
      const s = scroller(el, root);
      if (s && inside(s.getBoundingClientRect())) continue;
      if (!el.checkVisibility({visibilityProperty: true})) continue;
      reported.add(el);
      if (reported.has(el.parentElement)) continue;
      const name = `${el.tagName.toLowerCase()}.${String(el.className).split(" ")[0]}`;
      result.out.push(`${name} [${Math.round(r.left)}, ${Math.round(r.right)}] outside `
        + `[${Math.round(left)}, ${Math.round(right)}]: `
        + (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 60));
    }
  };
  scan(article, Math.max(0, box.left + parseFloat(style.paddingLeft)),
    Math.min(view, box.right - parseFloat(style.paddingRight)));
  const header = document.querySelector(".bd-header-article");
  if (header) scan(header, 0, view);
  result.out = result.out.slice(0, 8);
  return result;
}
"""

#: True once the HTML manager has drawn every saved widget view of the page.
WIDGETS_DRAWN = f"""
() => Array.from(document.querySelectorAll('script[type="{WIDGET_VIEW}"]'))
  .every((s) => s.parentElement.querySelector(".jupyter-widgets"))
"""


def visit(browser: OfflineBrowser, base_url: str, path: str) -> PageReport:
    """Load one page, collect its report and save a full-page screenshot (``FULL_PAGE_SUFFIX``)."""
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
    report.overflow = page.evaluate(OVERFLOW)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(SCREENSHOTS / screenshot_name(path, FULL_PAGE_SUFFIX)),
        full_page=True,
        type="jpeg",
        quality=FULL_PAGE_QUALITY,
    )
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
    report.contents = data["contents"]
    report.language_switches = data["switches"]
    return report
