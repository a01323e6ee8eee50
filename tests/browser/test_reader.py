"""The book as a reader meets it, on every page: folded answers, real tables, navigation on a
phone and on a desktop, readable dark mode, sharp figures, a contents highlight that follows.

Every page is visited three more times (desktop, a 390 px phone, dark mode); each visit records
what the tests below check, and saves screenshots under ``_build/screenshots/`` (``desktop_*``,
``solutions_open_*``, ``phone_*``, ``phone_nav_open_*``, ``dark_*``). Each test lists every
offending page in its failure message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from book_browser import SCREENSHOTS, WIDGETS_DRAWN, OfflineBrowser, screenshot_name

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
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
def dark(browser: OfflineBrowser) -> Iterator[Any]:
    """A desktop whose system setting is dark mode (the book follows it: default_mode auto).

    Its one test reads the colours of code listings, which hold no formulas, so MathJax is not
    loaded here: typesetting is about half of what loading a chapter costs the browser."""
    context = browser.context.browser.new_context(viewport=DESKTOP, color_scheme="dark")
    context.route("**/*", browser.route)
    context.route("**/vendor/mathjax/**", lambda route: route.abort("blockedbyclient"))
    yield context
    context.close()


# --- folded exercise answers ----------------------------------------------------------------

# Everything in the Exercises section after the questions: the prose answers (dropdowns) and the
# solution cells. Returns, for each, whether any of its text is visible before it is opened.
_ANSWERS = """
() => {
  const section = document.querySelector("section#exercises");
  if (!section) return null;
  // checkVisibility: the content of a closed <details> keeps its layout boxes in Chromium
  // (content-visibility: hidden), so sizes alone would call it visible.
  const shown = (el) => !!el && el.offsetHeight > 0
    && el.checkVisibility({visibilityProperty: true, opacityProperty: true});
  const cells = Array.from(section.querySelectorAll("div.cell"));
  return {
    cells: cells.map((cell) => ({
      input: Array.from(cell.querySelectorAll(".cell_input pre")).some(shown),
      output: Array.from(cell.querySelectorAll(".cell_output > *")).some(shown),
      toggles: cell.querySelectorAll("details > summary").length,
    })),
    dropdowns: Array.from(section.querySelectorAll(".admonition.dropdown")).map((d) =>
      Array.from(d.children).filter((c) => !c.classList.contains("admonition-title"))
        .some(shown)),
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
  widest: Array.from(document.querySelectorAll("article *"))
    .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1
      && !el.closest("div.math, pre, .cell_output table, .jupyter-widgets, #pst-secondary-sidebar"))
    .slice(0, 5).map((el) => `${el.tagName}.${el.className}`.slice(0, 60)),
})
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

# Contrast ratio (WCAG 2.1) of every piece of text inside code listings and printed source,
# against the background actually painted behind it. Returns the failures.
_CODE_CONTRAST = """
(minimum) => {
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
  const listings = document.querySelectorAll("article div.highlight pre");
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


def test_code_listings_are_readable_in_dark_mode(
    dark: Any, base_url: str, pages: list[str]
) -> None:
    unreadable, listings = {}, 0
    for path in pages:
        page = _open(dark, base_url, path)
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        # Open the folds, so that the solutions' listings are checked too.
        page.evaluate("() => document.querySelectorAll('details').forEach((d) => d.open = true)")
        found = page.evaluate(_CODE_CONTRAST, MIN_CONTRAST)
        listings += found["listings"]
        if found["failures"]:
            unreadable[path] = found["failures"]
        _shot(page, "dark", path)
        page.close()
    assert listings, "no code listings found"
    assert not unreadable, f"code text below WCAG AA contrast ({MIN_CONTRAST}:1) in dark mode"


# --- figures --------------------------------------------------------------------------------

_FIGURES = """
() => Array.from(document.querySelectorAll("article img")).filter((img) => img.offsetWidth > 0)
  .map((img) => ({natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
                  // the code that drew it, to find it
                  cell: ((img.closest(".cell") || img).querySelector(".cell_input pre") || img)
                    .textContent.trim().split("\\n").pop().slice(0, 70),
                  svg: /\\.svg($|\\?)|^data:image\\/svg/.test(img.getAttribute("src"))}))
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
def desktop(browser: OfflineBrowser, base_url: str, pages: list[str]) -> dict[str, dict]:
    """Every page at 1366 px: its answers, tables, figures, menu button and contents highlight."""
    context = browser.context.browser.new_context(viewport=DESKTOP)
    context.route("**/*", browser.route)
    visits = {}
    for path in pages:
        page = _open(context, base_url, path)
        visit: dict[str, Any] = {
            "answers": page.evaluate(_ANSWERS),
            "raw_tables": page.evaluate(_RAW_TABLES),
            "tables": page.evaluate(
                "() => Array.from(document.querySelectorAll('article table'))"
                ".map((t) => t.textContent.replace(/\\s+/g, ' ').trim())"
            ),
            "figures": page.evaluate(_FIGURES),
            "searches": page.locator(".search-button-field").filter(visible=True).count(),
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
        if visit["answers"] is not None:  # open every fold: the answers must then show
            for summary in page.locator("section#exercises div.cell details > summary").all():
                summary.click()
            # myst-nb fades an opened fold's content in (its 0.3 s `collapsed-fade-in`), and
            # checkVisibility counts opacity: let the last fold finish before reading.
            _settle(page, "() => true", timeout=3_000)
            visit["opened"] = page.evaluate(_ANSWERS)
            _shot(page, "solutions_open", path)
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
    """Every page on the phone: its width, clipped boxes and navigation drawers."""
    visits = {}
    for path in pages:
        page = _open(phone, base_url, path)
        visit = page.evaluate(_SCROLL_WIDTH)
        _shot(page, "phone", path)
        visit["drawers"] = _drawers(page, path)
        visit["searches"] = page.locator(".search-button-field").filter(visible=True).count()
        visits[path] = visit
        page.close()
    return visits


def test_exercise_answers_are_hidden_until_opened(desktop: dict[str, dict]) -> None:
    visible, opened_wrong, checked = {}, {}, 0
    for path, visit in desktop.items():
        found = visit["answers"]
        if found is None:
            continue
        checked += len(found["cells"])
        bad = [f"cell {i}" for i, c in enumerate(found["cells"]) if c["input"] or c["output"]]
        bad += [
            f"cell {i}: {c['toggles']} folds"
            for i, c in enumerate(found["cells"])
            if c["toggles"] != 1
        ]
        bad += [f"dropdown {i}" for i, shown in enumerate(found["dropdowns"]) if shown]
        if bad:
            visible[path] = bad
        if not all(c["input"] for c in visit["opened"]["cells"]):
            opened_wrong[path] = visit["opened"]["cells"]
    assert checked, "no solution cells found in any Exercises section"
    assert not visible, "answers visible before the reader opens them (or not one fold per cell)"
    assert not opened_wrong, "solution cells whose code does not show when opened"


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
    wide = {
        path: v for path, v in phone_visits.items() if v["page"] > PHONE["width"] or v["clipped"]
    }
    assert not wide, (
        f"pages wider than the {PHONE['width']} px phone (widest elements listed), "
        "or wide equations and code that are clipped instead of scrolling in their box"
    )


def test_phone_navigation_drawers_open_and_close(phone_visits: dict[str, dict]) -> None:
    broken = {path: v["drawers"] for path, v in phone_visits.items() if v["drawers"]}
    broken |= {
        path: ["more than one search box"] for path, v in phone_visits.items() if v["searches"] > 1
    }
    assert not broken
