"""The Chinese edition's search dictionary: every Chinese term of the glossary, whole.

tools/zh_search.py gives them to jieba (Sphinx's Chinese indexer), so that a glossary term is
indexed as one word beside its parts; the browser test searches the built edition for them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import zh_search  # noqa: E402 (tools/ is not a package; see sys.path above)

GLOSSARY = ROOT / "zh" / "book" / "glossary.md"


def test_the_glossarys_chinese_terms_are_read_whole_and_only_once():
    terms = zh_search.glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    assert {"相对位置偏置", "相对位置索引", "偏置表", "循环移位", "网格坐标"} <= set(terms)
    assert len(terms) == len(set(terms))
    assert all(len(term) >= 2 and term.isalpha() and not term.isascii() for term in terms)


def test_a_term_beside_english_keeps_only_its_chinese():
    table = "| English | 中文 |\n|---|---|\n| meshgrid | 网格坐标（meshgrid） |\n"
    assert zh_search.glossary_terms(table) == ["网格坐标"]
