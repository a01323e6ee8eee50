import pytest

from companion.experiments.paper import (
    POS_TO_SWINV2_ROW,
    SWINV2_TABLE1,
    SWINV2_TABLE1_COLUMNS,
    SWINV2_TABLE1_WINDOWS,
    VIT_TABLE8,
    VIT_TABLE8_COLUMNS,
    swinv2_table1_markdown,
    vit_table8_markdown,
)
from companion.experiments.paper_reading import (
    mark_gap,
    marked_gaps_markdown,
    rope_vit_reading_markdown,
    swinv2_table1_reading_markdown,
    vit_table8_gaps_markdown,
)

V1 = "parameterized bias table (Swin V1)"


def test_sub_point_gaps_are_put_in_parentheses():
    assert mark_gap(0.3) == "(+0.3)"
    assert mark_gap(-0.96) == "-1.0"
    assert mark_gap(-2.1) == "-2.1"
    assert mark_gap(0.0) == "(+0.0)"


def test_table4_gaps_read_a_minus_b_rounded_to_the_table():
    text = marked_gaps_markdown((("relative (default)", "none"),))
    assert "| relative (default) − none | +1.2 | (+0.7) | +1.3 | +1.1 | +2.3 |" in text


def test_marked_gaps_name_a_bad_row():
    with pytest.raises(ValueError, match="a: 'rel' is not a row of Table 4"):
        marked_gaps_markdown((("rel", "none"),))
    with pytest.raises(ValueError, match="b: 'abs' is not a row of Table 4"):
        marked_gaps_markdown((("none", "abs"),))


def test_marked_gaps_markdown_marks_each_cell():
    text = marked_gaps_markdown((("absolute + relative", "relative (default)"),))
    assert (
        "| absolute + relative − relative (default) | (+0.0) | (+0.0) | (-0.3) | (-0.3) | -2.1 |"
        in text
    )
    assert "one number per row and no spread" in text


def test_vit_table8_has_the_papers_four_rows_three_columns_and_na_cells():
    assert list(VIT_TABLE8) == ["none", "1-D", "2-D", "relative (1-D)"]
    assert all(list(cells) == list(VIT_TABLE8_COLUMNS) for cells in VIT_TABLE8.values())
    missing = {(r, c) for r, cells in VIT_TABLE8.items() for c, v in cells.items() if v is None}
    assert missing == {
        (row, col)
        for row in ("none", "relative (1-D)")
        for col in ("every layer", "every layer, shared")
    }
    text = vit_table8_markdown()
    for value in ("0.61382", "0.64206", "0.63964", "0.64292", "0.64001", "0.64046", "0.64022"):
        assert value in text
    assert "| relative (1-D) | 0.64032 | N/A | N/A |" in text
    assert "arXiv:2010.11929" in text and "Table 8" in text


def test_no_position_embedding_is_the_minimum_of_vits_default_column():
    default = {row: cells["default"] for row, cells in VIT_TABLE8.items()}
    assert min(default, key=lambda row: default[row]) == "none"


def test_vit_table8_reads_a_clear_gap_to_none_and_an_unreadable_spread():
    text = vit_table8_gaps_markdown()
    assert "| 1-D − none | +2.8 | +2.6 | +2.9 |" in text
    assert "| relative (1-D) − none | +2.6 | N/A | N/A |" in text
    assert "cells with a position embedding: (+0.3)" in text


def test_swinv2_table1_holds_three_biases_and_every_column_of_the_paper():
    assert list(SWINV2_TABLE1) == [
        "parameterized bias table (Swin V1)",
        "linear-spaced CPB",
        "log-spaced CPB",
    ]
    for cells in SWINV2_TABLE1.values():
        assert list(cells) == list(SWINV2_TABLE1_COLUMNS)
    assert set(POS_TO_SWINV2_ROW.values()) <= set(SWINV2_TABLE1)
    assert "arXiv:2111.09883" in swinv2_table1_markdown()


def test_swinv2_bias_table_is_lowest_at_every_larger_window_without_fine_tuning():
    for window in SWINV2_TABLE1_WINDOWS:
        column = {row: cells[f"imagenet_w{window}"] for row, cells in SWINV2_TABLE1.items()}
        assert min(column, key=column.__getitem__) == "parameterized bias table (Swin V1)"
    table = [SWINV2_TABLE1["parameterized bias table (Swin V1)"][f"imagenet_w{w}"] for w in
             SWINV2_TABLE1_WINDOWS]  # fmt: skip
    assert table == sorted(table, reverse=True)  # falls with every step in window


@pytest.mark.parametrize(
    ("row", "window", "fine_tuned", "gain"),
    [  # the source's own bracketed gains over the bias table, which the transcription leaves out
        ("linear-spaced CPB", 12, False, 2.6),
        ("linear-spaced CPB", 24, False, 8.9),
        ("log-spaced CPB", 24, False, 10.4),
        ("log-spaced CPB", 24, True, 1.0),
        ("linear-spaced CPB", 16, True, 0.3),
    ],
)
def test_swinv2_transcription_reproduces_the_sources_bracketed_gains(row, window, fine_tuned, gain):
    column = f"imagenet_w{window}_ft" if fine_tuned else f"imagenet_w{window}"
    assert round(SWINV2_TABLE1[row][column] - SWINV2_TABLE1[V1][column], 1) == gain


def test_swinv2_reading_marks_sub_point_gaps_and_reads_the_large_drop():
    text = swinv2_table1_reading_markdown()
    assert f"| {V1}: change from W8 | -2.3 / +1.0 | -4.5 / +1.3 | -8.5 / +1.5 | -13.0 / +1.5 |" in (
        text
    )
    assert "| log-spaced CPB: change from W8 | (+0.6) / +1.4 |" in text
    assert "| log-spaced CPB − linear-spaced CPB | (+0.4) / (+0.3) |" in text
    assert "one number per cell and no spread" in text


def test_rope_vit_reading_puts_the_rotary_codes_sub_point_advantage_in_parentheses():
    text = rope_vit_reading_markdown()
    assert "| `rel`: change | -2.3 |" in text  # a readable loss of every code
    assert "| `rope-mixed` − `rel`: change | (+0.4) |" in text  # 0.4 points: not read
    assert "| `rope-axial` − `rel`: change | (+0.2) |" in text
