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
        # Only a figure's alt text and caption may differ in a code cell's metadata (they are
        # prose, translated).
        en_meta, zh_meta = (
            json.loads(json.dumps(en["metadata"])),
            json.loads(json.dumps(zh["metadata"])),
        )
        for meta in (en_meta, zh_meta):
            meta.get("mystnb", {}).get("image", {}).pop("alt", None)
            meta.get("mystnb", {}).get("figure", {}).pop("caption", None)
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
    renderings = {t.zh for t in zh_edition.glossary().terms}
    for term in ("相对位置编码", "位置编码", "特征图", "拼接", "可读 / 不可读"):
        assert term in renderings
    assert "## 编码与嵌入" in glossary and "## 中文延伸阅读" in glossary and "winycg" in glossary


# --- The check itself, on made-up units ----------------------------------------------------------

ENGLISH = (
    "## 2.4 Step 3: pairwise offsets\n\nThe offset of `coords_flat` is $q - k$, a "
    "$(2, N, N)$ tensor: 49 pairs ([chapter 3](03_bias_lookup.ipynb)).\n\n"
    "```{note}\nSee {ref}`the-index`.\n```\n"
)
GOOD = (
    "## 2.4 第 3 步：两两偏移\n\n`coords_flat` 的偏移（offset）是 $q - k$，一个 $(2, N, N)$ 张量："
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
    monkeypatch.setattr(zh_edition, "EN_BOOK", book)
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


def test_a_figures_caption_is_a_unit_translated_into_the_chinese_notebook(tmp_path, monkeypatch):
    caption = "Step 3: the pairwise offsets, query minus key, for $M = 2$."
    chapter = _chapter(tmp_path, monkeypatch, ENGLISH, "")
    nb = json.loads(chapter.read_text())
    figure = {"mystnb": {"figure": {"caption": caption}}}
    nb["cells"].append({"cell_type": "code", "id": "fig1", "metadata": figure, "source": "f()"})
    chapter.write_text(json.dumps(nb))
    assert zh_edition.english_units(nb)["fig1/caption"] == caption
    problems = " | ".join(zh_edition.check_chapter(chapter))
    assert "cell fig1/caption: English unit added" in problems
    chinese = "第 3 步：$M = 2$ 时的两两偏移，查询减键。"
    units = {
        key: (zh_edition.en_hash(text), zh)
        for (key, text), zh in zip(
            zh_edition.english_units(nb).items(), [GOOD, chinese], strict=True
        )
    }
    zh_edition.translation_path(chapter).write_text(zh_edition.format_translation(units))
    assert zh_edition.check_chapter(chapter) == []
    translated = zh_edition.chinese_notebook(chapter)["cells"][1]["metadata"]
    assert translated["mystnb"]["figure"]["caption"] == chinese
    lost = zh_edition.format_translation(
        {**units, "fig1/caption": (units["fig1/caption"][0], "第步")}
    )
    zh_edition.translation_path(chapter).write_text(lost)
    assert "cell fig1/caption: formula" in " | ".join(zh_edition.check_chapter(chapter))


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


def test_a_number_written_the_chinese_way_is_the_same_number():
    for english, chinese in [
        ("a 2-D offset and a 1-D index", "二维偏移和一维索引"),
        ("a 2D table", "二维表"),
        ("a two-dimensional grid", "二维网格"),
        ("(14 times fewer for 7)", "（7 时只有 1/14）"),
        ("14x fewer", "只有 1/14"),
        ("a 95 % interval", "95% 区间"),
        ("a 4 x 6 map", "4×6 的图"),
        ("16x16 patches", "16×16 的图块"),
    ]:
        assert zh_edition.element_changes(english, chinese) == [], (english, chinese)


@pytest.mark.parametrize(
    "english, chinese, message",
    [
        ("a 2-D offset", "三维偏移", "lost ['2-D'] added ['3-D']"),
        ("(14 times fewer)", "（少 14 倍）", "lost ['1/14'] added ['14']"),
        ("14 times fewer", "只有 1/15", "lost ['1/14'] added ['1/15']"),
        ("the head axis", "把头这一维放到最前面", ""),  # 这一维 names an axis: no number
    ],
)
def test_the_number_equivalences_are_exact_not_holes(english, chinese, message):
    problems = zh_edition.element_changes(english, chinese)
    assert problems == ([f"number: {message}"] if message else [])


# --- The glossary as a rule ---------------------------------------------------------------------

RULES = zh_edition.glossary()


@pytest.mark.parametrize(
    "chinese, quoted",
    [
        ("低于一个点的差距不作解读。", "不作解读"),
        ("这张表无法解读。", "无法解读"),
        ("末几位取决于 CPU 的浮点运算内核。", "浮点运算内核"),
        ("在硬件支持时使用融合 kernel。", "融合 kernel"),
        ("它是一个 2D 张量。", "2D"),
        ("它是一个 2-D 张量。", "2-D"),
        ("每个随机种子训练一次。", "随机种子"),
        ("每个 query 只关注几个键。", "query"),
        ("（$M = 7$ 时少 14 倍）", "少 14 倍"),
        ("每个 *query* 只关注几个键。", "query"),  # italics make no title of one word
        ("它是一个 1-D 索引。", "1-D"),
        # The calques a native reader found: each is a forbidden variant of its glossary entry.
        ("ViT 把图像看成一袋图块。", "一袋"),
        ("实际的区别在于簿记。", "簿记"),
        ("每个堆栈只有第一层拥有一张表。", "堆栈"),
        ("区间同时覆盖训练用的种子和测试图像。", "同时覆盖"),
        ("最负的偏移落在第 0 行。", "最负"),
        ("这是个平局，平局时舍入到偶数。", "平局"),
        ("分化单元按计数来读。", "分化单元"),
        ("在每个单元的五个盲种子上读。", "每个单元"),
    ],
)
def test_a_forbidden_variant_or_an_untranslated_term_is_named(chinese, quoted):
    problems = RULES.unit_problems(chinese)
    assert any(repr(quoted) in p for p in problems), problems


@pytest.mark.parametrize(
    "chinese",
    [
        "每个查询（query）只关注几个键（key）。",  # a gloss
        "偏置只取决于键（key，在 logit 中）。",  # a gloss opening a longer parenthesis
        "调用 `attn(query, key)` 即可，$q - k$ 是偏移。",  # code and formulas are exempt
        "见 *Self-Attention with Relative Position Representations*。",  # a title
        "不到一个点的差距不可读；二维偏移；只有 1/14；95% 区间；4×4 窗口。",
        "下面的单元格逐单元检查；每个 block 512 个隐藏单元。",  # other senses of 单元
    ],
)
def test_the_glossary_rendering_code_and_glosses_pass(chinese):
    assert RULES.unit_problems(chinese) == []


def test_typography_slips_are_named():
    problems = " | ".join(RULES.unit_problems("95 % 区间，4 x 4 窗口，一句话\n断成两行。"))
    assert "'5 %'" in problems and "'4 x 4'" in problems
    assert "line break inside a sentence" in problems


def test_a_line_break_before_or_after_a_bold_term_is_named_and_fixed():
    broken = "角度为 $a + b$。\n**轴向** RoPE 只用行频率，\n**混合** RoPE 学习频率。"
    problems = RULES.unit_problems(broken)
    assert len(problems) == 2 and all("line break inside a sentence" in p for p in problems)
    fixed = RULES.fixed(broken)
    assert fixed == "角度为 $a + b$。**轴向** RoPE 只用行频率，**混合** RoPE 学习频率。"
    assert RULES.unit_problems(fixed) == []
    # A new paragraph, a list item or a formula wrapped onto the next line is no such break.
    assert RULES.unit_problems("第一段。\n\n**第二段。**\n\n- 一项\n- **另一项**") == []
    assert RULES.unit_problems("角度为 $a +\nb$，两行。") == []


def test_a_forbidden_variant_fails_the_check_naming_chapter_and_unit(tmp_path, monkeypatch):
    english = "Gaps below a point are not readable."
    good = "低于一个点的差距不可读。"
    unit = f"<!-- unit: abc123 | en: {zh_edition.en_hash(english)} -->\n"
    chapter = _chapter(tmp_path, monkeypatch, english, unit + good)
    assert zh_edition.check_chapter(chapter) == []
    chapter = _chapter(
        tmp_path / "b", monkeypatch, english, unit + good.replace("不可读", "不作解读")
    )
    (problem,) = zh_edition.check_chapter(chapter)
    assert problem.startswith("09_made_up.ipynb, cell abc123: uses '不作解读'"), problem


def test_a_core_terms_first_use_in_a_chapter_carries_its_english():
    bare = [
        ("u1", "## 标题里的相对位置偏置不算\n\nSwin 加上*相对位置偏置* $B$。"),
        ("u2", "相对位置偏置"),
    ]
    (problem,) = RULES.first_use_problems(bare)
    assert problem == (
        "cell u1: first use of 相对位置偏置 has no English: "
        "write 相对位置偏置（relative position bias）"
    )
    glossed = [
        ("u1", "Swin 加上*相对位置偏置*（relative position bias）$B$。"),
        ("u2", "相对位置偏置"),
    ]
    assert RULES.first_use_problems(glossed) == []
    # 位置编码 inside 绝对位置编码 is a use of the longer term only.
    nested = [
        ("u1", "绝对位置编码（absolute position embedding）是一种位置编码（position encoding）。")
    ]
    assert RULES.first_use_problems(nested) == []


def test_the_front_page_is_translated_paragraph_by_paragraph():
    blocks = zh_edition.page_blocks("# Title\n\nOne\nparagraph.\n\n```{tableofcontents}\n```\n")
    assert blocks == [
        ("p1", "# Title"),
        ("p2", "One\nparagraph."),
        (None, "```{tableofcontents}\n```"),
    ]
    page = (zh_edition.ZH_BOOK / "index.md").read_text()
    assert "[术语表](glossary.md)" in page and page.endswith("```{tableofcontents}\n```\n")


def test_fix_applies_the_mechanical_renderings_and_first_use_glosses(tmp_path, monkeypatch):
    english = "Each query attends to a few keys; 95 % of the seeds, a 2-D offset of `key`."
    merged = "每个 query 只关注少数几个 key；95 % 的随机种子，一个 2-D 偏移，`key` 不变。"
    unit = f"<!-- unit: abc123 | en: {zh_edition.en_hash(english)} -->\n"
    chapter = _chapter(tmp_path, monkeypatch, english, unit + merged)
    assert zh_edition.check_chapter(chapter)
    assert zh_edition.fix() == [zh_edition.translation_path(chapter)]
    text = zh_edition.translation_path(chapter).read_text()
    assert text == unit + (
        "每个查询（query）只关注少数几个键（key）；"
        "95% 的种子，一个二维偏移（offset），`key` 不变。\n"
    )
    assert zh_edition.check_chapter(chapter) == []
    assert zh_edition.fix() == []  # a fixed file stays as it is


def test_fix_leaves_what_needs_rewording_to_the_check():
    assert RULES.fixed("低于一个点的差距不作解读。") == "低于一个点的差距不作解读。"
    assert RULES.unit_problems("低于一个点的差距不作解读。")


def test_a_code_block_is_exempt_but_prose_between_directives_is_checked():
    code = "例如：\n\n```python\nquery = key + 1  # 随机种子\n```\n\n完。"
    assert RULES.unit_problems(code) == []
    between = "```{note}\n注意。\n```\n\n这里的 query 是正文。\n\n```{tip}\n提示。\n```"
    assert any("'query'" in p for p in RULES.unit_problems(between))
    inside = "```{note}\n每个随机种子。\n```"
    assert any("'随机种子'" in p for p in RULES.unit_problems(inside))
