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


#: Each edition's PDF, which the Pages workflow publishes at its root (`make pdf` writes it;
#: .github/workflows/pages.yml copies it there): linked from every page, absent from `make book`.
PUBLISHED_PDFS = {"book.pdf": "", "zh/book.pdf": "zh/"}


def test_every_page_links_its_editions_pdf(reports: dict[str, PageReport]) -> None:
    # _static/page-labels.js adds it to the header's download menu.
    pdfs = {edition: pdf for pdf, edition in PUBLISHED_PDFS.items()}
    missing = {
        path: [link for link in r.links if link.endswith(".pdf")]
        for path, r in reports.items()
        if path.startswith(("book/", "zh/book/"))
        and not any(urlparse(link).path.lstrip("/") == pdfs[edition(path)] for link in r.links)
    }
    assert not missing, "pages without a link to their edition's PDF (links to PDFs they have)"


def test_internal_links_resolve(reports: dict[str, PageReport]) -> None:
    broken = {}
    for path, report in reports.items():
        for href in report.links:
            url = urlparse(href)
            if url.hostname != "127.0.0.1":
                continue
            target = url.path.lstrip("/")
            target = target + "index.html" if target.endswith("/") or not target else target
            missing_page = not (HTML / target).is_file() and target not in PUBLISHED_PDFS
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


# The header's labels that stayed English in the Chinese edition (_static/page-labels.js).
_ENGLISH_LABELS = re.compile(
    r"^(Color mode|System Settings|Launch on Colab|Link to this heading|Toggle \w+ sidebar)$"
)


def test_the_chinese_editions_labels_are_chinese(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport]
) -> None:
    page = browser.context.new_page()
    page.goto(f"{base_url}zh/book/02_relative_index.html", wait_until="load")
    labels = page.evaluate(
        "() => Array.from(document.querySelectorAll('[title], [aria-label], [data-bs-title]'))"
        ".flatMap((el) => ['title', 'aria-label', 'data-bs-title']"
        ".map((a) => el.getAttribute(a)).filter(Boolean))"
    )
    page.close()
    english = sorted({label for label in labels if _ENGLISH_LABELS.match(label.strip())})
    assert not english, "labels of the Chinese edition's page still in English"


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


#: Terms of the Chinese edition's glossary (zh/book/glossary.md), each with a chapter whose prose
#: uses it (jieba's own dictionary cuts each into two-character parts).
GLOSSARY_SEARCHES = {
    "相对位置偏置": "zh/book/00_introduction.html",
    "相对位置索引": "zh/book/02_relative_index.html",
    "循环移位": "zh/book/04_windows_to_swin.html",
}


def test_chinese_search_finds_the_glossarys_terms_as_words(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport]
) -> None:
    # tools/zh_search.py puts the glossary's terms into the indexer's dictionary: a term is
    # indexed whole beside its parts, and the search page looks a query up as one word.
    if "zh/book/glossary.html" not in reports:
        pytest.skip("the Chinese edition is not built")
    missing = {}
    page = browser.context.new_page()
    for term, chapter in GLOSSARY_SEARCHES.items():
        page.goto(f"{base_url}zh/search.html?q={quote(term)}", wait_until="load")
        try:
            page.wait_for_function(
                "(target) => Array.from(document.querySelectorAll('#search-results a'))"
                ".some((a) => a.href.split('#')[0].endsWith(target))",
                arg=chapter,
                timeout=15_000,
            )
        except Exception:  # a timeout: say what the search did return
            found = page.eval_on_selector_all("#search-results a", "(as) => as.map((a) => a.href)")
            missing[term] = found
    page.close()
    assert not missing, "glossary terms whose chapter the Chinese search does not find"


# The page's layout final: formulas typeset, every image loaded (lazy ones made eager), so that a
# scroll lands where it aims.
_SETTLED = """
async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener("load", done);
    img.addEventListener("error", done);
    setTimeout(done, 5000);
  })));
}
"""

# The heading of the section the page was opened at (its address's #id), e.g. "2.10 ...".
_OPENED_AT = """
() => {
  const id = decodeURIComponent(window.location.hash.slice(1));
  const target = id && document.getElementById(id);
  const heading = target && target.querySelector("h1, h2, h3, h4");
  return heading ? heading.textContent.trim() : null;
}
"""


@pytest.mark.parametrize(
    ("start", "how"),
    [("book/02_relative_index.html", "scrolled"), ("zh/book/02_relative_index.html", "linked")],
)
def test_the_language_switch_keeps_the_readers_section(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport], start: str, how: str
) -> None:
    # _static/language-switch.js opens the other edition at the section the reader is in: the
    # one the address names, else the one scrolled to. Section 2.10 is deep in chapter 2.
    if start not in reports:
        pytest.skip(f"{start} is not built")
    page = browser.context.new_page()
    page.goto(base_url + start, wait_until="load")
    page.evaluate(_SETTLED)
    section = page.evaluate(
        "() => Array.from(document.querySelectorAll('article section[id]'))"
        ".find((s) => /^2\\.10\\s/.test(s.querySelector('h2')?.textContent || '')).id"
    )
    if how == "linked":
        page.goto(f"{base_url}{start}#{section}", wait_until="load")
    else:
        page.evaluate(
            "(id) => { document.getElementById(id).scrollIntoView({behavior: 'instant'});"
            " window.scrollBy({top: 100, behavior: 'instant'}); }",
            section,
        )
    with page.expect_navigation():  # a click where the reader is (no scrolling to the link)
        page.evaluate("() => document.querySelector('a.book-language-switch').click()")
    page.wait_for_load_state("load")
    heading = page.evaluate(_OPENED_AT)
    other = page.url.split("#")[0]
    page.close()
    assert other.endswith(start.removeprefix("zh/") if start.startswith("zh/") else "zh/" + start)
    assert heading is not None and heading.startswith("2.10"), (page.url, heading)


#: Words of the explorers' English labels (companion/figures/widgets.py, assets/explorer.js).
_EXPLORER_ENGLISH = re.compile(
    r"Relative position|window rows|window columns|query row|query column|step \d|row part|"
    r"outlined|bias added|Cosine similarity|cosine similarity|of the \d+×\d+|Static figure|\bhead\b"
)


@pytest.mark.parametrize("path", ["zh/book/02_relative_index.html", "zh/book/03_bias_lookup.html"])
def test_the_chinese_editions_explorers_speak_chinese_after_a_move(
    browser: OfflineBrowser, base_url: str, reports: dict[str, PageReport], path: str
) -> None:
    # _static/page-labels.js translates each explorer's texts and labels, and each redraw.
    if path not in reports:
        pytest.skip(f"{path} is not built")
    page = browser.context.new_page()
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("() => document.querySelector('.cx-explorer.cx-is-live') !== null")
    slider = page.locator(".cx-explorer input[type=range]").first
    slider.focus()
    slider.press("ArrowRight")
    texts = page.evaluate(
        "() => Array.from(document.querySelectorAll('.cx-explorer')).flatMap((root) => {"
        " const found = [];"
        " const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);"
        " for (let n = walker.nextNode(); n; n = walker.nextNode()) {"
        "   if (!n.parentElement.closest('script, style') && n.textContent.trim())"
        "     found.push(n.textContent.trim()); }"
        " root.querySelectorAll('[aria-label]').forEach((el) =>"
        "   found.push(el.getAttribute('aria-label')));"
        " return found; })"
    )
    page.close()
    english = sorted({t for t in texts if _EXPLORER_ENGLISH.search(t)})
    assert texts, "no explorer text found"
    assert not english, "explorer labels still in English in the Chinese edition"
