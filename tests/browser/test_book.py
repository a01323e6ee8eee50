"""The built HTML book as a reader's browser sees it: every page, offline, in headless Chromium.

One visit per page (the ``reports`` fixture) collects everything; each test checks one aspect over
all pages and lists every offending page in its failure message.
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from book_browser import (
    BOOK_ROOT,
    FULL_PAGE_SUFFIX,
    HTML,
    SCREENSHOTS,
    OfflineBrowser,
    PageReport,
    edition,
    redirects,
    screenshot_name,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from colab_sync import load_repository


def _failures(reports: dict[str, PageReport], attribute: str) -> dict[str, list]:
    return {path: value for path, r in reports.items() if (value := getattr(r, attribute))}


def _notebook_pages(reports: dict[str, PageReport]) -> list[str]:
    """Pages built from a notebook (the chapters), which get a Colab launch button."""
    return [p for p in reports if (BOOK_ROOT / p).with_suffix(".ipynb").is_file()]


def test_every_page_and_resource_loads(reports: dict[str, PageReport]) -> None:
    assert reports, f"no pages found under {HTML}"
    bad, failed = _failures(reports, "bad_responses"), _failures(reports, "failed_requests")
    assert not bad, "responses with status >= 400"
    assert not failed, "requests to the book's server that failed"


def test_no_request_leaves_localhost(reports: dict[str, PageReport]) -> None:
    # A CDN script or remote image would break the book offline; vendor it (tools/vendor_js.py).
    external = _failures(reports, "external_requests")
    assert not external


def test_no_javascript_errors(reports: dict[str, PageReport]) -> None:
    # No whitelist: every error a page logs or throws fails the test (sphinx-thebe's doubled
    # script and the theme's "invalid theme mode" are fixed in tools/sphinx_fixes.py and
    # _config.yml).
    errors = _failures(reports, "js_errors")
    assert not errors


def test_the_server_answered_every_request(
    reports: dict[str, PageReport], not_found: list[str]
) -> None:
    # Requests the browser makes on its own (favicon.ico) reach no page event; the server logs them.
    assert not not_found, "paths the book's server answered with an error"


def test_every_image_loads(reports: dict[str, PageReport]) -> None:
    broken = _failures(reports, "broken_images")
    assert not broken, "images with naturalWidth 0"


def test_every_formula_is_typeset(reports: dict[str, PageReport]) -> None:
    untypeset = {
        path: f"{r.math_rendered} of {r.math}"
        for path, r in reports.items()
        if r.math_rendered < r.math
    }
    assert not untypeset, "formulas that MathJax did not typeset"
    tex_errors = _failures(reports, "math_errors")
    left_as_text = _failures(reports, "unrendered_tex")
    assert not tex_errors, "TeX errors"
    assert not left_as_text, "TeX left as text (a $ outside math?)"


def test_the_chapters_have_typeset_math(reports: dict[str, PageReport]) -> None:
    # Guards the test above against passing vacuously (no .math element found at all).
    chapters = _notebook_pages(reports)
    if chapters:
        assert sum(reports[p].math_rendered for p in chapters) > 0


def test_no_page_shows_a_widget_view_so_none_needs_the_widget_manager(
    reports: dict[str, PageReport],
) -> None:
    # The book serves no RequireJS and no ipywidgets HTML manager (nb_ipywidgets_js: {} in
    # _config.yml): a widget view saved in an output would show nothing. Bring the manager back
    # (README, "What the pages load") before committing one.
    views = {p: len(r.widgets) for p, r in reports.items() if r.widgets}
    assert not views, "pages with widget views, which nothing on the page can draw"


def test_pages_load_no_widget_manager_and_no_requirejs(reports: dict[str, PageReport]) -> None:
    unused = re.compile(r"require(\.min)?\.js|html-manager|embed-amd|widgets-setup", re.I)
    loaded = {p: [s for s in r.scripts if unused.search(s)] for p, r in reports.items()}
    assert not {p: s for p, s in loaded.items() if s}, "scripts no page uses"
    assert any(r.scripts for r in reports.values())  # the collection saw scripts at all


#: Blocks that may be wider than the text column at 1280 px: (page, start of the block's longest
#: line) -> why. Everything else fits: notebook cells and the companion source the chapters show
#: are linted to 100 columns (ruff), _static/book.css makes 100 columns fit at 1280 px, and printed
#: output longer than that (a configuration dict, an error message with its path) wraps inside
#: its box from 1200 px up. Empty: no block needs to scroll sideways on a desktop.
WIDE_ALLOWED: dict[tuple[str, str], str] = {}


def test_code_and_outputs_fit_the_column_at_1280_px(reports: dict[str, PageReport]) -> None:
    # The reports are taken in a 1280 px wide window (conftest.py's browser fixture).
    too_wide = {}
    for path, report in reports.items():
        for block in report.wide_blocks:
            allowed = any(
                page == path and block["longest"].lstrip().startswith(start)
                for page, start in WIDE_ALLOWED
            )
            if not allowed:
                too_wide.setdefault(path, []).append(
                    f"{block['kind']} {block['scroll']} > {block['client']} px: "
                    f"{block['longest'][:90]!r}"
                )
    assert not too_wide, "code or output blocks that scroll sideways at 1280 px"


def test_nothing_sticks_out_of_the_column_at_1280_px(reports: dict[str, PageReport]) -> None:
    # Not a block that scrolls in its own box (the test above), but any element of the article
    # that reaches past the column: into the contents sidebar, or off the window.
    out = {
        path: r.overflow["out"] or f"page {r.overflow['page']} px wide"
        for path, r in reports.items()
        if r.overflow["out"] or r.overflow["page"] > r.overflow["view"]
    }
    assert not out, "elements outside the text column at 1280 px (tag.class [left, right])"


def test_the_width_allow_list_names_only_blocks_that_are_wide(
    reports: dict[str, PageReport],
) -> None:
    # An entry whose block now fits (or is gone) is removed, so the list stays the truth.
    seen = {
        (path, start)
        for path, report in reports.items()
        for page, start in WIDE_ALLOWED
        if page == path and any(b["longest"].lstrip().startswith(start) for b in report.wide_blocks)
    }
    assert set(WIDE_ALLOWED) - seen == set(), "allow-listed blocks that are no longer wide"


def test_colab_launch_link_points_at_the_pages_notebook(reports: dict[str, PageReport]) -> None:
    repo = load_repository(BOOK_ROOT / "_config.yml")
    wrong = {}
    for path, report in reports.items():
        notebook = Path(path).with_suffix(".ipynb").as_posix()
        if path in _notebook_pages(reports):
            expected = repo.colab_url(notebook)
            if expected not in report.colab_links or set(report.colab_links) != {expected}:
                wrong[path] = report.colab_links
        elif report.colab_links:
            wrong[path] = report.colab_links  # a Markdown page has no notebook to open
    assert not wrong, "Colab links that do not open this page's notebook on the configured branch"


def test_internal_links_resolve(reports: dict[str, PageReport]) -> None:
    broken = {}
    for path, report in reports.items():
        for href in report.links:
            url = urlparse(href)
            if url.hostname != "127.0.0.1":
                continue
            target = url.path.lstrip("/")
            target = target + "index.html" if target.endswith("/") or not target else target
            missing_page = not (HTML / target).is_file()
            # Anchors are checked on the pages this test visited (all HTML pages of the book).
            missing_anchor = url.fragment and url.fragment not in reports.get(target, report).ids
            if missing_page or (target in reports and missing_anchor):
                broken.setdefault(path, []).append(href)
    assert not broken


def test_the_root_redirects_to_a_page(reports: dict[str, PageReport]) -> None:
    stubs = redirects()
    assert "index.html" in stubs or "index.html" in reports, "no index.html at the book's root"
    assert all(target in reports for target in stubs.values()), stubs


def test_navigation_lists_every_page(reports: dict[str, PageReport]) -> None:
    # Each edition's sidebar lists that edition's pages.
    missing = {}
    for root in {edition(p) for p in reports}:
        start = redirects().get(f"{root}index.html", f"{root}index.html")
        special = {start, f"{root}genindex.html", f"{root}search.html"}
        pages = {p for p in reports if edition(p) == root and p not in special}
        navigated = {urlparse(href).path.lstrip("/") for href in reports[start].nav_links}
        if pages - navigated:
            missing[start] = sorted(pages - navigated)
    assert not missing, "pages missing from the sidebar"


def test_every_page_has_a_screenshot(reports: dict[str, PageReport]) -> None:
    shot = {p: SCREENSHOTS / screenshot_name(p, FULL_PAGE_SUFFIX) for p in reports}
    missing = [p for p, file in shot.items() if not file.is_file()]
    assert not missing


def test_search_finds_every_chapter(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport]
) -> None:
    chapters = _notebook_pages(reports)
    if not chapters:
        pytest.skip("no chapter notebooks are built yet")
    not_found = {}
    page = browser.context.new_page()
    for path in chapters:
        # The chapter's longest title word ("2. The relative position index" -> "relative"), or
        # its longest run of Chinese characters, searched on its edition's search page.
        heading = reports[path].title.split(" — ")[0]
        words = re.findall(r"[A-Za-z]{4,}", heading) or re.findall(r"[\u4e00-\u9fff]{2,}", heading)
        word = max(words, key=len)
        page.goto(f"{base_url}{edition(path)}search.html?q={quote(word)}", wait_until="load")
        try:
            page.wait_for_function(
                "(target) => Array.from(document.querySelectorAll('#search-results a'))"
                ".some((a) => a.href.split('#')[0].endsWith(target))",
                arg=path,
                timeout=15_000,
            )
        except Exception:  # a timeout: say what the search did return
            found = page.eval_on_selector_all("#search-results a", "(as) => as.map((a) => a.href)")
            not_found[f"{path} (searched {word!r})"] = found
    page.close()
    assert not not_found, "chapters the search page did not find"


# Plain-text checks of the snippet: TeX source ("\(", "\times") and a run of two entries of
# the page's contents list (the article header's "Contents" list, read as text).
_TEX = re.compile(r"\\[()\[\]]|\\[A-Za-z]+|\$\$")


def test_search_snippets_read_as_prose(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport]
) -> None:
    # "matrix" is a word of several chapters' prose, next to formulas (an N x N matrix); each
    # result's snippet is made when the result is shown (_static/search-snippets.js).
    page = browser.context.new_page()
    page.goto(f"{base_url}search.html?q=matrix", wait_until="load")
    page.wait_for_function(
        """() => {
          const items = Array.from(document.querySelectorAll("#search-results li"));
          const done = /found/.test(document.querySelector("#search-results .search-summary")
            ?.textContent || "");
          return done && items.length > 0 && items.every((li) => li.querySelector("p.context"));
        }""",
        timeout=20_000,
    )
    results = page.eval_on_selector_all(
        "#search-results li",
        "(items) => items.map((li) => [li.querySelector('a').href,"
        " li.querySelector('p.context').textContent])",
    )
    # The formula-to-text step on its own, for the forms the chapters use.
    converted = page.evaluate(
        "(texs) => texs.map((t) => window.bookSearchSnippets.texToText(t))",
        [
            "\\(N \\times N\\)",
            "\\(X \\in \\mathbb{R}^{N \\times C}\\)",
            "\\(\\frac{QK^\\top}{\\sqrt{d}}\\)",
        ],
    )
    page.close()
    assert converted == ["N × N", "X ∈ ℝ^(N × C)", "(QK^⊤)/(√d)"]
    assert len(results) >= 3, results
    bad = {}
    for href, snippet in results:
        path = urlparse(href).path.lstrip("/")
        text = " ".join(snippet.split())
        contents = reports[path].contents if path in reports else []
        runs = [f"{a} {b}" for a, b in itertools.pairwise(contents)]
        problems = [f"TeX {m[0]!r}" for m in _TEX.finditer(text)]
        problems += [f"contents list {run!r}" for run in runs if run in text]
        if problems:
            bad[path] = [*problems, text[:160]]
    assert not bad, "search snippets with TeX source or the contents list"
    # A snippet is cut around the word in the prose (a page whose only match is in code, which
    # snippets leave out, shows its opening lines instead).
    around = [href for href, snippet in results if "matrix" in snippet.lower()]
    assert len(around) >= len(results) / 2, results


def test_every_page_switches_to_the_same_page_in_the_other_language(
    reports: dict[str, PageReport],
) -> None:
    # _static/language-switch.js: the Chinese edition is served under zh/, page for page; the
    # glossary exists only in Chinese, and its switch leads to the English book's start.
    wrong = {}
    for path, report in reports.items():
        if not path.startswith(("book/", "zh/book/")):
            continue  # the search and index pages have no article header
        if path.startswith("zh/"):
            expected = "index.html" if path == "zh/book/glossary.html" else path[len("zh/") :]
        else:
            expected = "zh/" + path
        targets = [urlparse(href).path.lstrip("/") for href in report.language_switches]
        if targets != [expected] or not (HTML / expected).is_file():
            wrong[path] = targets
    assert not wrong, f"language switches that miss the other edition's page: {wrong}"
