"""Print the single-page HTML book (``_build/singlehtml``) to a PDF that reads like a book.

``make pdf`` first builds the book with Sphinx's ``singlehtml`` builder (the same sources and
committed outputs as the HTML book), then runs this script, which

- serves that folder on 127.0.0.1 (no other host is reachable: everything is local, as in the
  browser test),
- opens it in Debian's Chromium through playwright, waits until MathJax has typeset every formula
  and every image has loaded,
- lays it out for paper (``tools/pdf_layout.py``): a title page, a contents page, every fold
  printed open (a solution under its "Solution N" title), no on-screen controls, links that work
  offline, each chapter on a new page, small blocks kept whole, code and tables at 9 pt,
- prints it twice: the first print tells on which page each chapter and section starts
  (``tools/pdf_pages.py`` reads the PDF's named destinations: every heading is a link target),
  the second has those numbers in the contents,
- checks that the numbers it printed are where the headings landed, and writes ``--out`` with an
  outline (bookmarks) of the chapters and their sections (pypdf).

The PDF is tagged for screen readers: Chromium writes its structure tree (``/StructTreeRoot``:
headings, paragraphs, lists, tables, links, each figure with its alt text), marks it
(``/MarkInfo /Marked true``) and gives the document's language from the page's ``<html lang>``
(``/Lang``: ``en``, ``zh-CN``); pypdf keeps all of it when it adds the outline.

The same script prints both editions (``EDITIONS``): the English book (``_config.yml``) and the
Chinese one (``zh/_config.yml``, its single page built from ``zh/``), whose title page, contents
and "About this book" are labelled in Chinese and whose text is set in a CJK font that the PDF
embeds (``fonts-wqy-microhei`` or ``fonts-noto-cjk``, from ``tools/system_deps.sh``). The
edition is ``--lang``, else the language of the page (``<html lang="zh-CN">``).

Usage: ``python tools/book_pdf.py [--html _build/singlehtml] [--out _build/pdf/book.pdf]
[--lang en|zh]`` (``make pdf`` prints ``book.pdf`` and ``book-zh.pdf``). ``CHROMIUM`` overrides
``/usr/bin/chromium``; ``SOURCE_DATE_EPOCH`` fixes the build date on the title page.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import http.server
import io
import logging
import os
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/ is not a package

import pdf_layout  # noqa: E402
import pdf_pages  # noqa: E402
from colab_sync import VERSION, load_repository  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CONFIG = ROOT / "_config.yml"
# pypdf warns that Chromium's PDFs hold more objects than their trailer's /Size says; it reads
# them whole all the same.
logging.getLogger("pypdf").setLevel(logging.ERROR)


@dataclass(frozen=True)
class Edition:
    """One edition of the book: its language, its Jupyter Book config, where it is published
    (under the online book's address) and the text the PDF adds of its own."""

    lang: str
    #: The language the PDF declares (``/Lang``, a BCP 47 tag), set on the page's ``<html>``.
    tag: str
    config: Path
    online_path: str
    #: The contents' and the introduction's headings (also their bookmarks), the title page's
    #: edition line (``{edition}``, ``{date}``) and the labels of its two addresses.
    contents: str
    about: str
    edition_line: str
    online_label: str
    code_label: str


EDITIONS = {
    "en": Edition(
        lang="en",
        tag="en",
        config=CONFIG,
        online_path="",
        contents="Contents",
        about="About this book",
        edition_line="Edition {edition}, built {date}",
        online_label="Read online: ",
        code_label="Code and notebooks: ",
    ),
    "zh": Edition(
        lang="zh",
        tag="zh-CN",
        config=ROOT / "zh" / "_config.yml",
        online_path="zh/",
        contents="目录",
        about="关于本书",
        edition_line="版本 {edition}，构建于 {date}",
        online_label="在线阅读：",
        code_label="代码与 notebook：",
    ),
}


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


def page_language(page: Path) -> str:
    """The edition a built page belongs to: ``zh`` for ``<html lang="zh-CN">``, else ``en``."""
    found = re.search(r"<html[^>]*\slang=\"([^\"]+)\"", page.read_text(encoding="utf-8"), re.I)
    return "zh" if found and found[1].lower().startswith("zh") else "en"


def front_matter(edition: Edition = EDITIONS["en"]) -> dict[str, str]:
    """What the front matter says: the edition (the companion package's version), the build date
    (``SOURCE_DATE_EPOCH`` when set, else today), where the online book and the code live (from
    the config's ``repository``), the author, the document's title and the edition's labels."""
    config = edition.config
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    repository = load_repository(config)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    day = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).date()
        if epoch
        else datetime.date.today()
    )
    return {
        "edition": VERSION,
        "date": day.isoformat(),
        "editionLine": edition.edition_line.format(edition=VERSION, date=day.isoformat()),
        "online": repository.book_url + edition.online_path,
        "onlineLabel": edition.online_label,
        "code": repository.url,
        "codeLabel": edition.code_label,
        "contents": edition.contents,
        "about": edition.about,
        "author": str(data.get("author") or ""),
        "documentTitle": str(data.get("title") or ""),
        "lang": edition.tag,
        "numbered": pdf_pages.NUMBERED_SECTION.pattern,
    }


def _pdf(page) -> bytes:
    # tagged: the structure tree a screen reader reads (Playwright's default is untagged).
    return page.pdf(prefer_css_page_size=True, print_background=True, tagged=True)


def _untagged(reader, lang: str) -> list[str]:
    """What a tagged PDF in ``lang`` lacks: a structure tree, the mark that the content is tagged,
    the document's language."""
    root = reader.trailer["/Root"]
    lacks = []
    if "/StructTreeRoot" not in root:
        lacks.append("no structure tree (/StructTreeRoot)")
    if not (root.get("/MarkInfo") or {}).get("/Marked"):
        lacks.append("not marked as tagged (/MarkInfo /Marked)")
    if root.get("/Lang") != lang:
        lacks.append(f"/Lang {root.get('/Lang')!r}, not {lang!r}")
    return lacks


def _heading_pages(reader, entries: list[dict]) -> dict[str, int]:
    """The page (1-based) of each entry's heading: the PDF's destination of its id."""
    found = pdf_pages.destination_pages(reader)
    missing = [entry["title"] for entry in entries if entry["id"] not in found]
    if missing:
        raise RuntimeError(f"headings missing from the PDF's destinations: {missing[:5]}")
    return {entry["id"]: found[entry["id"]] for entry in entries}


def write_with_outline(reader, entries: list[dict], path: Path, author: str = "") -> None:
    """Write the PDF of ``reader`` to ``path`` with an outline (bookmarks) of ``entries``: level 1
    (the front matter and the chapters) and level 2 (a chapter's sections), each opening at its
    heading. (Chromium's own outline, made from the tags, runs the lines of a wrapped heading
    together and repeats a heading that opens a page.) The clone keeps the document catalog's
    structure tree, ``/MarkInfo`` and ``/Lang``, and each page's and link's place in the tree."""
    import pypdf
    from pypdf.generic import Fit

    writer = pypdf.PdfWriter(clone_from=reader)
    destinations = {str(name).lstrip("/"): dest for name, dest in reader.named_destinations.items()}
    chapter = None
    for entry in entries:
        dest = destinations[entry["id"]]
        item = writer.add_outline_item(
            title=entry["title"],
            page_number=reader.get_destination_page_number(dest),
            parent=chapter if entry["level"] > 1 else None,
            fit=Fit.xyz(left=dest.left, top=dest.top),
        )
        if entry["level"] == 1:
            chapter = item
    writer.page_mode = "/UseOutlines"
    if author:
        writer.add_metadata({"/Author": author})
    with path.open("wb") as file:
        writer.write(file)


_FILL_NUMBERS = """
(pages) => {
  for (const number of document.querySelectorAll(".pdf-toc-page")) {
    number.textContent = String(pages[number.dataset.target]);
  }
}
"""


def print_pdf(html: Path, out: Path, lang: str | None = None) -> dict:
    """Print the single-page book under ``html`` to ``out`` (written atomically, so an earlier
    PDF is replaced only by a complete one), as the edition ``lang`` (by default the page's
    language); return what the page held."""
    import pypdf
    from playwright.sync_api import sync_playwright

    page_path = single_page(html)
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    edition = EDITIONS[lang or page_language(page_path)]
    front = front_matter(edition)
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
            seen = page.evaluate(pdf_layout.PREPARE)
            entries = page.evaluate(pdf_layout.FRONT_MATTER, front)
            contents, marks = entries["contents"], entries["outline"]
            page.add_style_tag(content=pdf_layout.print_css())
            page.emulate_media(media="print")
            page.set_viewport_size({"width": round(pdf_pages.CONTENT_WIDTH_PX), "height": 900})
            seen["kept"] = page.evaluate(
                pdf_layout.MARK_KEEPS,
                [
                    pdf_pages.CONTENT_HEIGHT_PX,
                    pdf_layout.KEEP_HEIGHT,
                    pdf_layout.FIGURE_HEIGHT,
                ],
            )
            # The first print places every heading; the next prints their pages (once more, in
            # case a number moved a line).
            pages = _heading_pages(pypdf.PdfReader(io.BytesIO(_pdf(page))), contents)
            for _ in range(2):
                page.evaluate(_FILL_NUMBERS, pages)
                reader = pypdf.PdfReader(io.BytesIO(_pdf(page)))
                placed, pages = pages, _heading_pages(reader, contents)
                if placed == pages:
                    break
            else:
                raise RuntimeError("the contents' page numbers do not settle")
            browser.close()
        _heading_pages(reader, marks)
        seen["problems"] = _problems(seen, blocked, errors) + [
            f"the PDF is not tagged: {lack} (Chromium {CHROMIUM} too old?)"
            for lack in _untagged(reader, edition.tag)
        ]
        if seen["problems"]:
            raise RuntimeError("the printed book is incomplete: " + "; ".join(seen["problems"]))
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".part")
        write_with_outline(reader, marks, partial, author=front["author"])
        partial.replace(out)
    finally:
        server.shutdown()
        server.server_close()
    seen["entries"] = len(contents)
    seen["lang"] = edition.lang
    return seen


def _problems(seen: dict, blocked: list[str], errors: list[str]) -> list[str]:
    problems = []
    if seen["closed"]:
        problems.append(f"{seen['closed']} folds still closed")
    if seen["typeset"] < seen["math"]:
        problems.append(f"MathJax typeset {seen['typeset']} of {seen['math']} formulas")
    if seen["broken"]:
        problems.append(f"images that did not load: {seen['broken'][:5]}")
    if blocked or errors:
        problems.append(f"requests to other hosts {blocked[:5]}, JavaScript errors {errors[:5]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "singlehtml")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    parser.add_argument(
        "--lang", choices=sorted(EDITIONS), help="the edition (default: the page's language)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    seen = print_pdf(args.html, args.out, args.lang)
    size = args.out.stat().st_size / 1e6
    print(
        f"{args.out} ({seen['lang']}): {size:.1f} MB, {seen['math']} formulas, "
        f"{seen['images']} images, "
        f"{seen['entries']} contents entries ({time.perf_counter() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
