"""The Chinese edition's glossary as a rule: one rendering per term, checked in every translation.

``zh/glossary.yml`` is the one source: ``tools/zh_edition.py --sync`` renders the glossary page
(``zh/book/glossary.md``) from it, and ``--check`` runs these rules over every unit of every
translation, naming the chapter and the unit:

- **forbidden variants**: a term's ``forbid`` list (不作解读 where the book says 不可读);
- **untranslated English**: a glossed term left in English in prose (``query`` for 查询), unless
  it is a gloss: Latin text opening full-width parentheses, 查询（query）;
- **first use**: a ``core`` term's first use in a chapter is followed by its English in full-width
  parentheses, 相对位置偏置（relative position bias）;
- **typography**: 95% not "95 %", 4×4 not "4 x 4", and no line break inside a Chinese sentence
  (Markdown renders it as a stray space).

Code spans, code blocks, formulas, cross-references, link targets, HTML comments and directive
lines are never checked: they are the English book's, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# Chinese characters and punctuation (the quotes “” and the dash —— included).
_CJK = "\u2014\u2018\u2019\u201c\u201d\u2026\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_MASKED = (
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\$\$.+?\$\$", re.S),
    re.compile(r"(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?!\n))+?(?<!\\)\$"),
    re.compile(r"\{\w+\}`[^`]+`"),
    re.compile(r"`[^`\n]+`"),
    re.compile(r"(?<=\])\([^)\s]+\)"),  # a link's target (its text is prose)
    re.compile(r"^(?:```+|:::+).*$", re.M),  # directive fences
    re.compile(r"^:[\w-]+:.*$", re.M),  # directive options
)
_HEADING_LINE = re.compile(r"^#{1,6} .*$", re.M)
# A gloss: Latin text opening full-width parentheses, up to their end or a full-width comma or
# semicolon (相对位置偏置（relative position bias，Swin）), or a title of several words in italics
# (*Attention Is All You Need*; a lone *query* is no title): English by design.
_GLOSS = re.compile(rf"（[^（），；{_CJK}]*[）；，]|(?<!\*)\*[^*{_CJK}\n]+ [^*{_CJK}\n]+\*(?!\*)")
# A line break between Chinese text (or a bold marker next to it) and more of the same sentence:
# Markdown joins the lines with a space, which Chinese does not have (。\n**轴向** too).
_LINE_BREAK = re.compile(rf"(?:(?<=[{_CJK}])|(?<=\*\*))\n(?=[{_CJK}]|\*\*)")
_TYPOGRAPHY = (
    (re.compile(r"\d\s+%"), "write 95%, not 95 % (no space before the percent sign)"),
    (re.compile(r"\d\s*[xX]\s*\d"), "write 4×4 with the multiplication sign ×, not the letter x"),
    (_LINE_BREAK, "line break inside a sentence (renders as a space)"),
)


_TYPOGRAPHY_FIXES = (
    (re.compile(r"(?<=\d)\s+(?=%)"), ""),
    (re.compile(r"(?<=\d)\s*[xX]\s*(?=\d)"), "×"),
    (_LINE_BREAK, ""),
)
_CJK_OR_EMPHASIS = re.compile(rf"[{_CJK}*]")
_FENCE_LINE = re.compile(r"^(`{3,}|:{3,})\s*(\{([\w-]+)\})?")
_CODE_DIRECTIVES = {None, "code", "code-block", "code-cell"}


def _code_blocks(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s fenced code blocks are (a directive's body, as in ```{note}, is prose)."""
    blocks: list[tuple[int, int]] = []
    stack: list[tuple[str, int, bool]] = []  # open fences: (fence, where, is it code)
    offset = 0
    for line in text.splitlines(keepends=True):
        m = _FENCE_LINE.match(line)
        if m and stack and line.strip() == stack[-1][0]:  # a closing fence
            _, start, is_code = stack.pop()
            if is_code:
                blocks.append((start, offset + len(line)))
        elif m and not (stack and stack[-1][2]):  # an opening fence (none inside code)
            stack.append((m.group(1), offset, m.group(3) in _CODE_DIRECTIVES))
        offset += len(line)
    return blocks


def prose(text: str) -> str:
    """``text`` with everything that is not prose blanked out (same length, line breaks kept)."""
    for start, end in _code_blocks(text):
        text = text[:start] + re.sub(r"[^\n]", "\0", text[start:end]) + text[end:]
    for pattern in _MASKED:
        text = pattern.sub(lambda m: re.sub(r"[^\n]", "\0", m.group()), text)
    return text


def _replaced_in_prose(
    text: str, pattern: re.Pattern[str], rendering: str, glosses: bool = False
) -> str:
    """``text`` with ``pattern`` replaced in prose (not in code or formulas, nor in glosses unless
    ``glosses``); a space between the new Chinese word and a Chinese neighbour is dropped (查询 $q$
    keeps its space)."""
    body = prose(text)
    if not glosses:
        body = _GLOSS.sub(lambda m: "\0" * len(m.group()), body)
    out, last = [], 0
    for m in pattern.finditer(body):
        start, end, new = m.start(), m.end(), m.expand(rendering)
        cjk = _CJK_OR_EMPHASIS
        if new and cjk.match(new[0]) and start >= 2 and text[start - 1] == " ":
            start -= 1 if cjk.match(text[start - 2]) else 0
        if new and cjk.match(new[-1]) and text[end : end + 1] == " " and text[end + 1 : end + 2]:
            end += 1 if cjk.match(text[end + 1]) else 0
        out += [text[last:start], new]
        last = end
    return "".join(out) + text[last:]


def _joined(text: str) -> str:
    """``text`` (wrapped YAML) with each paragraph on one line, as Chinese Markdown needs."""
    paragraphs = [" ".join(p.split("\n")) for p in text.strip().split("\n\n")]
    return "\n\n".join(re.sub(rf"(?<=[{_CJK}]) (?=[{_CJK}])", "", p) for p in paragraphs)


def _pattern(spec: str) -> re.Pattern[str]:
    return re.compile(spec[3:]) if spec.startswith("re:") else re.compile(re.escape(spec))


@dataclass(frozen=True)
class Term:
    """One glossary entry: its rendering and the rules that hold translations to it."""

    en: str
    zh: str
    note: str
    forbid: tuple[re.Pattern[str], ...]
    english: tuple[re.Pattern[str], ...]
    core: bool
    gloss: tuple[str, ...]
    not_within: tuple[str, ...]
    fixes: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def from_entry(cls, entry: dict[str, Any], checked_english: bool) -> Term:
        en, zh = entry["en"], entry["zh"]
        if "english" in entry:
            english = entry["english"]
        else:
            english = [re.escape(en) + "s?"] if checked_english and en != zh else []
        return cls(
            en=en,
            zh=zh,
            note=entry.get("note", ""),
            forbid=tuple(_pattern(f) for f in entry.get("forbid", [])),
            english=tuple(re.compile(rf"(?<![\w-]){e}(?![\w-])", re.I) for e in english),
            core=bool(entry.get("core", False)),
            gloss=tuple(entry.get("gloss", [en])),
            not_within=tuple(entry.get("not_within", [])),
            fixes=tuple((_pattern(f), to) for f, to in entry.get("fix", [])),
        )


class Glossary:
    """The rules of ``zh/glossary.yml`` (``data``: the parsed file)."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.terms = [
            Term.from_entry(entry, checked_english=i == 0)
            for i, section in enumerate(data["sections"])
            for entry in section["terms"]
        ]
        renderings = [t.zh for t in self.terms]
        # A use of 位置编码 inside 绝对位置编码 is a use of the longer term, not of 位置编码.
        self._longer = {
            t.zh: tuple(r for r in renderings if t.zh in r and r != t.zh) + t.not_within
            for t in self.terms
        }

    @classmethod
    def load(cls, path: Path) -> Glossary:
        return cls(yaml.safe_load(path.read_text(encoding="utf-8")))

    def uses(self, term: Term, text: str) -> list[int]:
        """Where ``term``'s rendering is used in ``text`` (not as part of a longer word)."""
        covered = [
            range(m.start(), m.end())
            for longer in self._longer[term.zh]
            for m in re.finditer(re.escape(longer), text)
        ]
        return [
            m.start()
            for m in re.finditer(re.escape(term.zh), text)
            if not any(m.start() in r for r in covered)
        ]

    def unit_problems(self, text: str) -> list[str]:
        """Forbidden variants, untranslated English terms and typography slips of one unit."""
        body = prose(text)
        glossed = _GLOSS.sub(lambda m: "\0" * len(m.group()), body)
        problems = []
        for term in self.terms:
            for pattern in term.forbid:
                for m in pattern.finditer(body):
                    problems.append(
                        f"uses {m.group()!r}, forbidden for {term.en!r}: write {term.zh}"
                    )
            for pattern in term.english:
                for m in pattern.finditer(glossed):
                    problems.append(f"leaves {m.group()!r} untranslated in prose: write {term.zh}")
        for pattern, why in _TYPOGRAPHY:
            for m in pattern.finditer(body):
                problems.append(f"typography {m.group()!r}: {why}")
        return problems

    def _first_use(self, term: Term, units: list[tuple[str, str]]) -> tuple[int, int] | None:
        """(unit number, where its gloss goes) of ``term``'s first use outside headings, if any."""
        for i, (_, text) in enumerate(units):
            body = _HEADING_LINE.sub(lambda m: "\0" * len(m.group()), prose(text))
            found = self.uses(term, body)
            if found:
                end = found[0] + len(term.zh)
                if text[found[0] - 1 : found[0]] in ("*", "_"):  # *相对位置偏置*（...）
                    end += len(text[end:]) - len(text[end:].lstrip("*_"))
                return i, end
        return None

    def _glossed(self, term: Term, text: str, end: int) -> bool:
        return any(text[end:].lower().startswith(f"（{g.lower()}") for g in term.gloss)

    def first_use_problems(self, units: list[tuple[str, str]]) -> list[str]:
        """Core terms whose first use in a chapter (``units``: key, text) lacks its gloss."""
        problems = []
        for term in (t for t in self.terms if t.core):
            first = self._first_use(term, units)
            if first is not None and not self._glossed(term, units[first[0]][1], first[1]):
                problems.append(
                    f"cell {units[first[0]][0]}: first use of {term.zh} has no English: write "
                    f"{term.zh}（{term.gloss[0]}）"
                )
        return problems

    def fixed(self, text: str) -> str:
        """``text`` with the mechanical fixes applied: each term's ``fix`` (随机种子 → 种子, query →
        查询, 2-D → 二维) and typography, in prose only. Rewordings (不作解读) stay the editor's."""
        for term in self.terms:
            for pattern, rendering in term.fixes:
                text = _replaced_in_prose(text, pattern, rendering)
        for pattern, rendering in _TYPOGRAPHY_FIXES:
            text = _replaced_in_prose(text, pattern, rendering, glosses=True)
        return text

    def with_glosses(self, units: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``units`` with the English gloss added at each core term's first use that lacks it."""
        units = list(units)
        for term in (t for t in self.terms if t.core):
            first = self._first_use(term, units)
            if first is not None and not self._glossed(term, units[first[0]][1], first[1]):
                (i, end), (key, text) = first, units[first[0]]
                units[i] = (key, f"{text[:end]}（{term.gloss[0]}）{text[end:].lstrip(' ')}")
        return units

    def prose_parts(self) -> list[str]:
        """The glossary page's own prose (its tables list variants on purpose, so not these)."""
        d = self.data
        parts = [d["intro"], d["further_reading"]["intro"], *d["further_reading"]["items"]]
        parts += [n["text"] for n in d["notes"]] + [
            s["after"] for s in d["sections"] if "after" in s
        ]
        return [_joined(p) for p in parts]

    def page(self) -> str:
        """The glossary page, ``zh/book/glossary.md``, in Markdown."""
        d = self.data
        out = [f"# {d['title']}\n", _joined(d["intro"]) + "\n"]
        for section in d["sections"]:
            out.append(f"## {section['title']}\n")
            columns = section["columns"]
            wide = len(columns) > 2
            if wide:
                out.append("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
            else:
                out.append("| English | 中文 | English | 中文 |\n|---|---|---|---|")
            terms = section["terms"]
            if wide:
                for t in terms:
                    forbid = "、".join(self._shown(t))
                    core = "（核心）" if t.get("core") else ""
                    out.append(f"| {t['en']} | {t['zh']}{core} | {t.get('note', '')} | {forbid} |")
            else:
                for a, b in zip(terms[::2], [*terms[1::2], {"en": "", "zh": ""}], strict=False):
                    out.append(f"| {self._cell(a)} | {self._cell(b)} |")
            out[-1] += "\n"
            if section.get("after"):
                out.append(_joined(section["after"]) + "\n")
        for note in d["notes"]:
            out.append(f"## {note['title']}\n")
            out.append(_joined(note["text"]) + "\n")
        reading = d["further_reading"]
        out.append(f"## {reading['title']}\n")
        out.append(_joined(reading["intro"]) + "\n")
        out.append("\n".join(f"- {_joined(item)}" for item in reading["items"]) + "\n")
        return "\n".join(out)

    @staticmethod
    def _shown(entry: dict[str, Any]) -> list[str]:
        """The forbidden variants as a reader should see them (a pattern by its ``forbid_text``)."""
        return [f for f in entry.get("forbid", []) if not f.startswith("re:")] + entry.get(
            "forbid_text", []
        )

    @staticmethod
    def _cell(entry: dict[str, Any]) -> str:
        zh = entry["zh"]
        forbid = Glossary._shown(entry)
        if forbid:
            zh += "（不用" + "、".join(f"“{f}”" for f in forbid) + "）"
        return f"{entry['en']} | {zh}"
