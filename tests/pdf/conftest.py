"""The PDF test reads ``_build/pdf/book.pdf`` and ``_build/pdf/book-zh.pdf`` (``make pdf`` builds
both editions, then runs this folder).

Every test here is marked ``browser`` and ``pdf``: it needs the PDFs that headless Chromium
printed, so ``make unit`` (``-m "not browser"``) leaves it out. A test that reads a PDF runs once
for each edition (``edition``: ``[english]`` and ``[chinese]`` in its name, so that ``-k chinese``
picks one); a test of the Chinese edition alone asks for it with ``CHINESE``
(``pdf_editions.py``, which also says where each PDF is: ``BOOK_PDF`` and ``BOOK_ZH_PDF``
override the paths). Each PDF's pages are read once (``tools/pdf_pages.py``: text,
the size and font of every piece of text, how far down each page its content reaches) and shared
by every test of that edition.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest
from pdf_editions import EDITIONS, Edition

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import pdf_pages  # noqa: E402 (tools/ is not a package; see sys.path above)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.pdf)


@pytest.fixture(scope="session", params=list(EDITIONS))
def edition(request) -> Edition:
    return EDITIONS[request.param]


@pytest.fixture(scope="session")
def reader(edition: Edition):
    import pypdf

    if not edition.pdf.is_file():
        pytest.fail(f"no PDF at {edition.pdf}: run `make pdf`")
    return pypdf.PdfReader(edition.pdf)


@pytest.fixture(scope="session")
def pages(reader) -> list[pdf_pages.Page]:
    return pdf_pages.read_pages(reader)


@pytest.fixture(scope="session")
def pages_text(pages) -> list[str]:
    """Each page's text without its page number, NFKC-normalised (Chromium writes ligatures
    such as 'ﬄ')."""
    return [unicodedata.normalize("NFKC", page.text) for page in pages]


@pytest.fixture(scope="session")
def outline(reader) -> list[pdf_pages.Bookmark]:
    return pdf_pages.outline(reader)
