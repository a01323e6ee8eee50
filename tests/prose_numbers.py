"""Every number a chapter's prose writes, and where it may come from (tests/test_prose_numbers.py).

A number in the prose (Markdown cells, inline math and the alt texts of figures included) is
*traced* when it matches, at the prose's own precision, a number of

- an output of the same chapter (printed text, a displayed table, a listing ``show_source``
  prints), or a code cell's source (a constant of code the chapter shows);
- a published table the package keeps (``companion/experiments/paper.py``);
- the exemption list of the test, each entry with its category.

"At the prose's precision": ``0.04`` is matched by a printed ``0.04`` or ``0.036`` (one decimal
more, rounded to the prose's two), not by a printed ``0.1`` (fewer decimals than the prose
claims) nor by a printed ``0.0361`` (another quantity, printed finer); ``45 %`` is matched by a
printed ``0.453``; signs are not compared (prose says "falls by 0.10" of a printed ``-0.102``).

Not quantities, so not read: numbers that are part of a name (``CIFAR-10``, ``ViT-B/16``,
``float32``, ``V6``), references (chapter, section, exercise, solution, table, figure, appendix,
step and page numbers), list and heading numbers, link targets, inline code (``code spans`` are
code, checked where that code runs), years (1900-2099), and integers up to 12 (small counts the
text defines: "two stages", "3 x 3 windows", which every chapter prints many times over).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER_TABLES = ROOT / "companion" / "experiments" / "paper.py"

#: A number: 1,234,567.89 (thousands with commas), 0.036, 12, .5 is not written in this book.
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_REFERENCE_WORDS = (
    r"chapters?|sections?|§|exercises?|solutions?|tables?|figures?|fig\.|appendix|steps?|"
    r"pages?|pp?\.|eq\.|equations?|lines?|issue|python|torch|numpy|timm|ipywidgets|"
    r"arxiv:|cvpr|iclr|iccv|neurips|eccv|icml|row|column|stage|block|head|epoch|seed|seeds"
)
#: A reference word followed by one number or a list of them ("chapters 0, 1 and 3", "§4.2").
_REFERENCE = re.compile(
    rf"(?:\b(?i:{_REFERENCE_WORDS})|§)\s*~?\s*[A-Z]?\d+(?:\.\d+)*[a-z]?(?![\d])"
    r"(?:(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*|\s+to\s+)§?\d{1,2}(?:\.\d{1,2})?(?![\d]))*"
)


@dataclass(frozen=True)
class ProseNumber:
    """One number of the prose: its text as written (``"0.06"``, ``"23,322"``), its value, its
    decimals, whether a percent sign follows, the cell it is in and the words around it."""

    text: str
    value: Decimal
    decimals: int
    percent: bool
    cell: int
    where: str
    context: str
    power: int | None = None  # "5.96 \\times 10^{-8}": the power of ten, the text the mantissa


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def cells(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["cells"]


def _strip_markdown(text: str) -> str:
    """The prose of a Markdown cell with what is not prose blanked out (same length kept not
    needed: only the words around a number are reported)."""
    kept = []
    fence = None
    for line in text.splitlines():
        marker = re.match(r"\s*(`{3,}|:{3,})", line)
        if marker:
            if fence is None:
                fence = marker.group(1)
                if line.strip().startswith(":::") or "{" in line:
                    # a MyST directive: its body is prose (a note, an admonition) unless code
                    fence = fence if "code" in line or line.strip() == fence else "prose:" + fence
                continue
            if marker.group(1).startswith(fence.removeprefix("prose:")):
                fence = None
                continue
        if fence is not None and not fence.startswith("prose:"):
            continue
        if re.match(r"\s*:\w+:", line):  # a directive's option line (":class: note")
            continue
        line = re.sub(r"^\s*#{1,6}\s+(?:Appendix\s+)?[0-9A-Z](?:\.\d+)*\.?\s", "", line)
        line = re.sub(r"^\s*#{1,6}\s+Solution\s+\d+", "", line)
        line = re.sub(r"^\s*\d+\.\s", "", line)  # a numbered list item
        kept.append(line)
    prose = "\n".join(kept)
    prose = re.sub(r"`[^`\n]*`", " ", prose)  # inline code
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    prose = re.sub(r"<[^>\n]*>", " ", prose)  # HTML tags
    prose = re.sub(r"\{\w+\}`[^`]*`", " ", prose)  # roles: {ref}`...`, {doc}`...`
    return prose


def _strip_math(text: str) -> str:
    """LaTeX written as prose: ``\\times`` between numbers, ``\\,`` thin spaces, braces."""
    text = re.sub(r"\\(?:times|cdot|approx|le|ge|lt|gt|pm|mp|to|quad|,|;|!|\s)", " ", text)
    text = re.sub(r"\\(?:mathrm|text|operatorname|mathbf|mathit)\{([^}]*)\}", r" \1 ", text)
    text = re.sub(r"\\[A-Za-z]+", " ", text)
    return text.replace("{", " ").replace("}", " ").replace("^", " ^ ").replace("_", " _ ")


def numbers_in(text: str, cell: int, where: str) -> Iterator[ProseNumber]:
    """The numbers of a piece of prose that are quantities (see the module's docstring)."""
    text = _strip_math(text.replace("\u2212", "-").replace("\u00a0", " ").replace("\u202f", " "))
    text = _REFERENCE.sub(lambda m: " " * len(m.group(0)), text)
    skip_to = 0
    for m in _NUMBER.finditer(text):
        start, end = m.span()
        power = re.match(r"\s+10\s*\^\s*(-?\d+)", text[end:])
        if power:  # "5.96 \times 10^{-8}": one number, its decimals those of the value
            mantissa = Decimal(m.group(0).replace(",", ""))
            value = mantissa.scaleb(int(power.group(1)))
            decimals = max(0, -value.as_tuple().exponent)  # type: ignore[operator]
            context = " ".join(text[max(0, start - 40) : end + 30].split())
            skip_to = end + power.end()
            power_of_ten = int(power.group(1))
            yield ProseNumber(
                m.group(0), value, decimals, False, cell, where, context, power_of_ten
            )
            continue
        if start < skip_to:
            continue
        before = text[max(0, start - 2) : start]
        after = text[end : end + 2]
        if before[-1:].isalpha() or before[-1:] in ("_", "."):  # float32, V6, sm_75, .5
            continue
        if before[-1:] in ("-", "/") and before[:1].isalpha():  # CIFAR-10, B/16
            continue
        if after[:1].isalpha() and not after.startswith(("x", "×")):  # 2D, 22K, 1st
            continue
        if after[:1] == "-" and after[1:2].isalpha() and after[1:2].isupper():  # 1-D, 2-D
            continue
        if re.search(r"\^\s*-?\s*$", text[max(0, start - 6) : start]):
            continue  # an exponent: 2^{-24} is written as a power of two, not as 24
        digits = m.group(0).replace(",", "")
        value = Decimal(digits)
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        if decimals == 0 and (value <= 12 or 1900 <= value <= 2099):
            continue  # a small count the text defines, or a year
        percent = bool(re.match(r"\s?(?:%|\\%|per ?cent)", text[end : end + 8]))
        context = " ".join(text[max(0, start - 40) : end + 30].split())
        yield ProseNumber(m.group(0), value, decimals, percent, cell, where, context)


def prose_numbers(chapter: list[dict]) -> list[ProseNumber]:
    """Every quantity written in a chapter's Markdown cells and figure alt texts."""
    found = []
    for i, cell in enumerate(chapter):
        if cell["cell_type"] == "markdown":
            found += numbers_in(_strip_markdown(_source(cell)), i, "prose")
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        if alt:
            found += numbers_in(alt, i, "alt text")
    return found


def _output_texts(cell: dict) -> Iterator[str]:
    for output in cell.get("outputs", []):
        if "text" in output:
            yield "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
        for kind, value in output.get("data", {}).items():
            if kind.startswith("text/") or kind == "application/json":
                yield "".join(value) if isinstance(value, list) else str(value)


def source_numbers(texts: list[str]) -> set[tuple[Decimal, int]]:
    """``{(|value|, decimals)}`` of every number written in ``texts``; a number followed by ``%``
    also as a fraction (``98.9%`` -> ``0.989``, three decimals)."""
    found: set[tuple[Decimal, int]] = set()
    for text in texts:
        text = text.replace("\u2212", "-")
        for m in re.finditer(r"\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
            raw = m.group(0)
            if re.fullmatch(r"\d+(?:,\d{3})+(?:\.\d+)?", raw) is None and "," in raw:
                raw = raw.split(",")[0]
            digits = raw.replace(",", "")
            if "e" in digits.lower():
                value = Decimal(digits)
                found.add((value, max(0, -value.as_tuple().exponent)))  # type: ignore[operator]
                continue
            decimals = len(digits.split(".")[1]) if "." in digits else 0
            value = Decimal(digits)
            found.add((value, decimals))
            if text[m.end() : m.end() + 2].lstrip().startswith("%"):
                found.add((value / 100, decimals + 2))
            # "1,234" printed as a thousands-separated number, also its parts ("(1,234)")
    return found


def chapter_sources(chapter: list[dict]) -> set[tuple[Decimal, int]]:
    """The numbers a chapter's code cells and outputs write, and the package's paper tables."""
    texts = [PAPER_TABLES.read_text(encoding="utf-8")]
    for cell in chapter:
        if cell["cell_type"] == "code":
            texts.append(_source(cell))
            texts.extend(_output_texts(cell))
    return source_numbers(texts)


def _round(value: Decimal, decimals: int, mode: str) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=mode)


#: How many more decimals than the prose a source may have: ``0.04`` rounds a printed ``0.036``,
#: not a printed ``0.0361`` (a number printed that finely is some other quantity: with every
#: decimal allowed, any two-decimal claim finds a match among a chapter's printed tensors).
EXTRA_DECIMALS = 1


def rounded_index(sources: set[tuple[Decimal, int]], most: int = 12) -> dict[int, set[Decimal]]:
    """``{d: every source number with d to d + EXTRA_DECIMALS decimals, rounded to d}`` for d up
    to ``most`` (half-even and half-up rounding both, as printers differ), and under ``-1``
    every source number as printed (for prose in scientific notation)."""
    index: dict[int, set[Decimal]] = {d: set() for d in range(-1, most + 1)}
    for value, places in sources:
        index[-1].add(value)
        if value.adjusted() > 15:  # a hash's digits, not a quantity
            continue
        # A number printed with 7 decimals or more is the value itself (a float's repr), which
        # the prose may round to any precision.
        lowest = 0 if places >= 7 else max(0, places - EXTRA_DECIMALS)
        for d in range(lowest, min(places, most) + 1):
            index[d].add(_round(value, d, ROUND_HALF_EVEN))
            index[d].add(_round(value, d, ROUND_HALF_UP))
    return index


def untraced(chapter: list[dict]) -> list[ProseNumber]:
    """The numbers of a chapter's prose (its cells) that no source of the chapter matches."""
    index = rounded_index(chapter_sources(chapter))
    return [n for n in prose_numbers(chapter) if not traced(n, index)]


def traced(number: ProseNumber, index: dict[int, set[Decimal]]) -> bool:
    """Whether a source number, with at least the prose's decimals, rounds to the prose's."""
    if number.power is not None:  # the mantissa, at its decimals, of any source number
        mantissa = Decimal(number.text.replace(",", ""))
        places = len(number.text.split(".")[1]) if "." in number.text else 0
        return any(
            value != 0 and _round(value.scaleb(-number.power), places, mode) == mantissa
            for value in index[-1]
            for mode in (ROUND_HALF_EVEN, ROUND_HALF_UP)
            if value.adjusted() == number.value.adjusted()
        )
    targets = [(abs(number.value), number.decimals)]
    if number.percent:
        targets.append((abs(number.value) / 100, number.decimals + 2))
    return any(d in index and target in index[d] for target, d in targets)
