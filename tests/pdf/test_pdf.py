"""The printed book (``make pdf``): complete, with its figures, and its formulas typeset."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _chapters() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [ROOT / f"{entry['file']}.ipynb" for entry in toc["chapters"]]


def _title(notebook: Path) -> str:
    """A chapter's title: its first Markdown heading."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        found = re.search(r"^# (.+)$", source, re.M) if cell["cell_type"] == "markdown" else None
        if found:
            return found[1]
    raise AssertionError(f"{notebook.name} has no title")


def _words(text: str) -> str:
    # Titles may break across lines and carry Markdown or math; compare the plain words.
    return " ".join(re.findall(r"[A-Za-z0-9]+", unicodedata.normalize("NFKC", text)))


def test_the_pdf_has_a_plausible_number_of_pages(reader) -> None:
    # 206 A4 pages when this test was written; far fewer means chapters went missing (e.g. the
    # page printed as one screen), far more that the layout broke (e.g. a page per code line).
    assert 120 <= len(reader.pages) <= 400, len(reader.pages)


def test_every_chapter_title_is_in_the_pdf(pages_text: list[str]) -> None:
    text = _words(" ".join(pages_text))
    missing = [t for t in map(_title, _chapters()) if _words(t) not in text]
    assert not missing, "chapter titles not found in the PDF's text"


def test_every_chapter_starts_on_a_new_page(pages_text: list[str]) -> None:
    tops = [_words(page[:200]) for page in pages_text]
    late = [
        t
        for t in map(_title, _chapters())
        if not any(top.startswith(_words(t)[:40]) for top in tops)
    ]
    assert not late, "chapters whose title does not open a page"


def test_every_figure_of_the_chapters_is_in_the_pdf(reader) -> None:
    figures = sum(
        "image/png" in output.get("data", {})
        for notebook in _chapters()
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for output in cell.get("outputs", [])
    )
    images = sum(
        xobject.get_object().get("/Subtype") == "/Image"
        for page in reader.pages
        for xobject in page.get("/Resources", {}).get("/XObject", {}).values()
    )
    assert figures > 0 and images >= figures, f"{images} images for {figures} figures"


def test_formulas_are_typeset_not_raw_tex(reader, pages_text: list[str]) -> None:
    text = "\n".join(pages_text)
    raw = re.findall(
        r"\\(?:frac|mathrm|sqrt|top|begin|left|right|cdot)\b|\$[^$\s][^$\n]{0,60}\$", text
    )
    assert not raw, f"TeX left as text: {raw[:5]}"
    # MathJax's glyphs are embedded as its own fonts: the formulas were drawn as math.
    with_math = [
        i
        for i, page in enumerate(reader.pages)
        if any(
            "MathJax" in str((font.get_object().get("/FontDescriptor") or {}).get("/FontName"))
            for font in page.get("/Resources", {}).get("/Font", {}).values()
        )
    ]
    assert len(with_math) >= 50, f"only {len(with_math)} pages draw a formula with MathJax's fonts"


def test_folded_solutions_are_printed_open(pages_text: list[str]) -> None:
    # A hidden cell prints its prompt either way: "Show solution N..." while folded, "Hide
    # solution N" once opened (tools/book_pdf.py opens every fold before printing).
    prompts = [
        cell["metadata"]["mystnb"]["code_prompt_hide"]
        for notebook in _chapters()
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if "code_prompt_hide" in cell.get("metadata", {}).get("mystnb", {})
    ]
    text = " ".join(pages_text)
    assert prompts and "Show solution" not in text, "solutions printed folded"
    missing = [p for p in prompts if p not in text]
    assert not missing, "opened solutions missing from the PDF"
