"""The printed book (``make pdf``), in each edition (English and Chinese): complete, with its
figures and its formulas typeset, and laid out as a book: a title page, a contents page whose
numbers are right, bookmarks, links that work offline, every solution printed under its title and
no on-screen control, each chapter on a new page, each figure on the page where its code ends, no
page left mostly empty, and code and tables at a size that can be read; every font embedded, the
Chinese edition's Chinese text set in an embedded CJK font and read back as the characters it
prints; and tagged for screen readers (a structure tree of headings, paragraphs, tables, links
and figures with their alt text, in the edition's language)."""

from __future__ import annotations

import itertools
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import yaml
from pdf_editions import CHINESE, Edition

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import book_folds  # noqa: E402 (tools/ is not a package; see sys.path above)
import pdf_layout  # noqa: E402
import pdf_pages  # noqa: E402
from colab_sync import VERSION, load_repository  # noqa: E402

#: The smallest text the book prints, formulas aside (MathJax sets sub- and superscripts smaller).
SMALLEST_PT = 8.5
#: Chinese characters and punctuation (CJK ideographs and symbols, full-width forms).
CJK = "\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
#: The fonts the Chinese edition may set its Chinese text in (tools/pdf_layout.py's CJK_FONTS),
#: as the PDF names them.
CJK_FONT = re.compile(r"WenQuanYi|Noto\s?Sans\s?(?:Mono\s?)?CJK|SourceHanSans|DroidSansFallback")


def _chapters(edition: Edition) -> list[Path]:
    """The edition's chapters, in order: its notebooks (and the Chinese glossary, a page of
    Markdown)."""
    toc = yaml.safe_load((edition.source / "_toc.yml").read_text(encoding="utf-8"))
    found = []
    for entry in toc["chapters"]:
        notebook = edition.source / f"{entry['file']}.ipynb"
        found.append(notebook if notebook.is_file() else notebook.with_suffix(".md"))
    return found


def _cells(notebook: Path) -> list[dict]:
    if notebook.suffix == ".md":
        return [{"cell_type": "markdown", "source": notebook.read_text(encoding="utf-8")}]
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _title(notebook: Path) -> str:
    """A chapter's title: its first Markdown heading."""
    for cell in _cells(notebook):
        source = _source(cell)
        found = re.search(r"^# (.+)$", source, re.M) if cell["cell_type"] == "markdown" else None
        if found:
            return found[1]
    raise AssertionError(f"{notebook.name} has no title")


def _words(text: str) -> str:
    # Titles may break across lines and carry Markdown or math; compare the plain words (each
    # Chinese character a word: the PDF's text may have a space or a line break between two).
    return " ".join(
        re.findall(
            r"[A-Za-z0-9]+|[\u3400-\u9fff\uf900-\ufaff]", unicodedata.normalize("NFKC", text)
        )
    )


def _starts_with(page_text: str, title: str) -> bool:
    return _words(page_text[:300]).startswith(_words(title)[:40])


def _chapter_pages(edition: Edition, outline) -> dict[str, int]:
    """Each chapter's title (as in its notebook) and the page its bookmark opens."""
    marks = {_words(mark.title): mark.page for mark in outline}
    return {title: marks.get(_words(title), 0) for title in map(_title, _chapters(edition))}


def _figure_cells(edition: Edition) -> int:
    """How many code cells of the edition's chapters print their code and draw a figure."""
    hidden = {"remove-input", "remove-cell", "remove-output"}
    return sum(
        cell["cell_type"] == "code"
        and not hidden & set(cell.get("metadata", {}).get("tags", []))
        and any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))
        for notebook in _chapters(edition)
        for cell in _cells(notebook)
    )


def _online(edition: Edition) -> str:
    """Where the edition is read online."""
    return load_repository(edition.source / "_config.yml").book_url + edition.online_path


def test_the_pdf_has_a_plausible_number_of_pages(reader) -> None:
    # 266 A4 pages (English) and 265 (Chinese) when this test was written; far fewer means
    # chapters went missing (e.g. the page printed as one screen), far more that the layout broke
    # (e.g. a page per code line).
    assert 120 <= len(reader.pages) <= 400, len(reader.pages)


def test_every_chapter_title_is_in_the_pdf(edition: Edition, pages_text: list[str]) -> None:
    text = _words(" ".join(pages_text))
    missing = [t for t in map(_title, _chapters(edition)) if _words(t) not in text]
    assert not missing, f"chapter titles not found in the PDF's text: {missing}"


def test_every_chapter_starts_on_a_new_page(edition: Edition, pages_text: list[str]) -> None:
    titles = map(_title, _chapters(edition))
    late = [t for t in titles if not any(_starts_with(p, t) for p in pages_text)]
    assert not late, f"chapters whose title does not open a page: {late}"


def test_the_first_page_is_a_title_page(edition: Edition, pages_text: list[str]) -> None:
    index = (edition.source / "book" / "index.md").read_text(encoding="utf-8")
    title = re.search(r"^# (.+)$", index, re.M)[1]
    subtitle = re.search(r"^\*(.+)\*$", index, re.M)[1]
    repository = load_repository(edition.source / "_config.yml")
    first = pages_text[0]
    lines = first.split("\n")
    assert _words(lines[0]) == _words(title), lines[:2]
    assert _words(subtitle) in _words(first), "the subtitle is not on the title page"
    line = re.search(edition.edition_line.format(version=re.escape(VERSION)), first)
    assert line, "the title page names no edition (package version) and build date"
    assert _online(edition) in first and repository.url in first, (
        "the title page does not say where the online book and the code live"
    )
    assert not re.search(r"(?m)^\s*1\s*$", first), "the title page has a page number"
    assert pages_text[1].lstrip().startswith(edition.contents), (
        "the contents do not follow the title"
    )


def _contents_pages(edition: Edition, outline) -> range:
    """The contents' pages: from the contents' bookmark to the next bookmark's page."""
    start = next((mark.page for mark in outline if mark.title == edition.contents), None)
    assert start, f"no {edition.contents!r} bookmark"
    return range(start, next(mark.page for mark in outline if mark.page > start))


def _contents(edition: Edition, reader, pages, outline) -> list[tuple[str, int, int]]:
    """The contents' entries, read through their links: the entry's text, the page number it
    prints at its end and the page its link opens."""
    names = pdf_pages.destination_pages(reader)
    entries = []
    for number in _contents_pages(edition, outline):
        height = float(reader.pages[number - 1].mediabox.height)
        for link in _links(reader.pages[number - 1]):
            if "/Dest" not in link:
                continue
            _, y0, _, y1 = (float(v) for v in link["/Rect"])
            top, bottom = ((height - y) / pdf_pages.PT_PER_MM for y in (max(y0, y1), min(y0, y1)))
            lines = pdf_pages.lines(pages[number - 1], top, bottom)
            text = "\n".join("".join(run.text for run in line) for line in lines)
            # The page number is right-aligned: nothing of the entry lies to its right.
            runs = [run for line in lines for run in line]
            last = max(runs, key=lambda run: run.left).text.strip() if runs else ""
            printed = int(last) if last.isdigit() else 0
            entries.append((text, printed, names.get(str(link["/Dest"]).lstrip("/"), 0)))
    return entries


def test_the_contents_give_the_page_of_every_chapter_and_numbered_section(
    edition: Edition, reader, pages, outline, pages_text: list[str]
) -> None:
    contents = _contents(edition, reader, pages, outline)
    chapters = _chapter_pages(edition, outline)
    wrong = {}
    for title, page in chapters.items():
        printed = [entry[1] for entry in contents if _words(entry[0]).startswith(_words(title))]
        if printed != [page] or not _starts_with(pages_text[page - 1], title):
            wrong[title] = (printed, page)
    assert not wrong, f"chapters whose contents entry is not the page they open: {wrong}"
    sections = [
        section
        for mark in outline
        for section in mark.children
        if pdf_pages.NUMBERED_SECTION.match(section.title)
    ]
    assert len(sections) >= 20, "the outline lists too few numbered sections"
    wrong_sections = []
    for section in sections:
        label = section.title.split()[0]
        printed = [e[1] for e in contents if e[0].startswith(label + " ")]
        heading = re.search(rf"(?m)^{re.escape(label)}\s", pages_text[section.page - 1])
        if printed != [section.page] or not heading:
            wrong_sections.append((section.title, printed, section.page))
    assert not wrong_sections, f"sections listed with another page: {wrong_sections[:5]}"


def test_the_contents_link_to_the_pages_they_print(
    edition: Edition, reader, pages, outline
) -> None:
    contents = _contents(edition, reader, pages, outline)
    numbered = [entry for entry in contents if entry[1]]
    assert len(numbered) >= 30, f"only {len(numbered)} contents entries with a page number"
    wrong = [entry for entry in numbered if entry[1] != entry[2]]
    assert not wrong, f"contents entries (text, page printed, page linked): {wrong[:5]}"


def test_the_outline_lists_every_chapter_and_its_sections(edition: Edition, outline) -> None:
    front = [mark.title for mark in outline[:2]]
    assert front == [edition.contents, edition.about], front
    titles = [_words(mark.title) for mark in outline]
    missing = [t for t in map(_title, _chapters(edition)) if _words(t) not in titles]
    assert not missing, f"chapters without a bookmark: {missing}"
    chapter_titles = [_words(t) for t in map(_title, _chapters(edition))]
    chapters = [mark for mark in outline if _words(mark.title) in chapter_titles]
    assert all(mark.children for mark in chapters), "a chapter's bookmark lists no section"
    pages = [mark.page for mark in outline]
    assert pages == sorted(pages), "bookmarks out of the book's order"


def _links(page) -> list:
    return [
        annotation.get_object()
        for annotation in page.get("/Annots") or []
        if annotation.get_object().get("/Subtype") == "/Link"
    ]


def test_links_work_offline(edition: Edition, reader) -> None:
    names = set(pdf_pages.destination_pages(reader))
    local, broken, uris = [], [], set()
    for number, page in enumerate(reader.pages, 1):
        for link in _links(page):
            action = link.get("/A") or {}
            if "/URI" in action:
                uri = str(action["/URI"])
                uris.add(uri)
                parsed = urlparse(uri)
                if (
                    parsed.scheme not in ("https", "http", "mailto")
                    or parsed.hostname in ("127.0.0.1", "localhost", "::1", "0.0.0.0")
                    or "/_images/" in parsed.path
                ):
                    local.append((number, uri))
            else:
                dest = link.get("/Dest", action.get("/D"))
                if isinstance(dest, str) and dest.lstrip("/") not in names:
                    broken.append((number, dest))
    assert not local, f"links to the local server, a figure or no address: {local[:5]}"
    assert not broken, f"links inside the PDF to no destination: {broken[:5]}"
    repository = load_repository(edition.source / "_config.yml")
    assert {_online(edition), repository.url} <= uris, "the title page's addresses are no links"


def test_no_on_screen_control_is_printed(pages_text: list[str]) -> None:
    text = "\n".join(pages_text)
    controls = re.findall(
        r"(?:Show|Hide) (?:code|solution|cell|output|source)[^\n]{0,20}|[▼▶►▸]|Copy to clipboard",
        text,
    )
    assert not controls, f"on-screen controls printed: {sorted(set(controls))[:5]}"


def test_every_solution_is_printed_under_its_title(
    edition: Edition, outline, pages_text: list[str]
) -> None:
    chapters = _chapter_pages(edition, outline)
    starts = [*sorted(chapters.values()), len(pages_text) + 1]
    missing, count = [], 0
    for notebook in _chapters(edition):
        start = chapters[_title(notebook)]
        end = starts[starts.index(start) + 1]
        text = "\n".join(pages_text[start - 1 : end - 1])
        for cell in _cells(notebook):
            if book_folds.solution_number(cell) is None:
                continue
            count += 1
            heading = _source(cell).split("\n", 1)[0].removeprefix("###").strip()
            # "解答 1": the PDF's text may have another space between a Chinese word and a digit.
            words = r"\s*".join(map(re.escape, heading.split()))
            if not re.search(rf"(?m)^{words}$", text):
                missing.append(f"{notebook.stem}: {heading}")
    assert count > 0, "no chapter has a solution"
    assert not missing, f"solutions not printed under their own title: {missing[:5]}"


#: The least a page before the last of a chapter is filled: blocks are kept whole up to 0.4 of a
#: page (tools/pdf_layout.py), so a page ends early by about that much at most; a figure (up to
#: 0.6 of a page) is printed on the page where its code ends, so a page may end earlier where the
#: next page's figure, with the last lines of its code, does not fit below its content.
#: (Before the figure rule, with 0.35 here: 4 English and 3 Chinese mid-chapter pages less than
#: half full, 3 of the English ones a code cell at a page's foot and its figure on the next;
#: after it, 1 and 4, each before a figure that cannot fit.)
MIN_FILL = 0.5


def _figures_placed(places: dict) -> int:
    """How many code cells with a figure the PDF names (tools/pdf_layout.py's FIGURE_CELL_IDS)."""
    figure = pdf_layout.FIGURE_CELL_IDS[2]
    return next(n for n in itertools.count() if figure.format(n + 1) not in places)


def _figure_that_cannot_fit(page: pdf_pages.Page, after: pdf_pages.Page, places: dict) -> bool:
    """Whether ``after`` (the next page) opens with a figure a code cell draws, alone or below
    only the last lines of that cell's code, taller than the space ``page`` leaves."""
    start, end, figure = pdf_layout.FIGURE_CELL_IDS
    on_next = [
        (places[figure.format(n)][1], n)
        for n in range(1, _figures_placed(places) + 1)
        if places[figure.format(n)][0] == after.number
    ]
    if not on_next or not after.images:
        return False
    n = min(on_next)[1]
    code_start, code_end = places[start.format(n)], places[end.format(n)]
    top = pdf_pages.MARGIN_TOP_MM + 1
    alone = places[figure.format(n)][1] <= top
    opens_page = code_start[0] < after.number or code_start[1] <= top
    below_code = code_end[0] == after.number and opens_page
    needed = min(after.images)[1] - pdf_pages.MARGIN_TOP_MM  # the page's top to the figure's foot
    return (alone or below_code) and needed > (1 - page.fill) * _area_mm()


def test_no_page_is_half_empty_but_before_a_chapter_or_a_figure_that_cannot_fit(
    reader, pages, outline
) -> None:
    # A page may end early where the next one opens a chapter (or the front matter's next part),
    # or a figure that cannot fit below its content; elsewhere a block kept whole left the page
    # mostly blank.
    opens = {mark.page for mark in outline}
    places = pdf_pages.destinations(reader)
    short = [
        (page.number, round(page.fill, 2))
        for page, after in itertools.pairwise(pages[1:])
        if page.fill < MIN_FILL
        and after.number not in opens
        and not _figure_that_cannot_fit(page, after, places)
    ]
    assert not short, f"pages less than {MIN_FILL:.0%} full (page, share): {short}"


def test_code_and_tables_are_printed_at_a_readable_size(pages) -> None:
    runs = [
        (page.number, run)
        for page in pages
        for run in page.runs
        if "MathJax" not in run.font and "FontAwesome" not in run.font
    ]
    code = [run for _, run in runs if "Mono" in run.font]
    assert sum(len(run.text) for run in code) > 10_000, "the PDF prints almost no code"
    small = sorted(
        {(number, run.font, round(run.size, 2)) for number, run in runs if run.size < SMALLEST_PT}
    )
    assert not small, f"text below {SMALLEST_PT} pt (page, font, size): {small[:8]}"


def test_every_figure_of_the_chapters_is_in_the_pdf(edition: Edition, reader) -> None:
    figures = sum(
        "image/png" in output.get("data", {})
        for notebook in _chapters(edition)
        for cell in _cells(notebook)
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


def _fonts(page) -> list:
    """The fonts a page uses: each simple or Type 3 font, and each composite (Type 0) font's
    descendant (the font its glyphs come from)."""
    fonts = []
    for font in (page.get("/Resources") or {}).get("/Font", {}).values():
        font = font.get_object()
        if font.get("/Subtype") == "/Type0":
            fonts.extend(descendant.get_object() for descendant in font["/DescendantFonts"])
        else:
            fonts.append(font)
    return fonts


def _embedded(font) -> bool:
    """Whether the PDF holds the font's glyphs: a font program (FontFile, FontFile2 or FontFile3)
    or, for a Type 3 font (MathJax's glyphs), their drawings."""
    if font.get("/Subtype") == "/Type3":
        return "/CharProcs" in font
    descriptor = (
        (font.get("/FontDescriptor") or {}).get_object() if font.get("/FontDescriptor") else {}
    )
    return any(key in descriptor for key in ("/FontFile", "/FontFile2", "/FontFile3"))


def test_every_font_is_embedded(reader) -> None:
    # A font the PDF only names is drawn with whatever font the reader's machine substitutes
    # (for Chinese, often none: empty boxes).
    missing = sorted(
        {
            (number, pdf_pages.font_name(font))
            for number, page in enumerate(reader.pages, 1)
            for font in _fonts(page)
            if not _embedded(font)
        }
    )
    assert not missing, f"fonts not embedded (page, font): {missing[:8]}"


@CHINESE
def test_the_chinese_text_is_set_in_an_embedded_cjk_font(reader, pages) -> None:
    cjk_fonts = {
        pdf_pages.font_name(font)
        for page in reader.pages
        for font in _fonts(page)
        if CJK_FONT.search(pdf_pages.font_name(font)) and _embedded(font)
    }
    assert cjk_fonts, "no CJK font (WenQuanYi Micro Hei, Noto Sans CJK) embedded"
    # Every Chinese character is drawn in the CJK font (a font without its glyph prints an
    # empty box, and its text reads back as something else or nothing).
    elsewhere = sorted(
        {
            (page.number, run.font)
            for page in pages
            for run in page.runs
            if re.search(f"[{CJK}]", run.text) and not CJK_FONT.search(run.font)
        }
    )
    assert not elsewhere, f"Chinese text in another font (page, font): {elsewhere[:8]}"


def _cjk_phrases(text: str) -> list[str]:
    """The runs of Chinese characters in ``text``, a line break between two of them removed (the
    PDF breaks lines where the source did not, and the other way round)."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(rf"(?<=[{CJK}])[ \t]*\n\s*(?=[{CJK}])", "", text)
    return re.findall(f"[{CJK}]+", text)


def _prose(notebook: Path) -> list[str]:
    """The Chinese phrases of a chapter's Markdown, as the PDF prints them: no math, no image (its
    alt text is not printed), no comment."""
    text = "\n".join(_source(cell) for cell in _cells(notebook) if cell["cell_type"] == "markdown")
    hidden = r"!\[[^\]]*\]\([^)]*\)|\$\$.*?\$\$|\$[^$\n]*\$|<!--.*?-->"
    return _cjk_phrases(re.sub(hidden, " ", text, flags=re.S))


@CHINESE
def test_the_chinese_prose_reads_back_as_written(edition: Edition, pages_text: list[str]) -> None:
    # The text a reader copies (or a search finds) is the characters printed: pypdf reads them
    # through the embedded font's map of glyphs to characters.
    assert not any("\ufffd" in text for text in pages_text), "characters read back as U+FFFD"
    text = "\n".join(_cjk_phrases("\n".join(pages_text)))
    assert "相对位置索引" in text, "the glossary's and chapter 2's term is not in the PDF's text"
    # Every character of the glossary's and chapter 2's prose is in the PDF's text, and most of
    # their phrases (a table's cells may interleave).
    for chapter in _chapters(edition):
        if chapter.stem not in ("glossary", "02_relative_index"):
            continue
        phrases = [phrase for phrase in _prose(chapter) if len(phrase) >= 4]
        unread = set("".join(phrases)) - set(text)
        assert not unread, f"{chapter.name}: characters not read back: {sorted(unread)[:20]}"
        found = [phrase for phrase in phrases if phrase in text]
        assert len(found) >= 0.9 * len(phrases), (
            f"{chapter.name}: {len(found)} of {len(phrases)} phrases read back, not "
            f"{sorted(set(phrases) - set(found))[:5]}"
        )


def _area_mm() -> float:
    """The height of a page's text area (mm)."""
    return pdf_pages.PAGE_HEIGHT_MM - pdf_pages.MARGIN_TOP_MM - pdf_pages.MARGIN_BOTTOM_MM


def _cell_height(n: int, places: dict, pages: list[pdf_pages.Page]) -> float:
    """How tall the Nth code cell with a figure is printed, from its first line of code to its
    figure's foot, across its pages (mm; the space left at a page's foot not counted)."""
    start, _, figure = pdf_layout.FIGURE_CELL_IDS
    (first, top), (last, figure_top) = places[start.format(n)], places[figure.format(n)]
    images = pages[last - 1].images
    foot = min((b for t, b in images if abs(t - figure_top) < 2), default=figure_top)
    if first == last:
        return foot - top
    top_margin = pdf_pages.MARGIN_TOP_MM
    between = sum((pages[k - 1].bottom or 0) - top_margin for k in range(first + 1, last))
    return (pages[first - 1].bottom or top) - top + between + foot - top_margin


def test_each_figure_is_printed_on_the_page_where_its_code_ends(
    edition: Edition, reader, pages
) -> None:
    # tools/pdf_layout.py names each figure cell's last line of code and its figure as
    # destinations (a cell too tall to keep whole breaks inside its code, never before its
    # figure); a page break between the two sends a reader back a page to see what drew it. A
    # cell taller than a page, code to figure, may print its figure a page on (Chromium does not
    # move the last lines of a cell's code that already broke across pages).
    places = pdf_pages.destinations(reader)
    _, end, figure = pdf_layout.FIGURE_CELL_IDS
    cells = _figures_placed(places)
    assert cells == _figure_cells(edition), (
        f"{cells} figure cells named in the PDF, {_figure_cells(edition)} in the chapters"
    )
    apart = [
        (code_end, figure_page, round(_cell_height(n, places, pages)))
        for n in range(1, cells + 1)
        for code_end, figure_page in [(places[end.format(n)][0], places[figure.format(n)][0])]
        if code_end != figure_page
    ]
    assert all(height > _area_mm() for *_, height in apart), (
        f"figures printed a page after their code (code's page, figure's, cell's height in mm): "
        f"{apart}"
    )


#: The advance of a character of DejaVu Sans Mono, the book's code font, in ems.
MONO_ADVANCE = 0.602


def _hyphen_after_a_space(line: list[pdf_pages.Run]) -> bool:
    """Whether the hyphen that ends ``line`` follows a space (a minus sign: "M - 1" wrapped after
    it wrapped at a space). pypdf does not always read the spaces of code, so the space is read
    from where the runs are drawn."""
    last = line[-1].text.rstrip()
    if last != "-" or len(line) < 2:
        return last.endswith(" -")
    before = line[-2]
    width = MONO_ADVANCE * before.size / pdf_pages.PT_PER_MM
    return line[-1].left - (before.left + len(before.text.rstrip()) * width) > width / 2


def test_code_and_output_never_wrap_after_a_hyphen_inside_a_word(pages) -> None:
    # A wrapped line of code or printed output continues indented under its own start
    # (_static/code-lines.js), and never after a word's hyphen: "--" above "config", "grid-" above
    # "cell:abs" read as two words, and as a different command. (26 such breaks in each edition
    # before tools/pdf_layout.py kept such words whole.)
    split = []
    for page in pages:
        lines = pdf_pages.lines(page, 0, pdf_pages.PAGE_HEIGHT_MM)
        for line, after in itertools.pairwise(lines):
            if not all("Mono" in run.font for run in line + after):
                continue
            text = "".join(run.text for run in line).rstrip()
            last = text.split()[-1] if text.split() else ""
            continued = after[0].left > line[0].left + 1  # the hanging indent of a wrapped line
            # "-" alone is a minus sign, three or more a rule line.
            if (
                continued
                and last.endswith("-")
                and not re.fullmatch(r"-|-{3,}", last)
                and not _hyphen_after_a_space(line)
            ):
                split.append((page.number, text[-30:], "".join(run.text for run in after)[:20]))
    assert not split, f"lines wrapped after a hyphen (page, line's end, next line): {split[:8]}"


def _structure(reader) -> list:
    """The elements of the PDF's structure tree (the tags a screen reader reads), in order."""
    tree = reader.trailer["/Root"].get("/StructTreeRoot")
    found: list = []
    pending = [tree.get_object().get("/K")] if tree else []
    while pending:
        kid = pending.pop()
        kid = kid.get_object() if hasattr(kid, "get_object") else kid
        if isinstance(kid, list):
            pending.extend(reversed(kid))
        elif isinstance(kid, dict) and "/S" in kid:  # not a marked-content or object reference
            found.append(kid)
            pending.append(kid.get("/K"))
    return found


def test_the_pdf_is_tagged_for_screen_readers(edition: Edition, reader, outline) -> None:
    root = reader.trailer["/Root"]
    assert "/StructTreeRoot" in root, "no structure tree: the PDF is untagged"
    assert (root.get("/MarkInfo") or {}).get("/Marked") == True, "not marked as tagged"  # noqa: E712 (a BooleanObject)
    assert root.get("/Lang") == edition.tag, f"/Lang {root.get('/Lang')!r}, not {edition.tag!r}"
    title = yaml.safe_load((edition.source / "_config.yml").read_text(encoding="utf-8"))["title"]
    assert (reader.metadata or {}).get("/Title") == title, "the document's title is not the book's"
    assert (root.get("/ViewerPreferences") or {}).get("/DisplayDocTitle") == True  # noqa: E712
    # Every page's content is in the tree (a page without /StructParents is read as untagged).
    loose = [n for n, page in enumerate(reader.pages, 1) if "/StructParents" not in page]
    assert not loose, f"pages outside the structure tree: {loose[:10]}"
    elements = _structure(reader)
    kinds = Counter(str(element["/S"]) for element in elements)
    headings = sum(kinds[f"/H{level}"] for level in range(1, 7))
    sections = sum(1 + len(mark.children) for mark in outline)
    assert headings >= sections, f"{headings} headings tagged for {sections} bookmarks"
    assert kinds["/P"] >= 500 and kinds["/Table"] >= 10 and kinds["/Link"] >= 100, kinds
    # Each of the chapters' figures is a Figure with its alt text (not the image's file name).
    alts = [str(e.get("/Alt", "")).strip() for e in elements if e["/S"] == "/Figure"]
    described = [a for a in alts if a and not re.search(r"\.(?:png|svg|jpe?g)$|_images/", a)]
    figures = sum(
        "image/png" in output.get("data", {})
        for notebook in _chapters(edition)
        for cell in _cells(notebook)
        for output in cell.get("outputs", [])
    )
    assert len(described) >= figures, (
        f"{len(described)} figures tagged with a description for {figures} figures; "
        f"alt texts: {sorted(set(alts) - set(described))[:5]}"
    )
