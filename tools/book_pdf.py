"""Print the single-page HTML book (``_build/singlehtml``) to a PDF with headless Chromium.

``make pdf`` first builds the book with Sphinx's ``singlehtml`` builder (the same sources and
committed outputs as the HTML book), then runs this script, which

- serves that folder on 127.0.0.1 (no other host is reachable: everything is local, as in the
  browser test),
- opens it in Debian's Chromium through playwright, waits until MathJax has typeset every formula
  and every image has loaded,
- unfolds what a reader of paper cannot click open: the exercises' folded solutions (which stay
  where the chapter puts them, in its exercises at its end) and hidden cells,
- prints it with the book's print style (``@media print`` in ``_static/book.css``: no sidebars,
  each chapter on a new page, long code lines wrapped rather than cut off) to ``--out``.

Usage: ``python tools/book_pdf.py [--html _build/singlehtml] [--out _build/pdf/book.pdf]``
(``make pdf``). ``CHROMIUM`` overrides ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

#: The PDF's own layout on top of book.css's print style: in the single page, each chapter is a
#: level-2 heading, and starts a new page.
_PRINT_CSS = "@media print { .bd-article h2 { break-before: page; } }"

#: Runs in the page: typeset math, loaded images, every fold opened; returns what it saw.
_PREPARE = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
  document.querySelectorAll(".dropdown").forEach((e) => e.classList.add("toggle-shown"));
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener("load", done);
    img.addEventListener("error", done);
  })));
  return {
    closed: document.querySelectorAll("details:not([open]), .toggle-hidden").length,
    math: document.querySelectorAll(".math").length,
    typeset: document.querySelectorAll(".math mjx-container").length,
    images: images.length,
    broken: images.filter((img) => img.naturalWidth === 0).map((img) => img.src),
  };
}
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def single_page(html: Path) -> Path:
    """The built single page. Jupyter Book writes the root document (``book/index.html``) with
    links relative to the output's root, and a redirect to it at the root; a copy at the root
    (``html/book.html``) finds its ``_static`` and ``_images``."""
    root = html / "index.html"
    if not root.is_file():
        raise FileNotFoundError(
            f"no {root}: build it first (jupyter-book build . --builder singlehtml)"
        )
    redirect = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', root.read_text(), re.I)
    if not redirect:
        return root
    page = html / "book.html"
    shutil.copyfile(html / redirect[1], page)
    return page


def print_pdf(html: Path, out: Path) -> dict:
    """Print the single-page book under ``html`` to ``out`` (written atomically, so an earlier
    PDF is replaced only by a complete one); return what the page held."""
    from playwright.sync_api import sync_playwright

    page_path = single_page(html)
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    blocked: list[str] = []

    def route(request_route) -> None:
        if urlparse(request_route.request.url).hostname == "127.0.0.1":
            request_route.continue_()
        else:
            blocked.append(request_route.request.url)
            request_route.abort("blockedbyclient")

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", route)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            url = f"http://127.0.0.1:{server.server_address[1]}/{page_path.name}"
            page.goto(url, wait_until="load")
            page.add_style_tag(content=_PRINT_CSS)
            seen = page.evaluate(_PREPARE)
            page.emulate_media(media="print")
            out.parent.mkdir(parents=True, exist_ok=True)
            partial = out.with_name(out.name + ".part")
            page.pdf(
                path=str(partial),
                format="A4",
                print_background=True,
                margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"},
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=(
                    '<div style="font-size:8px;width:100%;text-align:center;color:#666">'
                    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
                ),
            )
            browser.close()
        partial.replace(out)
    finally:
        server.shutdown()
        server.server_close()
    problems = []
    if seen["closed"]:
        problems.append(f"{seen['closed']} folds still closed")
    if seen["typeset"] < seen["math"]:
        problems.append(f"MathJax typeset {seen['typeset']} of {seen['math']} formulas")
    if seen["broken"]:
        problems.append(f"images that did not load: {seen['broken'][:5]}")
    if blocked or errors:
        problems.append(f"requests to other hosts {blocked[:5]}, JavaScript errors {errors[:5]}")
    if problems:
        raise RuntimeError("the printed book is incomplete: " + "; ".join(problems))
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "singlehtml")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    seen = print_pdf(args.html, args.out)
    size = args.out.stat().st_size / 1e6
    print(
        f"{args.out}: {size:.1f} MB, {seen['math']} formulas, {seen['images']} images "
        f"({time.perf_counter() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
