"""The printed book's page geometry, and what its pages hold, read back from the PDF with pypdf.

``tools/book_pdf.py`` prints the book on this geometry (its ``@page`` rule is written from the
constants below) and reads the first print back to number the contents page; ``tests/pdf``
reads the final PDF with the same functions: where each page's content ends (text and
images), the size of every piece of text and the font it is set in, where each named
destination and each outline entry lands.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

#: A4, in millimetres, and the margins of every page; the page number sits in the bottom margin.
PAGE_WIDTH_MM = 210.0
PAGE_HEIGHT_MM = 297.0
MARGIN_TOP_MM = 16.0
MARGIN_BOTTOM_MM = 18.0
MARGIN_SIDE_MM = 16.0

PT_PER_MM = 72 / 25.4
PX_PER_MM = 96 / 25.4
#: The printed text area in CSS pixels (Chromium lays the page out at 96 px to the inch).
CONTENT_WIDTH_PX = (PAGE_WIDTH_MM - 2 * MARGIN_SIDE_MM) * PX_PER_MM
CONTENT_HEIGHT_PX = (PAGE_HEIGHT_MM - MARGIN_TOP_MM - MARGIN_BOTTOM_MM) * PX_PER_MM

#: A section numbered as the book numbers them: "1.3 Title", "A.2 Title".
NUMBERED_SECTION = re.compile(r"^(?:\d+|[A-Z])\.\d+\s")


@dataclass
class Run:
    """A piece of text as the PDF draws it: its font, its size in points and where it starts."""

    text: str
    font: str
    size: float
    top: float  # the baseline, in millimetres from the page's top edge
    left: float  # millimetres from the page's left edge


@dataclass
class Page:
    """One page: its text, the text's runs, and the vertical extent of what it shows."""

    number: int  # 1-based, as printed at its foot
    text: str = ""  # without the page number
    runs: list[Run] = field(default_factory=list)
    #: Millimetres from the page's top edge to the highest and lowest text or image drawn in the
    #: text area (None on an empty page); the page number below the text area is left out.
    top: float | None = None
    bottom: float | None = None
    #: Each image drawn in the text area: millimetres from the page's top edge to its top and its
    #: bottom.
    images: list[tuple[float, float]] = field(default_factory=list)

    @property
    def fill(self) -> float:
        """How far down the text area the page's content reaches, 0 (empty) to 1 (full)."""
        if self.bottom is None:
            return 0.0
        area = PAGE_HEIGHT_MM - MARGIN_TOP_MM - MARGIN_BOTTOM_MM
        return min(1.0, max(0.0, (self.bottom - MARGIN_TOP_MM) / area))


def _product(a: list[float], b: list[float]) -> list[float]:
    """The PDF matrix product ``a x b`` (six numbers each)."""
    return [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    ]


def font_name(font: Any) -> str:
    if not font:
        return ""
    name = str(font.get("/BaseFont", ""))
    descriptor = font.get("/FontDescriptor")
    if not name and descriptor:
        name = str(descriptor.get_object().get("/FontName", ""))
    return name.split("+", 1)[-1].lstrip("/")


def read_page(page: Any, number: int) -> Page:
    """Text, runs and extent of one pypdf page."""
    height_pt = float(page.mediabox.height)
    limit = PAGE_HEIGHT_MM - MARGIN_BOTTOM_MM  # below this: the page number
    result = Page(number)
    images = {
        name
        for name, xobject in (page.get("/Resources") or {}).get("/XObject", {}).items()
        if xobject.get_object().get("/Subtype") == "/Image"
    }
    extent: list[float] = []

    def text_run(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if not text.strip():
            return
        matrix = _product(tm, cm)
        top = (height_pt - matrix[5]) / PT_PER_MM
        scale = math.hypot(matrix[2], matrix[3])
        left = matrix[4] / PT_PER_MM
        result.runs.append(Run(text, font_name(font), size * scale, top, left))
        if top <= limit:
            extent.append(top)

    def operator(op: bytes, args: list[Any], cm: list[float], tm: list[float]) -> None:
        if op == b"Do" and args and args[0] in images:
            edges = sorted((height_pt - y) / PT_PER_MM for y in (cm[5], cm[5] + cm[3] + cm[1]))
            inside = [top for top in edges if MARGIN_TOP_MM - 1 <= top <= limit + 1]
            extent.extend(inside)
            if len(inside) == 2:
                result.images.append((edges[0], edges[1]))

    text = page.extract_text(visitor_text=text_run, visitor_operand_before=operator) or ""
    # The page number, drawn in the bottom margin, comes first or last in the text.
    lines = text.split("\n")
    if lines and lines[0].strip() == str(number):
        lines = lines[1:]
    elif lines and lines[-1].strip() == str(number):
        lines = lines[:-1]
    result.text = "\n".join(lines)
    if extent:
        result.top, result.bottom = min(extent), max(extent)
    return result


def read_pages(reader: Any) -> list[Page]:
    """Every page of a ``pypdf.PdfReader``."""
    return [read_page(page, i + 1) for i, page in enumerate(reader.pages)]


def lines(page: Page, top: float, bottom: float) -> list[list[Run]]:
    """The runs of ``page`` whose baselines lie between ``top`` and ``bottom`` (millimetres from
    the page's top edge), line by line, each line left to right (a sub- or superscript, or inline
    code set a little lower, counts with its line)."""
    runs = sorted((run for run in page.runs if top <= run.top <= bottom), key=lambda run: run.top)
    found: list[list[Run]] = []
    for run in runs:
        if found and run.top - found[-1][0].top < 1.5:
            found[-1].append(run)
        else:
            found.append([run])
    return [sorted(line, key=lambda run: run.left) for line in found]


def destination_pages(reader: Any) -> dict[str, int]:
    """Each named destination (an element id the book links to) and its 1-based page."""
    return {
        str(name).lstrip("/"): reader.get_destination_page_number(dest) + 1
        for name, dest in reader.named_destinations.items()
    }


def destinations(reader: Any) -> dict[str, tuple[int, float]]:
    """Each named destination, its 1-based page and how far below the page's top edge its
    element's top lies (millimetres)."""
    found = {}
    for name, dest in reader.named_destinations.items():
        number = reader.get_destination_page_number(dest)
        height_pt = float(reader.pages[number].mediabox.height)
        # Chromium places a destination as far below the page's top edge as its element lies
        # below the top of the text area (an element that opens a page: at the very top).
        top = (height_pt - float(dest.top or height_pt)) / PT_PER_MM + MARGIN_TOP_MM
        found[str(name).lstrip("/")] = (number + 1, top)
    return found


@dataclass
class Bookmark:
    """An entry of the PDF's outline (bookmarks): its title, page and the entries under it."""

    title: str
    page: int
    children: list[Bookmark] = field(default_factory=list)


def outline(reader: Any) -> list[Bookmark]:
    """The PDF's outline as a tree (pypdf lists an entry's children right after it)."""

    def build(items: list[Any]) -> list[Bookmark]:
        marks: list[Bookmark] = []
        for item in items:
            if isinstance(item, list):
                if marks:
                    marks[-1].children.extend(build(item))
                continue
            marks.append(Bookmark(str(item.title), reader.get_destination_page_number(item) + 1))
        return marks

    return build(reader.outline)
