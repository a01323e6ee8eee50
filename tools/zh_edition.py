"""The Chinese edition: generated from the English notebooks and the translations of their prose.

One source of code: a Chinese chapter, ``zh/book/<name>.ipynb``, is the English notebook with its
prose replaced, and nothing else. Its code cells, their outputs, tags, ids and the Colab install
cell are the English ones byte for byte, so nbval's run of the English chapters validates both.

The translations live in ``zh/translations/<name>.md``, one **unit** per English Markdown cell
(and one per figure's alt text), each headed by a comment naming what it translates and a hash
of that English text::

    <!-- unit: 4440e3ba | en: 1f2e3d4c5b6a -->
    ## 2.1 计划：六个小步骤
    ...

``python tools/zh_edition.py --check`` (and ``tests/test_zh_edition.py`` in ``make test``) fails,
naming the chapter and the cell, when an English unit was added, removed or changed since its
translation was written (the recorded hash no longer matches), and when a translation lost or
changed an inline code span, a formula, a number, a link, a cross-reference, a heading or a
directive of its English unit.

It also holds every unit to the glossary, ``zh/glossary.yml`` (``zh_glossary.py``: forbidden
variants, English left untranslated, a core term's English at its first use in a chapter,
typography), and it accepts the Chinese ways of writing a number as explicit equivalences (二维
for 2-D, 1/14 for "14 times fewer", 4×4 for 4 x 4). ``--sync`` writes the Chinese notebooks from
the translations, the front page ``zh/book/index.md`` from ``zh/translations/index.md`` (one unit
per English paragraph of ``book/index.md``; a unit ``pN+zh`` adds Chinese-only text after
paragraph ``pN``) and the glossary page from ``zh/glossary.yml``; ``--check`` compares them.
``--stub NAME`` starts a translation file (each unit holds the English text, to be replaced).

A chapter without a translation file is built from the English prose under a one-line note
saying so, so that every page of the English book has its counterpart.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import zh_glossary  # tools/ is on sys.path when this file runs (or is imported by the tests)

ROOT = Path(__file__).resolve().parents[1]
EN_BOOK = ROOT / "book"
ZH_ROOT = ROOT / "zh"
ZH_BOOK = ZH_ROOT / "book"
TRANSLATIONS = ZH_ROOT / "translations"
UNIT_HEADER = re.compile(r"^<!-- unit: (\S+) \| en: ([0-9a-f]{12}) -->$", re.M)
ALT = "/alt"
CAPTION = "/caption"
NOT_PROSE = (ALT, CAPTION)  # units read beside a figure, not in the chapter's running text
GLOSSARY = ZH_ROOT / "glossary.yml"
PAGES = ("index.md",)  # Markdown pages of book/, translated paragraph by paragraph
ZH_ONLY = "+zh"  # a page's unit "p2+zh": Chinese-only text after paragraph p2 (no English to track)
UNTRANSLATED_NOTE = (
    "```{note}\n本章尚未译成中文，以下为英文原文。代码、输出与英文版完全相同。\n```\n\n"
)


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def en_hash(text: str) -> str:
    """The 12-hex-digit hash a unit records of the English text it translates."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _alt(cell: dict[str, Any]) -> str | None:
    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
    return alt if isinstance(alt, str) and alt else None


def _caption(cell: dict[str, Any]) -> str | None:
    caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption")
    return caption if isinstance(caption, str) and caption else None


def english_units(nb: dict[str, Any]) -> dict[str, str]:
    """``{unit key: English text}`` of a notebook, in order: Markdown cells, and each figure's
    alt text and caption (cell metadata ``mystnb.image.alt``, ``mystnb.figure.caption``)."""
    units = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            units[cell["id"]] = _source(cell)
            continue
        if (alt := _alt(cell)) is not None:
            units[cell["id"] + ALT] = alt
        if (caption := _caption(cell)) is not None:
            units[cell["id"] + CAPTION] = caption
    return units


def parse_translation(text: str) -> dict[str, tuple[str, str]]:
    """``{unit key: (recorded English hash, Chinese text)}`` of a translation file."""
    found: dict[str, tuple[str, str]] = {}
    headers = list(UNIT_HEADER.finditer(text))
    for i, match in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        key, recorded = match.group(1), match.group(2)
        if key in found:
            raise ValueError(f"unit {key} appears twice")
        found[key] = (recorded, text[match.end() : end].strip("\n") + "\n")
    return found


def format_translation(units: dict[str, tuple[str, str]]) -> str:
    """The file text of ``{key: (English hash, text)}`` (the inverse of ``parse_translation``)."""
    parts = [
        f"<!-- unit: {key} | en: {h} -->\n{text.strip(chr(10))}\n"
        for key, (h, text) in units.items()
    ]
    return "\n".join(parts)


# --- What a translation must keep ------------------------------------------------------------

_FENCE = re.compile(r"^(```+|:::+)\s*(\{[^}]+\})?[^\n]*$", re.M)
_OPTION = re.compile(r"^:(\w[\w-]*):", re.M)
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.S)
# An inline formula may wrap onto the next source line (never across a blank line).
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?!\n))+?(?<!\\)\$")
_ROLE = re.compile(r"\{\w+\}`[^`]+`")
_CODE = re.compile(r"`[^`\n]+`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6}) ", re.M)
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-−+]?\d+(?:[.,]\d+)*")
# Chinese writes some numbers differently; each way is an explicit equivalence, counted as the same
# number token on both sides (tests/test_zh_edition.py pins each one):
# 2-D / 2D / two-dimensional ≡ 二维 (and 1, 3, 4), counted as "2-D" (这一维, 第二维 name an axis);
_DIMENSION = re.compile(
    r"(?<![A-Za-z0-9_.])([1-4])-?D(?![A-Za-z0-9_])|(?<![这那每哪同某另第任单唯统])([一二三四])维"
    r"|(?<![A-Za-z])((?i:one|two|three|four))-dimensional"
)
_DIGIT = {
    "一": "1",
    "二": "2",
    "三": "3",
    "四": "4",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
}
# "14 times fewer" (14x, 14× fewer) ≡ 1/14, both counted as "1/14" (Chinese: 只有 1/14);
_RATIO = re.compile(
    r"(?<![A-Za-z0-9_.])(\d+)(?:\s*[×x]|\s+times)\s+(?:fewer|smaller|less|lower|shorter)\b"
    r"|(?<![A-Za-z0-9_./])1/(\d+)(?![A-Za-z0-9_./])"
)
# 4 x 4 ≡ 4x4 ≡ 4×4 (each side of the sign is a number); 95 % ≡ 95% needs nothing (the sign is no
# number).
_TIMES = re.compile(r"(\d)\s*[x×]\s*(?=\d)")


def kept_elements(text: str) -> dict[str, Counter[str]]:
    """The elements a translation keeps exactly, by kind (each a multiset: order may change)."""
    kept: dict[str, Counter[str]] = {}
    rest = text
    for kind, pattern in (
        ("formula", _DISPLAY_MATH),
        ("formula", _INLINE_MATH),
        ("cross-reference", _ROLE),
        ("inline code", _CODE),
    ):
        found = pattern.findall(rest)
        # Runs of white space (a formula wrapped onto the next line) count as one space.
        kept.setdefault(kind, Counter()).update(" ".join(f.split()) for f in found)
        rest = pattern.sub(" ", rest)
    kept["link"] = Counter(_LINK.findall(rest))
    kept["directive"] = Counter(
        (m.group(1)[0] + (m.group(2) or "")) for m in _FENCE.finditer(rest)
    ) + Counter(":" + m.group(1) for m in _OPTION.finditer(rest))
    kept["heading"] = Counter(_HEADING.findall(rest))
    numbers: Counter[str] = Counter()
    for m in _DIMENSION.finditer(rest):
        numbers[(m.group(1) or _DIGIT[(m.group(2) or m.group(3)).lower()]) + "-D"] += 1
    rest = _DIMENSION.sub(" ", rest)
    for m in _RATIO.finditer(rest):
        numbers["1/" + (m.group(1) or m.group(2))] += 1
    rest = _TIMES.sub(r"\1 × ", _RATIO.sub(" ", rest))
    numbers.update(n.replace("−", "-").replace(",", "") for n in _NUMBER.findall(rest))
    kept["number"] = numbers
    return kept


def element_changes(english: str, chinese: str) -> list[str]:
    """What ``chinese`` lost or added of ``english``'s kept elements, one line per kind."""
    en, zh = kept_elements(english), kept_elements(chinese)
    problems = []
    for kind in en.keys() | zh.keys():
        lost, added = (
            en.get(kind, Counter()) - zh.get(kind, Counter()),
            zh.get(kind, Counter()) - en.get(kind, Counter()),
        )
        if lost or added:
            problems.append(f"{kind}: lost {sorted(lost)} added {sorted(added)}")
    return sorted(problems)


# --- Checking and generating -----------------------------------------------------------------


def chapters() -> list[Path]:
    """The English chapters (notebooks) the Chinese edition mirrors."""
    return sorted(EN_BOOK.glob("*.ipynb"))


def translation_path(chapter: Path) -> Path:
    return TRANSLATIONS / f"{chapter.stem}.md"


def glossary() -> zh_glossary.Glossary:
    """The rules of ``zh/glossary.yml``."""
    return zh_glossary.Glossary.load(GLOSSARY)


def check_units(name: str, english: dict[str, str], units: dict[str, tuple[str, str]]) -> list[str]:
    """Every way ``units`` (a translation) is out of step with ``english`` or breaks a rule."""
    rules = glossary()
    problems = []
    for key, text in english.items():
        if key not in units:
            problems.append(f"{name}, cell {key}: English unit added, no translation")
            continue
        recorded, chinese = units[key]
        if recorded != en_hash(text):
            problems.append(
                f"{name}, cell {key}: the English changed since it was translated "
                f"(recorded {recorded}, now {en_hash(text)}); update the translation"
            )
        elif chinese.strip() == text.strip():
            problems.append(f"{name}, cell {key}: not translated yet (the English text)")
        else:
            problems += [f"{name}, cell {key}: {p}" for p in element_changes(text, chinese)]
    for key in units.keys() - english.keys():
        if not (key.endswith(ZH_ONLY) and key.removesuffix(ZH_ONLY) in english):
            problems.append(f"{name}, cell {key}: translated, but the English unit was removed")
    for key, (_, chinese) in units.items():
        problems += [f"{name}, cell {key}: {p}" for p in rules.unit_problems(chinese)]
    in_order = [(k, units[k][1]) for k in english if k in units and not k.endswith(NOT_PROSE)]
    problems += [f"{name}, {p}" for p in rules.first_use_problems(in_order)]
    return problems


def check_chapter(chapter: Path) -> list[str]:
    """Every way the chapter's translation is out of step with its English text (empty: none)."""
    path = translation_path(chapter)
    if not path.exists():
        return []
    nb = json.loads(chapter.read_text())
    try:
        units = parse_translation(path.read_text())
    except ValueError as exc:
        return [f"{path.relative_to(ROOT)}: {exc}"]
    return check_units(chapter.name, english_units(nb), units)


# --- Markdown pages (the book's front page) ----------------------------------------------------


def page_blocks(text: str) -> list[tuple[str | None, str]]:
    """A Markdown page's blocks as ``(unit key, text)``; a directive has no key (kept as is)."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text) if b.strip()]
    keyed: list[tuple[str | None, str]] = []
    n = 0
    for block in blocks:
        if _FENCE.match(block):
            keyed.append((None, block))
        else:
            n += 1
            keyed.append((f"p{n}", block))
    return keyed


def check_page(page: Path) -> list[str]:
    """``check_chapter`` for a Markdown page of the English book (its units: paragraphs)."""
    path = TRANSLATIONS / page.name
    try:
        units = parse_translation(path.read_text())
    except (OSError, ValueError) as exc:
        return [f"{path.relative_to(ROOT)}: {exc}"]
    english = {k: t + "\n" for k, t in page_blocks(page.read_text()) if k is not None}
    return check_units(page.name, english, units)


def chinese_page(page: Path) -> str:
    """The Chinese page: each English paragraph's translation (then its Chinese-only addition)."""
    units = parse_translation((TRANSLATIONS / page.name).read_text())
    out = []
    for key, text in page_blocks(page.read_text()):
        if key is None:
            out.append(text)
            continue
        out.append(units[key][1].strip("\n") if key in units else text)
        if key + ZH_ONLY in units:
            out.append(units[key + ZH_ONLY][1].strip("\n"))
    return "\n\n".join(out) + "\n"


def chinese_notebook(chapter: Path) -> dict[str, Any]:
    """The Chinese notebook of ``chapter``: its English notebook with the prose translated."""
    nb = json.loads(chapter.read_text())
    zh = copy.deepcopy(nb)
    path = translation_path(chapter)
    units = parse_translation(path.read_text()) if path.exists() else {}
    for cell in zh["cells"]:
        if cell["cell_type"] == "markdown" and cell["id"] in units:
            cell["source"] = units[cell["id"]][1].splitlines(keepends=True)
            continue
        if cell["id"] + ALT in units and _alt(cell) is not None:  # else check_chapter names it
            cell["metadata"]["mystnb"]["image"]["alt"] = units[cell["id"] + ALT][1].strip()
        if cell["id"] + CAPTION in units and _caption(cell) is not None:
            cell["metadata"]["mystnb"]["figure"]["caption"] = units[cell["id"] + CAPTION][1].strip()
    if not units:  # built from the English prose, under a note that says so
        title = next(c for c in zh["cells"] if c["cell_type"] == "markdown")
        text = _source(title)
        head, _, rest = text.partition("\n")
        title["source"] = (head + "\n\n" + UNTRANSLATED_NOTE + rest.lstrip("\n")).splitlines(
            keepends=True
        )
    zh["metadata"]["book_language"] = "zh_CN"
    return zh


def dump(nb: dict[str, Any]) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def sync(check_only: bool) -> list[str]:
    """Write (or, with ``check_only``, compare) every Chinese notebook and page; the problems."""
    problems = []
    outputs: list[tuple[Path, Callable[[], str]]] = []
    for chapter in chapters():
        problems += check_chapter(chapter)
        outputs.append((ZH_BOOK / chapter.name, partial(_notebook_text, chapter)))
    for page in PAGES:
        problems += check_page(EN_BOOK / page)
        outputs.append((ZH_BOOK / page, partial(chinese_page, EN_BOOK / page)))
    rules = glossary()
    for part in rules.prose_parts():
        problems += [f"{GLOSSARY.relative_to(ROOT)}: {p}" for p in rules.unit_problems(part)]
    outputs.append((ZH_BOOK / "glossary.md", rules.page))
    for target, make in outputs:
        try:
            text = make()
        except (KeyError, OSError, ValueError):  # a broken translation: named by its check above
            continue
        if check_only:
            if not target.exists() or target.read_text() != text:
                problems.append(f"{target.relative_to(ROOT)} is not generated from its sources")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(target)
    return problems


def _notebook_text(chapter: Path) -> str:
    return dump(chinese_notebook(chapter))


def fix() -> list[Path]:
    """Apply the glossary's mechanical fixes and first-use glosses to every translation file (after
    a merge, say); returns the files changed. What needs rewording, ``--check`` still names."""
    rules = glossary()
    sources = [
        (translation_path(c), list(english_units(json.loads(c.read_text())))) for c in chapters()
    ]
    for page in (p for p in PAGES if (EN_BOOK / p).exists()):
        blocks = page_blocks((EN_BOOK / page).read_text())
        sources.append((TRANSLATIONS / page, [k for k, _ in blocks if k is not None]))
    changed = []
    for path, order in sources:
        if not path.exists():
            continue
        text = path.read_text()
        units = parse_translation(text)
        units = {k: (h, rules.fixed(t)) for k, (h, t) in units.items()}
        prose_keys = [k for k in order if k in units and not k.endswith(NOT_PROSE)]
        for key, glossed in rules.with_glosses([(k, units[k][1]) for k in prose_keys]):
            units[key] = (units[key][0], glossed)
        if (new := format_translation(units)) != text:
            path.write_text(new)
            changed.append(path)
    return changed


def stub(name: str) -> Path:
    """Start ``zh/translations/<name>.md``: every unit with its hash and the English text."""
    chapter = EN_BOOK / f"{name}.ipynb"
    if not chapter.exists():
        raise ValueError(f"name must be a chapter of book/, got {name!r}")
    path = translation_path(chapter)
    if path.exists():
        raise ValueError(f"{path} exists already: edit it")
    units = {k: (en_hash(t), t) for k, t in english_units(json.loads(chapter.read_text())).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_translation(units))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--sync", action="store_true", help="write zh/book/*.ipynb")
    group.add_argument("--check", action="store_true", help="fail when out of step")
    group.add_argument("--stub", metavar="NAME", help="start zh/translations/NAME.md")
    group.add_argument(
        "--fix", action="store_true", help="apply the glossary's mechanical fixes and glosses"
    )
    args = parser.parse_args(argv)
    if args.stub:
        print(stub(args.stub).relative_to(ROOT))
        return 0
    if args.fix:
        for path in fix():
            print(f"fixed {path.relative_to(ROOT)}")
        return 0
    problems = sync(check_only=args.check)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
