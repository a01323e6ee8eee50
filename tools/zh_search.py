"""A Sphinx extension of the Chinese edition: its search finds the glossary's terms as words.

Sphinx's Chinese indexer (``sphinx.search.zh``) cuts the text into words with jieba, whose own
dictionary splits the book's terms into their parts: 相对位置偏置 (relative position bias) was
indexed as 相对, 位置 and 偏置, never as itself. The search page looks a query up as one word
(searchtools.js splits a query only at spaces and punctuation), so searching the edition for its
own glossary term found no page while 偏置 found ten. Here every Chinese term of the glossary
(``zh/book/glossary.md``, the table's second column) goes into a jieba user dictionary, which
Sphinx loads through ``html_search_options["dict"]``; ``cut_for_search`` then yields the whole
term beside its parts, so the term and each part are found. Loaded by ``zh/_config.yml``; the
browser test (``tests/browser/test_book.py``) searches the built edition for glossary terms.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

_CHINESE = re.compile(r"[\u4e00-\u9fff]{2,}")


def glossary_terms(glossary: str) -> list[str]:
    """The Chinese terms of the glossary's table (its second column): every run of two or more
    Chinese characters in it, e.g. ``网格坐标（meshgrid）`` -> ``["网格坐标"]``."""
    terms: list[str] = []
    in_body = False  # a table's rows after its header's |---| line
    for line in glossary.splitlines():
        if not line.lstrip().startswith("|"):
            in_body = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
            in_body = True
        elif in_body and len(cells) >= 2:
            terms += [t for t in _CHINESE.findall(cells[1]) if t not in terms]
    return terms


def _search_dictionary(app: Sphinx, config: Any) -> None:
    glossary = Path(app.srcdir) / "book" / "glossary.md"
    if not glossary.is_file():
        return
    terms = glossary_terms(glossary.read_text(encoding="utf-8"))
    path = Path(app.doctreedir) / "search-terms.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{term}\n" for term in terms), encoding="utf-8")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path)}


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _search_dictionary)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
