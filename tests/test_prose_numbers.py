"""Every number a chapter's prose writes comes from somewhere the reader can see.

A number in the prose, an alt text or an inline formula must match, at the prose's precision, a
number the same chapter prints or its code sets, or a published table the package keeps, or
stand in :data:`EXEMPT` with its category (tests/prose_numbers.py says what is read and how).
The English edition is checked; the Chinese edition's number lock (tools/zh_edition.py) keeps
every number of a unit in its translation.
"""

from __future__ import annotations

import copy
import json

import pytest
from prose_numbers import (
    ROOT,
    ProseNumber,
    numbers_in,
    prose_numbers,
    rounded_index,
    traced,
    untraced,
)

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))

#: Numbers the prose may write without a printed source, by chapter, each with its category:
#: a definition, an example the text sets, arithmetic written out in the prose itself, or a
#: cited source's constant that the package does not keep.
EXEMPT: dict[str, dict[str, str]] = {
    "01_absolute_position.ipynb": {
        "195": "definition: the last of 196 slots numbered from 0",
        "200": "an example the text sets: a slot past the end of the table",
        "576": "arithmetic in the prose: $N = 24^2 = 576$",
    },
    "02_relative_index.ipynb": {"180": "definition: a half turn, 180°"},
    "03_bias_lookup.ipynb": {
        "180": "definition: a half turn, 180°",
        "128": "cited source: Hugging Face's modeling_t5.py, the maximum distance",
    },
    "appendix_training_engineering.ipynb": {
        "1.51": "arithmetic in the prose: $9 \\times 10^{-8} \\approx 1.51 \\cdot 2^{-24}$",
    },
    # Chapters 5 and 6: numbers no output prints yet (a drawn figure's positions, a rate in the
    # text) are listed one by one, to be printed by the chapter; any new one still fails.
    "05_train_swin.ipynb": {
        "0.975": "definition: the t quantile the formula names",
    },
    "06_resolution_and_beyond.ipynb": {
        "360": "arithmetic in the prose: 529 - 169 new rows",
        "132": "arithmetic in the prose: P(P - 1) at P = 12",
        "240": "arithmetic in the prose: P(P - 1) at P = 16",
    },
}
#: Chapters whose exemptions may outlive their number (none: a stale exemption is an error).
PENDING: set[str] = set()


def _report(name: str, numbers: list[ProseNumber]) -> str:
    return f"{name}: numbers in the prose that nothing in the chapter prints:\n" + "\n".join(
        f"  cell {n.cell} ({n.where}): {n.text!r} in '...{n.context}...'" for n in numbers
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_in_the_prose_is_printed_by_the_chapter_or_exempt(nb):
    exempt = EXEMPT.get(nb.name, {})
    left = [n for n in untraced(_cells(nb.name)) if n.text not in exempt]
    assert not left, _report(nb.name, left)


@pytest.mark.parametrize(
    "nb", [n for n in NOTEBOOKS if n.name not in PENDING], ids=lambda p: p.name
)
def test_every_exemption_is_still_needed(nb):
    needed = {n.text for n in untraced(_cells(nb.name))}
    stale = sorted(set(EXEMPT.get(nb.name, {})) - needed)
    assert not stale, f"{nb.name}: exemptions no number needs any more: {stale}"


def test_the_exemption_list_is_short_and_each_entry_has_a_category():
    entries = [c for chapter in EXEMPT.values() for c in chapter.values()]
    assert len(entries) <= 30
    categories = ("definition", "an example", "arithmetic", "cited source", "not printed yet")
    assert all(c.startswith(categories) for c in entries), entries


def _cells(name: str) -> list[dict]:
    return json.loads((ROOT / "book" / name).read_text(encoding="utf-8"))["cells"]


def _with_prose(cells: list[dict], old: str, new: str) -> list[dict]:
    cells = copy.deepcopy(cells)
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and old in text:
            cell["source"] = text.replace(old, new)
            return cells
    raise AssertionError(f"no Markdown cell holds {old!r}")


#: Chapter 3's alt text before it was read against the printed weights (main at 5dba5e0).
OLD_CHAPTER_3_ALT = (
    "Two 7 × 7 heat maps of the centre query's attention weights over the keys of window 0, "
    "head 2. Without the bias they are nearly flat, about 0.02 each. With the bias (slope 1) "
    "they peak at the outlined query, 0.15, with 0.06 to 0.08 for its neighbours and about 0 in "
    "the corners."
)


def test_chapter_3s_old_alt_text_is_flagged_by_chapter_cell_and_number():
    # What the alt text said before it was read against the printed weights.
    name = "03_bias_lookup.ipynb"
    cells = _cells(name)
    figure = next(
        i
        for i, c in enumerate(cells)
        if "centre query's attention"
        in c["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
    )
    cells = copy.deepcopy(cells)
    cells[figure]["metadata"]["mystnb"]["image"]["alt"] = OLD_CHAPTER_3_ALT
    # and the cell as it was: it drew the figure and printed nothing
    outputs = cells[figure]["outputs"]
    cells[figure]["outputs"] = [o for o in outputs if "image/png" in o.get("data", {})]
    flagged = {(n.cell, n.text, n.where) for n in untraced(cells)}
    assert {(figure, "0.06", "alt text"), (figure, "0.08", "alt text")} <= flagged
    assert "cell" in _report(name, untraced(cells))


def test_the_appendix_s_old_label_smoothing_sentence_is_flagged():
    name = "appendix_training_engineering.ipynb"
    cells = _with_prose(
        _cells(name),
        "`TrainConfig`'s\n  default is `label_smoothing=0.1`",
        "The CIFAR-10\n  runs use $\\varepsilon = 0.1$",
    )
    assert "0.1" in {n.text for n in untraced(cells)}


def test_an_untraceable_number_added_to_the_prose_fails_the_check():
    name = "02_relative_index.ipynb"
    cells = _cells(name)
    before = {n.text for n in untraced(cells)}
    cells = _with_prose(
        cells, "exactly like flattening", "exactly like flattening (about 37.5 % faster)"
    )
    after = {n.text for n in untraced(cells)}
    assert after - before == {"37.5"}


def test_numbers_are_read_at_the_prose_s_precision():
    index = rounded_index({(d, len(str(d).split(".")[1])) for d in map(_dec, ["0.036", "0.453"])})
    (near,) = numbers_in("neighbours at 0.04", 0, "prose")
    (far,) = numbers_in("neighbours at 0.05", 0, "prose")
    (percent,) = numbers_in("for 45 % of the patches", 0, "prose")
    assert traced(near, index) and not traced(far, index) and traced(percent, index)
    fine = rounded_index({(_dec("0.0361"), 4)})  # another quantity, printed finer
    assert not traced(near, fine)


def test_names_references_and_small_counts_are_not_read_as_quantities():
    text = (
        "ViT-B/16 on CIFAR-10 in float32 (chapter 4, §5.4, Exercise 3, Table 8, 2021); "
        "two 7 x 7 windows; `code 1234`; V6"
    )
    markdown = {"cell_type": "markdown", "metadata": {}, "source": text}
    assert prose_numbers([markdown]) == []
    (power,) = numbers_in(r"$2^{-24} \approx 5.96 \times 10^{-8}$", 0, "prose")
    assert power.text == "5.96" and power.value == _dec("5.96e-8")


def _dec(text: str):
    from decimal import Decimal

    return Decimal(text)
