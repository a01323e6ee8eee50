"""The Chinese edition is the English one with its prose translated, kept in step by a check.

tools/zh_edition.py generates zh/book/*.ipynb from book/*.ipynb and zh/translations/*.md; these
tests fail, naming the chapter and the cell, when a translation is out of step with its English
unit, and prove that the Chinese notebooks run exactly the English code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import zh_edition  # noqa: E402 (tools/ is not a package; see sys.path above)

CHAPTERS = zh_edition.chapters()
CODE_FIELDS = ("cell_type", "id", "source", "outputs", "execution_count")


def test_every_translation_is_in_step_and_every_chinese_notebook_is_generated():
    problems = zh_edition.sync(check_only=True)
    assert not problems, "the Chinese edition is out of step:\n" + "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chinese_code_cells_and_outputs_are_the_english_ones_byte_for_byte(chapter):
    english = json.loads(chapter.read_text())
    chinese = json.loads((zh_edition.ZH_BOOK / chapter.name).read_text())
    assert [c["id"] for c in chinese["cells"]] == [c["id"] for c in english["cells"]]
    for en, zh in zip(english["cells"], chinese["cells"], strict=True):
        if en["cell_type"] != "code":
            continue
        for field in CODE_FIELDS:
            assert json.dumps(zh.get(field)) == json.dumps(en.get(field)), (
                f"{chapter.name}, cell {en['id']}: the Chinese {field} differs from the English"
            )
        # Only the alt text may differ in a code cell's metadata (it is prose, translated).
        en_meta, zh_meta = (
            json.loads(json.dumps(en["metadata"])),
            json.loads(json.dumps(zh["metadata"])),
        )
        for meta in (en_meta, zh_meta):
            meta.get("mystnb", {}).get("image", {}).pop("alt", None)
        assert zh_meta == en_meta, f"{chapter.name}, cell {en['id']}: metadata differs"


def test_the_chinese_contents_follow_the_english_ones():
    english = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chinese = yaml.safe_load((zh_edition.ZH_ROOT / "_toc.yml").read_text())
    en_files = [c["file"] for c in english["chapters"]]
    zh_files = [c["file"] for c in chinese["chapters"] if c["file"] != "book/glossary"]
    assert zh_files == en_files
    assert (zh_edition.ZH_ROOT / "book" / "glossary.md").exists()


def test_the_glossary_uses_the_source_posts_terms():
    glossary = (zh_edition.ZH_ROOT / "book" / "glossary.md").read_text()
    for term in ("绝对位置编码", "相对位置索引", "相对位置偏置", "窗口", "移位窗口"):
        assert term in glossary


# --- The check itself, on made-up units ----------------------------------------------------------

ENGLISH = (
    "## 2.4 Step 3: pairwise offsets\n\nThe offset of `coords_flat` is $q - k$, a "
    "$(2, N, N)$ tensor: 49 pairs ([chapter 3](03_bias_lookup.ipynb)).\n\n"
    "```{note}\nSee {ref}`the-index`.\n```\n"
)
GOOD = (
    "## 2.4 第 3 步：两两偏移\n\n`coords_flat` 的偏移是 $q - k$，一个 $(2, N, N)$ 张量："
    "共 49 对（见[第 3 章](03_bias_lookup.ipynb)）。\n\n```{note}\n参见 {ref}`the-index`。\n```\n"
)


def test_a_faithful_translation_keeps_every_element():
    assert zh_edition.element_changes(ENGLISH, GOOD) == []


@pytest.mark.parametrize(
    "kind, broken",
    [
        ("inline code", GOOD.replace("`coords_flat`", "coords_flat")),
        ("formula", GOOD.replace("$q - k$", "$q-k$")),
        ("number", GOOD.replace("49", "四十九")),
        ("link", GOOD.replace("(03_bias_lookup.ipynb)", "(03_bias.ipynb)")),
        ("cross-reference", GOOD.replace("{ref}`the-index`", "the-index")),
        ("directive", GOOD.replace("```{note}", "```{tip}")),
        ("heading", GOOD.replace("## 2.4", "### 2.4")),
    ],
)
def test_a_translation_that_loses_an_element_is_named(kind, broken):
    problems = zh_edition.element_changes(ENGLISH, broken)
    assert any(p.startswith(kind + ":") for p in problems), problems


def _chapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, english: str, unit: str) -> Path:
    """A one-cell English chapter and its translation file, in a made-up book under tmp_path."""
    book, translations = tmp_path / "book", tmp_path / "zh" / "translations"
    book.mkdir(parents=True)
    translations.mkdir(parents=True)
    cell = {"cell_type": "markdown", "id": "abc123", "metadata": {}, "source": english}
    chapter = book / "09_made_up.ipynb"
    chapter.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))
    (translations / "09_made_up.md").write_text(unit)
    monkeypatch.setattr(zh_edition, "ROOT", tmp_path)
    monkeypatch.setattr(zh_edition, "TRANSLATIONS", translations)
    return chapter


def test_an_english_change_without_its_translation_fails_naming_chapter_and_cell(
    tmp_path, monkeypatch
):
    unit = f"<!-- unit: abc123 | en: {zh_edition.en_hash(ENGLISH)} -->\n{GOOD}"
    chapter = _chapter(tmp_path, monkeypatch, ENGLISH, unit)
    assert zh_edition.check_chapter(chapter) == []
    changed = ENGLISH.replace("49 pairs", "49 (query, key) pairs")
    chapter = _chapter(tmp_path / "again", monkeypatch, changed, unit)
    (problem,) = zh_edition.check_chapter(chapter)
    assert "09_made_up.ipynb, cell abc123" in problem and "English changed" in problem


def test_added_removed_and_untranslated_units_are_named(tmp_path, monkeypatch):
    stale = f"<!-- unit: zzz999 | en: {zh_edition.en_hash('x')} -->\n旧的\n"
    chapter = _chapter(tmp_path, monkeypatch, ENGLISH, stale)
    problems = " | ".join(zh_edition.check_chapter(chapter))
    assert "cell abc123: English unit added" in problems
    assert "cell zzz999: translated, but the English unit was removed" in problems
    untranslated = f"<!-- unit: abc123 | en: {zh_edition.en_hash(ENGLISH)} -->\n{ENGLISH}"
    chapter = _chapter(tmp_path / "b", monkeypatch, ENGLISH, untranslated)
    assert "not translated yet" in " ".join(zh_edition.check_chapter(chapter))


def test_a_number_written_against_chinese_characters_still_counts():
    assert zh_edition.element_changes(ENGLISH, GOOD.replace("共 49 对", "共49对")) == []
    problems = zh_edition.element_changes(ENGLISH, GOOD.replace("共 49 对", "共48对"))
    assert any(p.startswith("number:") and "'48'" in p for p in problems), problems


def test_a_formula_wrapped_onto_the_next_line_is_the_same_formula():
    english = "The bump moves to $2 \\cdot 15/7\n\\approx 4.3$ for $M = 7$."
    assert (
        zh_edition.element_changes(english, "凸起移到 $2 \\cdot 15/7 \\approx 4.3$（$M = 7$）。")
        == []
    )
    assert zh_edition.element_changes(english, "凸起移到 $2 \\cdot 15/7 \\approx 4$（$M = 7$）。")
