"""The book as a reader meets it, on every page: folded solutions, real tables, navigation on a
phone and on a desktop, readable dark mode, sharp figures that keep their shape at every width,
nothing wider than the column, a contents highlight that follows, code that wraps indented (or
output that shows it scrolls), names in tables never broken, long logs folded, and explorers in
the dark page's colours.

Every page is visited three more times (desktop, a 390 px phone, dark mode); the desktop visit is
also resized to a 768 px tablet at its end, so that three widths cost three visits. The phone
visits every page of both editions; the desktop visit the English edition's and the dark-mode
visit those plus the Chinese edition's own pages and one of its chapters (the Chinese chapters
hold the same cells, outputs and figures byte for byte, under the same stylesheet, and
test_book.py visits every page of both at 1280 px). Each visit
records what the tests below check, and saves screenshots under ``_build/screenshots/``
(``desktop_*``, ``solutions_open_*``, ``phone_*``, ``phone_nav_open_*``, ``dark_*``). Each test
lists every offending page in its failure message.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from book_browser import (
    HTML,
    OVERFLOW,
    SCREENSHOTS,
    WIDGETS_DRAWN,
    OfflineBrowser,
    edition,
    screenshot_name,
)
from book_figures import PHONE_MIN_TEXT_PX, png_smallest_text_px
from PIL import Image

PHONE = {"width": 390, "height": 844}
TABLET = {"width": 768, "height": 1024}
DESKTOP = {"width": 1366, "height": 900}
#: How far a figure's shown height-to-width ratio may be from its image's (rounding of the
#: displayed size: a 272 px wide figure is 0.4 % off for half a pixel).
ASPECT_TOLERANCE = 0.02
#: WCAG 2.1 AA for normal text.
MIN_CONTRAST = 4.5


def _open(context: Any, base_url: str, path: str) -> Any:
    """``path`` loaded, its formulas typeset and its saved widgets drawn (both change the
    layout after the load event: a test that scrolled before them would read stale positions)."""
    page = context.new_page()
    page.goto(base_url + path, wait_until="load")
    page.evaluate(
        "async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }"
    )
    _settle(page, WIDGETS_DRAWN, timeout=15_000)
    return page


def _shot(page: Any, prefix: str, path: str, full_page: bool = False) -> None:
    # The viewport only: book_browser already keeps one full-page shot of every page, and four
    # more of each long page (desktop, dark, solutions, phone) cost minutes of `make test`.
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{prefix}_{screenshot_name(path)}"
    page.screenshot(path=str(target), full_page=full_page)


#: True once no animation or transition is running (a drawer has finished sliding, a fold fading).
_STILL = "() => document.getAnimations().every((a) => a.playState !== 'running')"


def _settle(page: Any, predicate: str, arg: Any = None, timeout: float = 2_000) -> None:
    """Wait until ``predicate(arg)`` holds and nothing is animating, or ``timeout`` ms have
    passed: the caller then reads the state, so a page that never gets there fails its test
    (as after a fixed wait) instead of timing out here, and one that gets there at once costs
    no fixed wait."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # (see conftest.chromium)

    condition = f"(arg) => ({predicate})(arg) && ({_STILL})()"
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(condition, arg=arg, timeout=timeout, polling="raf")


@pytest.fixture(scope="module")
def phone(browser: OfflineBrowser) -> Iterator[Any]:
    """A 390 px wide phone (an iPhone 12-15's CSS width), in the same offline browser."""
    context = browser.context.browser.new_context(
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    context.route("**/*", browser.route)
    yield context
    context.close()


@pytest.fixture(scope="module")
def english(pages: list[str]) -> list[str]:
    """The English edition's pages (the desktop and dark-mode visits; see the module docstring)."""
    return [p for p in pages if edition(p) == ""]


@pytest.fixture(scope="module")
def dark(browser: OfflineBrowser) -> Iterator[Any]:
    """A desktop whose system setting is dark mode (the book follows it: default_mode auto).

    Its one test reads the colours of code listings, which hold no formulas, so MathJax is not
    loaded here: typesetting is about half of what loading a chapter costs the browser."""
    context = browser.context.browser.new_context(viewport=DESKTOP, color_scheme="dark")
    context.route("**/*", browser.route)
    context.route("**/vendor/mathjax/**", lambda route: route.abort("blockedbyclient"))
    yield context
    context.close()


@pytest.fixture(scope="module")
def dark_phone(browser: OfflineBrowser) -> Iterator[Any]:
    """A phone whose system setting is dark mode; MathJax not loaded (the dark tests read
    screenshots of explorers and figures, which hold no formulas)."""
    context = browser.context.browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, color_scheme="dark"
    )
    context.route("**/*", browser.route)
    context.route("**/vendor/mathjax/**", lambda route: route.abort("blockedbyclient"))
    yield context
    context.close()


# --- folded solutions -----------------------------------------------------------------------

# Every solution fold of the page (tools/book_folds.py: <details class="book-fold solution">
# holding the solution's text, code and output): its summary, and which of its parts are shown.
_FOLDS = """
() => {
  // checkVisibility: the content of a closed <details> keeps its layout boxes in Chromium
  // (content-visibility: hidden), so sizes alone would call it visible.
  const shown = (el) => el.offsetHeight > 0
    && el.checkVisibility({visibilityProperty: true, opacityProperty: true});
  const parts = (body, selector) => body ? Array.from(body.querySelectorAll(selector)) : [];
  const folds = Array.from(document.querySelectorAll("article details.book-fold"));
  return {
    exercises: !!document.querySelector("article section[id$='exercises']"),
    // The previous mechanisms (a dropdown admonition, a folded cell) must not come back.
    old: document.querySelectorAll(
      "article .admonition.dropdown, article div.cell.tag_hide-cell").length,
    folds: folds.map((fold) => {
      const summary = fold.querySelector(":scope > summary");
      const body = fold.querySelector(":scope > .book-fold-body");
      const part = (selector) => {
        const found = parts(body, selector);
        return {count: found.length, shown: found.filter(shown).length};
      };
      return {
        id: fold.id,
        open: fold.open,
        summary: summary ? summary.textContent.trim() : null,
        summaryShown: !!summary && shown(summary),
        text: part(":scope > :not(.cell)"),
        code: part(".cell_input pre"),
        output: part(".cell_output > *"),
        nested: parts(fold, "details").length,
      };
    }),
  };
}
"""


# --- tables ---------------------------------------------------------------------------------

_RAW_TABLES = """
() => Array.from(document.querySelectorAll("article p, article .cell_output pre"))
  .map((el) => el.textContent.trim())
  .filter((text) => /^\\|.*\\|/.test(text) && /\\|\\s*:?-{3,}|—\\s*\\|/.test(text))
  .map((text) => text.slice(0, 80))
"""


# --- reading on a phone, a tablet and a desktop --------------------------------------------

# What a reader cannot read at this width, folds open: code whose lines run past its box (a
# notebook cell's code and a Markdown code block wrap, each continuation indented under its
# line's start: _static/code-lines.js, book.css; printed output may scroll in its box when the
# box shows that it does, its edge shadows: book.css), wrapped lines whose continuation starts
# left of the line's own text, and names of inline code broken across lines inside a table (the
# table scrolls in its own box instead).
_READING = """
() => {
  const article = document.querySelector("article.bd-article");
  if (!article) return {clipped: [], hanging: [], broken: [], lines: 0, unfolded: []};
  const shown = (el) => el.offsetWidth > 0 && el.checkVisibility({visibilityProperty: true});
  const pres = Array.from(article.querySelectorAll("pre")).filter(shown);
  const cue = (pre) => pre.closest(".cell_output") !== null
    && getComputedStyle(pre).backgroundImage.includes("gradient");
  const clipped = pres.filter((pre) => pre.scrollWidth > pre.clientWidth + 1 && !cue(pre))
    .map((pre) => pre.textContent.trim().split("\\n")[0].slice(0, 60));
  // A wrapped line: its text's boxes on more than one row; each row after the first must start
  // at least one character right of where the line's text starts.
  const hanging = [];
  const range = document.createRange();
  let lines = 0;
  for (const line of article.querySelectorAll("pre .book-line, pre .source-line")) {
    if (!line.textContent.trim() || line.offsetHeight < 1.5 * parseFloat(
      getComputedStyle(line).lineHeight)) continue;
    lines += 1;
    range.selectNodeContents(line);
    const rows = new Map();
    for (const r of range.getClientRects()) {
      if (r.width === 0) continue;
      const top = Math.round(r.top);
      rows.set(top, Math.min(rows.get(top) ?? Infinity, r.left));
    }
    const starts = Array.from(rows.entries()).sort((a, b) => a[0] - b[0]).map((e) => e[1]);
    const indent = line.textContent.length - line.textContent.trimStart().length;
    const ch = parseFloat(getComputedStyle(line).fontSize) * 0.5;
    const text = starts[0] + indent * ch;
    if (starts.slice(1).some((left) => left < text + ch - 1)) {
      hanging.push(line.textContent.trim().slice(0, 60));
    }
  }
  const broken = Array.from(article.querySelectorAll("table code")).flatMap((code) => {
    const parts = code.querySelectorAll("span.pre");
    return parts.length ? Array.from(parts) : [code];
  }).filter((name) => shown(name) && name.getClientRects().length > 1)
    .map((name) => name.textContent);
  // Printed output over 40 lines (a run's log) is folded (_static/code-lines.js).
  const unfolded = Array.from(article.querySelectorAll("div.cell_output pre"))
    .filter((pre) => pre.querySelectorAll(":scope > .book-line").length > 40
      && !pre.closest("details.book-log"))
    .map((pre) => pre.textContent.trim().slice(0, 60));
  return {clipped: clipped, hanging: hanging.slice(0, 8), broken: broken, lines: lines,
    unfolded: unfolded};
}
"""


# --- navigation on a phone and a desktop ----------------------------------------------------

_SCROLL_WIDTH = """
() => ({
  page: document.documentElement.scrollWidth,
  // Boxes whose content is wider than they are must scroll (not clip): equations, code, output.
  clipped: Array.from(document.querySelectorAll(
    "article div.math, article div.math mjx-container, article pre"))
    .filter((el) => el.scrollWidth > el.clientWidth + 1
      && !["auto", "scroll"].includes(getComputedStyle(el).overflowX))
    .slice(0, 5).map((el) => el.textContent.trim().slice(0, 40)),
})
"""

# Opens every fold by script (the desktop visit opens them as a reader does) and waits two frames,
# for what follows an opening (_static/math-fit.js fits the fold's formulas) to be done.
_OPEN_FOLDS = """
async () => {
  document.querySelectorAll("article details").forEach((d) => { d.open = true; });
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
}
"""


_DRAWER = """
(selector) => {
  const el = document.querySelector(selector);
  const box = el.getBoundingClientRect();
  return getComputedStyle(el).visibility !== "hidden" && box.width > 0 && box.right > 0
    && box.left < window.innerWidth;
}
"""


# --- dark mode ------------------------------------------------------------------------------

# Contrast ratio (WCAG 2.1) of every piece of text inside the elements `selector` finds (code
# listings and printed source; the solution folds' summaries), against the background actually
# painted behind it. Returns how many elements were found, and the failures.
_CONTRAST = """
([minimum, selector]) => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const failures = [];
  const listings = document.querySelectorAll(selector);
  for (const pre of listings) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim()) continue;
      const el = node.parentElement;
      if (el.closest("button")) continue;
      const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(background(el))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < minimum) {
        failures.push(`${ratio.toFixed(2)}: ${node.textContent.trim().slice(0, 30)}`
          + ` (${getComputedStyle(el).color} on ${background(el)})`);
      }
    }
  }
  return {listings: listings.length, failures: failures.slice(0, 8)};
}
"""


#: The Chinese edition's pages that the dark-mode visit adds: its own pages (start, glossary) and
#: one chapter, whose Chinese fold labels and prose meet the dark theme.
CHINESE_IN_DARK = ("zh/book/index.html", "zh/book/glossary.html", "zh/book/02_relative_index.html")


def test_code_listings_and_solution_folds_are_readable_in_dark_mode(
    dark: Any, base_url: str, english: list[str], pages: list[str]
) -> None:
    unreadable, listings, summaries = {}, 0, 0
    chinese = [p for p in CHINESE_IN_DARK if p in pages]
    assert len(chinese) == len(CHINESE_IN_DARK), f"Chinese pages missing: {CHINESE_IN_DARK}"
    for path in english + chinese:
        page = _open(dark, base_url, path)
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        # A fold's summary is read closed; then the folds open, so that the solutions' listings
        # are checked too.
        folds = page.evaluate(_CONTRAST, [MIN_CONTRAST, "article details.book-fold > summary"])
        page.evaluate(_OPEN_FOLDS)
        found = page.evaluate(_CONTRAST, [MIN_CONTRAST, "article div.highlight pre"])
        listings += found["listings"]
        summaries += folds["listings"]
        if found["failures"] or folds["failures"]:
            unreadable[path] = found["failures"] + folds["failures"]
        _shot(page, "dark", path)
        page.close()
    assert listings, "no code listings found"
    assert summaries, "no solution folds found"
    assert not unreadable, f"text below WCAG AA contrast ({MIN_CONTRAST}:1) in dark mode"


# --- figures --------------------------------------------------------------------------------

# Every figure shown in the article (images load first): its image's size, its size on the page,
# and the text column's edges. Lazy images are made eager, and waited for (5 s at most each).
_FIGURES = """
async () => {
  const images = Array.from(document.querySelectorAll("article img"));
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener("load", done);
    img.addEventListener("error", done);
    setTimeout(done, 5000);
  })));
  const article = document.querySelector("article.bd-article") || document.querySelector("article");
  if (!article) return [];
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const left = box.left + parseFloat(style.paddingLeft);
  const right = Math.min(window.innerWidth, box.right - parseFloat(style.paddingRight));
  return images.filter((img) => img.offsetWidth > 0 && img.checkVisibility()).map((img) => {
    const r = img.getBoundingClientRect();
    return {
      natural: img.naturalWidth,
      naturalHeight: img.naturalHeight,
      shown: r.width,
      height: r.height,
      left: r.left - left,  // >= 0: inside the column
      right: right - r.right,  // >= 0: inside the column
      // the code that drew it, to find it
      cell: ((img.closest(".cell") || img).querySelector(".cell_input pre") || img)
        .textContent.trim().split("\\n").pop().slice(0, 70),
      svg: /\\.svg($|\\?)|^data:image\\/svg/.test(img.getAttribute("src")),
      // a chapter's figure (a cell's PNG output), where its file is, and whether it is a photo
      output: !!img.closest(".cell_output"),
      src: img.currentSrc,
      photo: img.classList.contains("book-photo"),
    };
  });
}
"""

# Figure links (Sphinx wraps a sized figure in a link to its full image) that draw an underline:
# the whitespace between two stacked figures showed as a stray line.
_UNDERLINED_FIGURE_LINKS = """
() => Array.from(document.querySelectorAll("article a.image-reference"))
  .filter((a) => getComputedStyle(a).textDecorationLine !== "none")
  .map((a) => a.getAttribute("href"))
"""


# --- in-page contents -----------------------------------------------------------------------

_ACTIVE = """
() => {
  const links = Array.from(document.querySelectorAll("#pst-page-toc-nav a[href^='#']"));
  const line = window.innerHeight * 0.3;
  let expected = links[0];
  for (const link of links) {
    const target = document.getElementById(decodeURIComponent(link.hash.slice(1)));
    if (target && target.getBoundingClientRect().top <= line) expected = link;
  }
  const active = links.filter((a) => a.classList.contains("active"));
  return {expected: expected && expected.hash, active: active.map((a) => a.hash)};
}
"""


# The in-page contents list in the right sidebar: entries that reach past the sidebar's content
# edge, or are cut in their own box, and whether the sidebar itself scrolls sideways.
_CONTENTS_FIT = """
() => {
  const side = document.querySelector("#pst-secondary-sidebar");
  if (!side || side.offsetWidth === 0) return null;
  const edge = side.getBoundingClientRect().right - parseFloat(getComputedStyle(side).paddingRight);
  return {
    scrolls: side.scrollWidth > side.clientWidth + 1,
    cut: Array.from(side.querySelectorAll("#pst-page-toc-nav a"))
      .filter((a) => a.getBoundingClientRect().right > edge + 1
        || a.scrollWidth > a.clientWidth + 1)
      .map((a) => a.textContent.replace(/\\s+/g, " ").trim()),
  };
}
"""

# Two frames after a resize: the page's own resize handlers (_static/math-fit.js) have run.
_TWO_FRAMES = (
    "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
)


# --- one visit per page on a desktop, one on a phone ------------------------------------------


def _contents_sweep(page: Any, path: str) -> list[str]:
    """Scroll down through every section and back up; where the highlight is not the section."""
    targets = page.evaluate(
        "() => Array.from(document.querySelectorAll('#pst-page-toc-nav a[href^=\"#\"]'))"
        ".map((a) => document.getElementById(decodeURIComponent(a.hash.slice(1))))"
        ".filter(Boolean).map((el) => el.getBoundingClientRect().top + window.scrollY)"
    )
    if len(targets) < 2:
        return []
    wrong = []
    stops = [t + 200 for t in targets]  # 200 px into every section
    for y in stops + stops[::-1]:
        page.evaluate(f"() => window.scrollTo(0, {y})")
        _settle(
            page,
            f"() => {{ const f = ({_ACTIVE})(); "
            "return f.active.length === 1 && f.active[0] === f.expected; }",
            timeout=1_000,
        )
        found = page.evaluate(_ACTIVE)
        if found["active"] != [found["expected"]]:
            wrong.append(f"at y={y:.0f}: {found}")
    _shot(page, "contents", path, full_page=False)
    return wrong


@pytest.fixture(scope="module")
def desktop(browser: OfflineBrowser, base_url: str, english: list[str]) -> dict[str, dict]:
    """Every page at 1366 px: its solution folds, tables, figures, what sticks out of the column,
    the contents sidebar, menu button and contents highlight; then, resized to 768 px, its
    figures and what sticks out there."""
    context = browser.context.browser.new_context(viewport=DESKTOP)
    context.route("**/*", browser.route)
    visits = {}
    for path in english:
        page = _open(context, base_url, path)
        visit: dict[str, Any] = {
            "folds": page.evaluate(_FOLDS),
            "raw_tables": page.evaluate(_RAW_TABLES),
            "tables": page.evaluate(
                "() => Array.from(document.querySelectorAll('article table'))"
                ".map((t) => t.textContent.replace(/\\s+/g, ' ').trim())"
            ),
            "searches": page.locator(".search-button-field").filter(visible=True).count(),
            "contents_fit": page.evaluate(_CONTENTS_FIT),
            "underlined": page.evaluate(_UNDERLINED_FIGURE_LINKS),
        }
        _shot(page, "desktop", path)
        states = [page.evaluate(_DRAWER, "#pst-primary-sidebar")]
        for _ in range(2):
            page.locator("button.primary-toggle").filter(visible=True).click()
            shown = f"(sel) => ({_DRAWER})(sel) !== {'true' if states[-1] else 'false'}"
            _settle(page, shown, "#pst-primary-sidebar")
            states.append(page.evaluate(_DRAWER, "#pst-primary-sidebar"))
        visit["sidebar"] = states
        visit["contents"] = _contents_sweep(page, path)
        # Open every fold as a reader does: a click on its summary. Then its contents show, and
        # the figures and the column are measured with every solution open.
        summaries = page.locator("article details.book-fold > summary").all()
        for summary in summaries:
            summary.click()
        if summaries:
            _settle(page, "() => true", timeout=3_000)  # the summary's marker turns (0.15 s)
            visit["opened"] = page.evaluate(_FOLDS)
            _shot(page, "solutions_open", path)
        visit["figures"] = page.evaluate(_FIGURES)
        visit["overflow"] = page.evaluate(OVERFLOW)
        visit["reading"] = page.evaluate(_READING)
        page.set_viewport_size(TABLET)
        page.evaluate(_TWO_FRAMES)
        visit["figures_768"] = page.evaluate(_FIGURES)
        visit["overflow_768"] = page.evaluate(OVERFLOW)
        visit["reading_768"] = page.evaluate(_READING)
        visits[path] = visit
        page.close()
    context.close()
    return visits


def _drawers(page: Any, path: str) -> list[str]:
    """Open and close the phone's ☰ and contents drawers; what went wrong."""
    problems = []
    for name, toggle, drawer in (
        ("☰", "button.primary-toggle", "#pst-primary-sidebar-modal"),
        ("contents", "button.secondary-toggle", "#pst-secondary-sidebar-modal"),
    ):
        if name == "contents" and not page.locator("#pst-page-toc-nav a").count():
            continue  # a page without sections has no contents drawer
        button = page.locator(toggle).filter(visible=True)
        if button.count() != 1:
            problems.append(f"{name}: {button.count()} visible buttons")
            continue
        button.click()
        _settle(page, _DRAWER, drawer)
        if not page.evaluate(_DRAWER, drawer):
            problems.append(f"{name}: the drawer does not open")
            continue
        if name == "☰":
            links = page.locator(f"{drawer} nav.bd-links a").filter(visible=True).count()
            if links < 2:
                problems.append(f"☰: the drawer shows {links} chapter links")
            _shot(page, "phone_nav_open", path, full_page=False)
        page.keyboard.press("Escape")
        _settle(page, "(sel) => !document.querySelector(sel).open", drawer)
        if page.evaluate(f"() => document.querySelector('{drawer}').open"):
            problems.append(f"{name}: the drawer does not close")
    return problems


@pytest.fixture(scope="module")
def phone_visits(phone: Any, base_url: str, pages: list[str]) -> dict[str, dict]:
    """Every page on the phone, its folds open: its width, what sticks out of the column,
    clipped boxes, figures and navigation drawers."""
    visits = {}
    for path in pages:
        page = _open(phone, base_url, path)
        _shot(page, "phone", path)
        page.evaluate(_OPEN_FOLDS)
        visit = page.evaluate(_SCROLL_WIDTH)
        visit["overflow"] = page.evaluate(OVERFLOW)
        visit["figures"] = page.evaluate(_FIGURES)
        visit["reading"] = page.evaluate(_READING)
        visit["drawers"] = _drawers(page, path)
        visit["searches"] = page.locator(".search-button-field").filter(visible=True).count()
        visits[path] = visit
        page.close()
    return visits


def test_solutions_are_folded_until_opened_and_then_show_everything(
    desktop: dict[str, dict],
) -> None:
    closed_wrong, opened_wrong, missing, folds = {}, {}, {}, 0
    for path, visit in desktop.items():
        found = visit["folds"]
        folds += len(found["folds"])
        if found["exercises"] and not found["folds"]:
            missing[path] = "an Exercises section without a solution fold"
        if found["old"]:
            missing[path] = f"{found['old']} dropdowns or folded cells (the old folds)"
        bad = []
        for fold in found["folds"]:
            name = fold["summary"] or fold["id"]
            if fold["open"] or not fold["summaryShown"]:
                bad.append(f"{name}: open, or its summary line hidden")
            if re.fullmatch(r"(Solution|解答) \d+", fold["summary"] or "") is None:
                bad.append(f"{name}: summary is not 'Solution N'")
            if any(fold[part]["shown"] for part in ("text", "code", "output")):
                bad.append(f"{name}: content visible while closed")
            if fold["nested"]:
                bad.append(f"{name}: a fold inside the fold")
        if bad:
            closed_wrong[path] = bad
        # Opened (a click on every summary): every part of every fold shows.
        hidden = [
            f"{fold['summary']}: {part} {fold[part]['shown']} of {fold[part]['count']} shown"
            for fold in visit.get("opened", {"folds": []})["folds"]
            for part in ("text", "code", "output")
            if fold[part]["shown"] < fold[part]["count"] or not fold["open"]
        ]
        hidden += [
            f"{fold['summary']}: empty"
            for fold in visit.get("opened", {"folds": []})["folds"]
            if not fold["text"]["count"] + fold["code"]["count"]
        ]
        if hidden:
            opened_wrong[path] = hidden
    assert folds, "no solution folds (details.book-fold) found"
    assert not missing, "pages whose solutions are not folded as tools/book_folds.py folds them"
    assert not closed_wrong, "solution folds that do not hide their solution until opened"
    assert not opened_wrong, "solution folds whose text, code or output does not show when opened"


def test_tables_are_html_tables(desktop: dict[str, dict]) -> None:
    raw = {path: visit["raw_tables"] for path, visit in desktop.items() if visit["raw_tables"]}
    assert not raw, "Markdown tables printed as text instead of rendered as <table>"
    # The paper's Table 4 (chapter 0) is a real table with its headline row.
    for path in [p for p in desktop if p.endswith("00_introduction.html")]:
        assert any("relative (default)" in t for t in desktop[path]["tables"]), path


def test_figures_are_sharp_on_high_density_screens(desktop: dict[str, dict]) -> None:
    soft = {}
    for path, visit in desktop.items():
        figures = visit["figures"]
        if bad := [f for f in figures if not f["svg"] and f["natural"] < 2 * f["shown"] - 1]:
            soft[path] = [f"{f['natural']} px shown at {f['shown']:.0f}: {f['cell']}" for f in bad]
    assert sum(len(v["figures"]) for v in desktop.values()), "no figures found"
    assert not soft, "figures neither SVG nor at least 2x their display width"


def test_figures_keep_their_shape_and_fit_the_column_at_every_width(
    desktop: dict[str, dict], phone_visits: dict[str, dict]
) -> None:
    # A figure scales with the column, its height following its width (_static/book.css): not
    # squashed (shown height-to-width ratio = the image's, within ASPECT_TOLERANCE), and never
    # wider than the column.
    wrong, measured = {}, 0
    for width, key, visits in (
        (DESKTOP["width"], "figures", desktop),
        (TABLET["width"], "figures_768", desktop),
        (PHONE["width"], "figures", phone_visits),
    ):
        for path, visit in visits.items():
            for f in visit[key]:
                if not f["natural"] or not f["naturalHeight"]:
                    continue  # not loaded: test_every_image_loads names it
                measured += 1
                ratio = (f["height"] / f["shown"]) / (f["naturalHeight"] / f["natural"])
                if abs(ratio - 1) > ASPECT_TOLERANCE:
                    wrong.setdefault(path, []).append(
                        f"{width} px: {f['natural']}x{f['naturalHeight']} shown "
                        f"{f['shown']:.0f}x{f['height']:.0f} ({ratio - 1:+.0%}): {f['cell']}"
                    )
                if f["left"] < -1 or f["right"] < -1:
                    wrong.setdefault(path, []).append(
                        f"{width} px: {f['shown']:.0f} px wide, past the column by "
                        f"{-min(f['left'], f['right']):.0f} px: {f['cell']}"
                    )
    assert measured, "no figures found"
    assert not wrong, "figures distorted or wider than the column"


def test_figure_links_draw_no_underline(desktop: dict[str, dict]) -> None:
    underlined = {path: v["underlined"] for path, v in desktop.items() if v["underlined"]}
    assert not underlined, "links around figures that underline (a stray line between figures)"


def test_nothing_sticks_out_of_the_column_on_a_desktop_or_a_tablet(
    desktop: dict[str, dict],
) -> None:
    wrong = {}
    for width, key in ((DESKTOP["width"], "overflow"), (TABLET["width"], "overflow_768")):
        for path, visit in desktop.items():
            found = visit[key]
            if found["out"] or found["page"] > found["view"]:
                wrong.setdefault(path, []).append(f"{width} px: {found}")
    assert not wrong, "elements outside the text column (tag.class [left, right]), folds open"


def test_in_page_contents_entries_wrap_inside_the_sidebar(desktop: dict[str, dict]) -> None:
    cut = {
        path: v["contents_fit"]
        for path, v in desktop.items()
        if v["contents_fit"] and (v["contents_fit"]["scrolls"] or v["contents_fit"]["cut"])
    }
    assert not cut, "contents entries cut off at the sidebar's edge"


def test_desktop_menu_button_hides_and_shows_the_sidebar(desktop: dict[str, dict]) -> None:
    broken = {
        path: f"sidebar shown after 0, 1, 2 clicks: {v['sidebar']}; search boxes: {v['searches']}"
        for path, v in desktop.items()
        if v["sidebar"] != [True, False, True] or v["searches"] != 1
    }
    assert not broken


def test_contents_highlight_follows_the_reader_both_ways(desktop: dict[str, dict]) -> None:
    lagging = {path: v["contents"] for path, v in desktop.items() if v["contents"]}
    assert not lagging, "the contents highlight is not the section on screen"


def test_no_page_scrolls_sideways_on_a_phone(phone_visits: dict[str, dict]) -> None:
    # Folds open. A wide equation is drawn smaller to fit (_static/math-fit.js) or scrolls in its
    # box, as code and printed tables do; nothing else may reach past the column.
    wide = {
        path: {
            "page": v["page"],
            "outside the column": v["overflow"]["out"],
            "clipped": v["clipped"],
        }
        for path, v in phone_visits.items()
        if v["page"] > PHONE["width"] or v["overflow"]["out"] or v["clipped"]
    }
    assert not wide, (
        f"pages wider than the {PHONE['width']} px phone (what sticks out listed), "
        "or wide equations and code that are clipped instead of scrolling in their box"
    )


def test_phone_navigation_drawers_open_and_close(phone_visits: dict[str, dict]) -> None:
    broken = {path: v["drawers"] for path, v in phone_visits.items() if v["drawers"]}
    broken |= {
        path: ["more than one search box"] for path, v in phone_visits.items() if v["searches"] > 1
    }
    assert not broken


def test_code_wraps_indented_table_names_stay_whole_and_logs_fold_at_every_width(
    desktop: dict[str, dict], phone_visits: dict[str, dict]
) -> None:
    # Phone: both editions; tablet and desktop: the English edition (the Chinese pages hold the
    # same code and outputs under the same stylesheet). Folds open.
    counts = {
        "clipped code": 0,
        "continuations not indented": 0,
        "names broken in tables": 0,
        "long logs not folded": 0,
    }
    wrong, wrapped = {}, 0
    for width, key, visits in (
        (PHONE["width"], "reading", phone_visits),
        (TABLET["width"], "reading_768", desktop),
        (DESKTOP["width"], "reading", desktop),
    ):
        for path, visit in visits.items():
            found = visit[key]
            wrapped += found["lines"] if width == PHONE["width"] else 0
            parts = (found["clipped"], found["hanging"], found["broken"], found["unfolded"])
            for name, items in zip(counts, parts, strict=True):
                counts[name] += len(items)
                if items:
                    wrong.setdefault(f"{path} at {width} px", []).append(f"{name}: {items}")
    assert wrapped, "no wrapped code line on a phone: the wrapping was not measured"
    assert not wrong, f"{counts}: code clipped or wrapped unindented, names broken, logs unfolded"


#: A pixel of a screenshot is bright above this grey level (of 255); an explorer's screen on a
#: dark phone may be at most MAX_BRIGHT_SHARE bright: its colour-mapped cells (the data) may be
#: light, its background, text and plain cells take the page's colours (book.css). Drawn on the
#: light card the theme gives HTML outputs, an explorer's screen was 75-81 % bright.
BRIGHT_LEVEL = 190
MAX_BRIGHT_SHARE = 0.35


def test_explorers_take_the_dark_pages_colours(
    dark_phone: Any, base_url: str, english: list[str]
) -> None:
    context = dark_phone
    shares, measured = {}, 0
    for path in english:
        if '<div class="cx-explorer">' not in (HTML / path).read_text(encoding="utf-8"):
            continue
        page = _open(context, base_url, path)
        _settle(page, "() => document.querySelector('.cx-explorer.cx-is-live') !== null")
        page.evaluate(
            "() => document.querySelector('.cx-explorer').scrollIntoView({behavior: 'instant'})"
        )
        grey = Image.open(io.BytesIO(page.screenshot())).convert("L")
        histogram = grey.histogram()
        share = sum(histogram[BRIGHT_LEVEL + 1 :]) / sum(histogram)
        measured += 1
        if share > MAX_BRIGHT_SHARE:
            shares[path] = f"{share:.0%} of the screen bright"
        _shot(page, "dark_explorer", path)
        page.close()
    assert measured, "no page with an explorer found"
    assert not shares, f"explorers that light up a dark phone screen (over {MAX_BRIGHT_SHARE:.0%})"


# --- figures on a phone and on a dark page ----------------------------------------------------


def _figure_file(src: str) -> Path | None:
    """The built book's file behind an image URL of the local server (None if it has none)."""
    file = HTML / unquote(urlparse(src).path).lstrip("/")
    return file if file.is_file() else None


def test_every_figures_smallest_text_is_legible_on_a_phone(phone_visits: dict[str, dict]) -> None:
    # Every chapter's figures in both editions, folds open. Each PNG records the size of its
    # smallest text in its own pixels (companion/figures/inline.py); the page shows the PNG at
    # shown/natural of its size, so the text is shown at that fraction of the recorded size.
    small, unmeasured, measured = {}, {}, 0
    for path, visit in phone_visits.items():
        for f in visit["figures"]:
            if not f["output"] or f["svg"] or not f["natural"]:
                continue  # not a chapter's PNG figure (or not loaded: test_every_image_loads)
            file = _figure_file(f["src"])
            text_px = None if file is None else png_smallest_text_px(file.read_bytes())
            if text_px is None:
                unmeasured.setdefault(path, []).append(f["cell"])
                continue
            measured += 1
            shown = text_px * f["shown"] / f["natural"]
            if shown < PHONE_MIN_TEXT_PX:
                small.setdefault(path, []).append(f"{shown:.1f} px: {f['cell']}")
    assert measured, "no figures found"
    assert not unmeasured, "figures that record no text size (companion/figures/inline.py)"
    count = sum(map(len, small.values()))
    assert not small, f"{count} of {measured} figures with text below {PHONE_MIN_TEXT_PX} px"


#: A figure on a dark page may be at most MAX_FIGURE_BRIGHT_SHARE bright (pixels above
#: BRIGHT_LEVEL): its ink and the colours of its data, on the page's own dark ground. On the
#: theme's light card a figure was 80-100 % bright. Photos keep their light card (book-photo).
MAX_FIGURE_BRIGHT_SHARE = 0.35


def test_figures_take_the_dark_page_without_lighting_it_up(
    dark_phone: Any, base_url: str, english: list[str]
) -> None:
    context = dark_phone
    bright, shares, total = {}, [], [0, 0]
    for path in [*english, "zh/book/02_relative_index.html"]:
        if "cell_output" not in (HTML / path).read_text(encoding="utf-8"):
            continue
        page = _open(context, base_url, path)
        for img in page.locator("article div.cell_output img:not(.book-photo)").all():
            if not img.is_visible():
                continue  # an explorer's static figure, shown only without JavaScript
            histogram = Image.open(io.BytesIO(img.screenshot())).convert("L").histogram()
            lit, pixels = sum(histogram[BRIGHT_LEVEL + 1 :]), sum(histogram)
            total[0], total[1] = total[0] + lit, total[1] + pixels
            shares.append(lit / pixels)
            if lit / pixels > MAX_FIGURE_BRIGHT_SHARE:
                src = (img.get_attribute("src") or "").rsplit("/", 1)[-1]
                bright.setdefault(path, []).append(f"{lit / pixels:.0%}: {src}")
        _shot(page, "dark_figures", path)
        page.close()
    assert shares, "no figures found"
    summary = (
        f"{len(shares)} figures, {total[0] / total[1]:.0%} of their pixels bright, "
        f"{sum(map(len, bright.values()))} over {MAX_FIGURE_BRIGHT_SHARE:.0%}"
    )
    assert not bright, f"figures that light up a dark page ({summary})"
