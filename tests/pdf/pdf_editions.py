"""The book's two editions, as ``tests/pdf`` reads their PDFs: where each PDF is, the Jupyter Book
project it is printed from, and what its own text (title page, contents, bookmarks) says."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Edition:
    """One edition's PDF, the Jupyter Book project it is printed from, and what the PDF's own
    text (title page, contents, bookmarks) says in its language."""

    lang: str
    #: The language the PDF declares for itself and its structure tree (``/Lang``).
    tag: str
    pdf: Path
    source: Path  # the project's folder: _config.yml, _toc.yml, book/
    contents: str
    about: str
    #: The title page's edition line, as read back (NFKC: "，" reads ","): ``{version}`` is the
    #: release, the one group the build date.
    edition_line: str
    #: Where this edition is published, under the online book's address.
    online_path: str


EDITIONS = {
    "english": Edition(
        lang="en",
        tag="en",
        pdf=Path(os.environ.get("BOOK_PDF", ROOT / "_build" / "pdf" / "book.pdf")),
        source=ROOT,
        contents="Contents",
        about="About this book",
        edition_line=r"Edition {version}, built (\d{{4}}-\d\d-\d\d)",
        online_path="",
    ),
    "chinese": Edition(
        lang="zh",
        tag="zh-CN",
        pdf=Path(os.environ.get("BOOK_ZH_PDF", ROOT / "_build" / "pdf" / "book-zh.pdf")),
        source=ROOT / "zh",
        contents="目录",
        about="关于本书",
        edition_line=r"版本\s*{version}\s*[，,]\s*构建于\s*(\d{{4}}-\d\d-\d\d)",
        online_path="zh/",
    ),
}

#: Mark a test of the Chinese edition alone: ``@CHINESE`` (it still asks for ``edition`` or a
#: fixture that does).
CHINESE = pytest.mark.parametrize("edition", ["chinese"], indirect=True)
