"""The PDF test reads ``_build/pdf/book.pdf`` (``make pdf`` builds it, then runs this folder).

Every test here is marked ``browser`` and ``pdf``: it needs the PDF that headless Chromium
printed, so ``make unit`` (``-m "not browser"``) leaves it out. ``BOOK_PDF`` overrides the path.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PDF = Path(os.environ.get("BOOK_PDF", ROOT / "_build" / "pdf" / "book.pdf"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.pdf)


@pytest.fixture(scope="session")
def reader():
    import pypdf

    if not PDF.is_file():
        pytest.fail(f"no PDF at {PDF}: run `make pdf`")
    return pypdf.PdfReader(PDF)


@pytest.fixture(scope="session")
def pages_text(reader) -> list[str]:
    """Each page's text, NFKC-normalised (Chromium writes ligatures such as 'ﬄ')."""
    return [unicodedata.normalize("NFKC", page.extract_text() or "") for page in reader.pages]
