"""The explorers on the built book's pages: live with no kernel, redrawn when a reader moves them.

For every chapter whose notebook shows explorers, the page is loaded offline (the ``browser``
fixture blocks every host but 127.0.0.1); each explorer must have turned live, and moving its last
slider with the keyboard must redraw its figure. Screenshots of each explorer before and after go
to ``_build/screenshots/explorer_<page>_<n>_{before,after}.png``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from book_browser import BOOK_ROOT, EDITIONS, SCREENSHOTS, OfflineBrowser, edition, html_pages
from explorer_browser import read, values

from companion.figures.explorers import relative_index_view


def _explorer_calls(page: str) -> int:
    """How many explorers the page's notebook shows (its ``show_explorer(`` calls)."""
    notebook = (BOOK_ROOT / page).with_suffix(".ipynb")
    if not notebook.is_file():
        return 0
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return sum(
        "".join(c["source"]).count("show_explorer(") for c in cells if c["cell_type"] == "code"
    )


def _pages(editions: tuple[str, ...] = EDITIONS) -> list[str]:
    return [p for p in html_pages() if edition(p) in editions and _explorer_calls(p)]


#: The pages whose explorers are driven in the browser: the English edition's. The Chinese
#: edition's chapters hold the same outputs byte for byte (tools/zh_edition.py), so the same
#: explorers; test_the_chapters_show_their_explorers checks that they are there.
DRIVEN = _pages(("",))


def _open(browser: OfflineBrowser, url: str, width: int = 1280) -> tuple[Any, list[str]]:
    page = browser.context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(url, wait_until="load")
    return page, errors


def _live_roots(page: Any, expected: int) -> list[Any]:
    page.wait_for_function(
        "(n) => document.querySelectorAll('.cx-explorer.cx-is-live').length >= n",
        arg=expected,
        timeout=15_000,
    )
    return page.query_selector_all(".cx-explorer")


def test_the_chapters_show_their_explorers(book_html: Path) -> None:
    pages = _pages()
    if not pages:
        pytest.skip("no built chapter shows an explorer")
    for page in pages:
        html = (book_html / page).read_text(encoding="utf-8")
        assert html.count('<div class="cx-explorer">') == _explorer_calls(page), page


@pytest.mark.parametrize("path", DRIVEN)
def test_moving_a_slider_on_the_built_page_redraws_the_figure(
    browser: OfflineBrowser, base_url: str, path: str
) -> None:
    page, errors = _open(browser, base_url + path)
    roots = _live_roots(page, _explorer_calls(path))
    stem = Path(path).stem
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for n, root in enumerate(roots):
        root.scroll_into_view_if_needed()
        before = read(root)
        root.screenshot(path=str(SCREENSHOTS / f"explorer_{stem}_{n}_before.png"))
        # The reader tabs to the last slider (a query or patch column) and presses an arrow key.
        slider = root.query_selector_all("input[type=range]")[-1]
        slider.focus()
        at_top = slider.evaluate("(s) => s.value === s.max")
        page.keyboard.press("ArrowLeft" if at_top else "ArrowRight")
        after = read(root)
        root.screenshot(path=str(SCREENSHOTS / f"explorer_{stem}_{n}_after.png"))
        name = slider.get_attribute("name")
        assert after["state"][name] == before["state"][name] + (-1 if at_top else 1)
        assert after["panels"] != before["panels"], f"{path}: explorer {n} did not redraw"
        if "index" in after["panels"]:  # chapter 2: the numbers are companion's
            state = after["state"]
            view = relative_index_view((state["wh"], state["ww"]), (state["row"], state["col"]))
            assert values(after["panels"]["index"]) == view.index.tolist()
    page.close()
    assert not [e for e in errors if "explorer" in e], errors


@pytest.mark.parametrize("path", DRIVEN)
def test_the_explorers_fit_a_390_px_phone(
    browser: OfflineBrowser, base_url: str, path: str
) -> None:
    page, _ = _open(browser, base_url + path, width=390)
    for root in _live_roots(page, _explorer_calls(path)):
        overflow = root.evaluate(
            "(r) => Array.from(r.querySelectorAll('.cx-panel, .cx-control'))"
            ".map((e) => e.getBoundingClientRect().right).filter((x) => x > 390.5)"
        )
        assert overflow == [], f"{path}: explorer parts beyond the screen's right edge"
    page.close()
