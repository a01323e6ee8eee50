import pytest

from companion.paper_reading import mark_gap, marked_gaps_markdown, table4_gap


def test_sub_point_gaps_are_put_in_parentheses():
    assert mark_gap(0.3) == "(+0.3)"
    assert mark_gap(-0.96) == "-1.0"
    assert mark_gap(-2.1) == "-2.1"
    assert mark_gap(0.0) == "(+0.0)"


def test_table4_gap_reads_a_minus_b_rounded_to_the_table():
    assert table4_gap("relative (default)", "none", "ade20k_miou") == 2.3
    assert table4_gap("absolute + relative", "relative (default)", "coco_ap_box") == -0.3


def test_table4_gap_names_a_bad_row_or_metric():
    with pytest.raises(ValueError, match="a: 'rel' is not a row of Table 4"):
        table4_gap("rel", "none", "ade20k_miou")
    with pytest.raises(ValueError, match="metric: 'top1' is not one of"):
        table4_gap("none", "none", "top1")


def test_marked_gaps_markdown_marks_each_cell():
    text = marked_gaps_markdown((("absolute + relative", "relative (default)"),))
    assert (
        "| absolute + relative − relative (default) | (+0.0) | (+0.0) | (-0.3) | (-0.3) | -2.1 |"
        in text
    )
    assert "one run per row" in text
