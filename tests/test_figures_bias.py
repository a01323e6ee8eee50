"""Chapter 3 figures and the illustrative table they are drawn with."""

import math

import pytest
import torch
from book_figures import assert_fits_the_page
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from companion.figures.bias import (
    illustrative_distance_table,
    plot_bias_table,
    plot_lookup,
    plot_query_attention,
    plot_query_bias,
)
from companion.relative import (
    bias_table_size,
    index_to_offset,
    lookup_bias,
    make_bias_table,
    relative_position_index,
)


def red_boxes(ax) -> list[tuple[float, float]]:
    return [
        p.get_xy()
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_edgecolor()[:3] == (1, 0, 0)
    ]


def test_distance_table_is_minus_slope_times_offset_length():
    table = illustrative_distance_table((2, 3), [0.0, 0.5, 2.0])
    assert table.shape == (bias_table_size((2, 3)), 3)
    for row in range(table.shape[0]):
        dy, dx = index_to_offset(row, (2, 3))
        for h, slope in enumerate([0.0, 0.5, 2.0]):
            assert table[row, h].item() == pytest.approx(-slope * math.hypot(dy, dx))


def test_distance_table_is_zero_at_the_centre_and_largest_there():
    table = illustrative_distance_table(7, [1.0])
    centre = (bias_table_size(7) - 1) // 2
    assert table[centre, 0] == 0 and table.argmax() == centre


@pytest.mark.parametrize(
    ("slopes", "match"),
    [([], "non-empty sequence"), ("12", "non-empty sequence"), ([1.0, "a"], "only numbers")],
)
def test_distance_table_rejects_bad_slopes(slopes, match):
    with pytest.raises(TypeError, match=f"slopes must .*{match}"):
        illustrative_distance_table(2, slopes)


def test_bias_table_figure_has_one_panel_and_colour_bar_per_head():
    torch.manual_seed(0)
    fig = plot_bias_table(make_bias_table(2, 3), 2, title="init")
    assert isinstance(fig, Figure)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len([ax for ax in visible if ax.get_title().startswith("head")]) == 3
    assert len(visible) == 6  # three heatmaps, three colour bars


def test_bias_table_figure_reshapes_each_head_onto_the_offset_grid():
    table = illustrative_distance_table((2, 3), [1.0, 2.0])
    fig = plot_bias_table(table, (2, 3), title="")
    assert fig.axes[1].images[0].get_array().tolist() == table[:, 1].view(3, 5).tolist()
    assert red_boxes(fig.axes[0]) == [(1.5, 0.5)]  # the (0, 0) offset sits at column 2, row 1


def test_bias_table_figure_rejects_a_table_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"table must be a tensor of shape .*=9, num_heads"):
        plot_bias_table(torch.zeros(10, 2), 2, title="")


def test_query_bias_places_one_row_of_b_on_the_window():
    table = illustrative_distance_table(3, [1.0])
    bias = lookup_bias(table, relative_position_index(3))
    fig = plot_query_bias(bias, 3, query=0, title="")
    assert fig.axes[0].images[0].get_array().tolist() == bias[0, 0].view(3, 3).tolist()
    assert red_boxes(fig.axes[0]) == [(-0.5, -0.5)]


def test_query_bias_rejects_a_bias_of_the_wrong_shape_and_a_bad_query():
    with pytest.raises(ValueError, match=r"bias must be a tensor of shape \(num_heads, N=4, N=4\)"):
        plot_query_bias(torch.zeros(2, 9, 9), 2, 0, title="")
    with pytest.raises(ValueError, match=r"query must be a token number in \[0, 3\]"):
        plot_query_bias(torch.zeros(2, 4, 4), 2, 4, title="")


def test_lookup_figure_shows_index_table_column_and_gathered_bias():
    torch.manual_seed(0)
    table = make_bias_table(2, 2)
    index = relative_position_index(2)
    fig = plot_lookup(index, table, head=1)
    index_ax, table_ax, bias_ax = fig.axes
    assert index_ax.images[0].get_array().tolist() == index.tolist()
    assert table_ax.images[0].get_array().flatten().tolist() == table[:, 1].tolist()
    assert bias_ax.images[0].get_array().tolist() == lookup_bias(table, index)[1].tolist()
    # The table column and B share one colour scale: equal colours mean equal values.
    assert table_ax.images[0].get_clim() == bias_ax.images[0].get_clim()


@pytest.mark.parametrize(
    ("index", "table", "head", "match"),
    [
        (torch.zeros(4, 3, dtype=torch.long), torch.zeros(9, 1), 0, "index must be a square"),
        (relative_position_index(2), torch.zeros(5, 1), 0, r"T > index.max\(\)=8"),
        (relative_position_index(2), torch.zeros(9, 1), 1, r"head must be an int in \[0, 0\]"),
    ],
)
def test_lookup_figure_rejects_bad_input(index, table, head, match):
    with pytest.raises(ValueError, match=match):
        plot_lookup(index, table, head)


def test_attention_maps_share_one_colour_scale():
    uniform = torch.full((9,), 1 / 9)
    peaked = torch.softmax(-torch.arange(9.0), 0)
    fig = plot_query_attention({"a": uniform, "b": peaked}, 3, 4, title="")
    clims = {ax.images[0].get_clim() for ax in fig.axes if ax.images and ax.get_title()}
    assert clims == {(0.0, float(peaked.max()))}
    assert [ax.get_title() for ax in fig.axes[:2]] == ["a", "b"]
    # One number format for all panels, so equal weights read the same everywhere.
    decimals = {len(t.get_text().split(".")[1]) for ax in fig.axes[:2] for t in ax.texts}
    assert decimals == {2}


def test_attention_maps_reject_bad_input():
    with pytest.raises(TypeError, match="maps must be a non-empty mapping"):
        plot_query_attention({}, 3, 0, title="")
    with pytest.raises(ValueError, match=r"maps\['a'\] must be a tensor of shape \(N=9,\)"):
        plot_query_attention({"a": torch.zeros(4)}, 3, 0, title="")


@pytest.mark.parametrize(("window", "heads"), [(2, 3), (3, 4), ((2, 3), 2), (7, 4), (7, 1)])
def test_every_chapter_3_figure_fits_the_book_column_with_legible_text(window, heads):
    torch.manual_seed(0)
    table = make_bias_table(window, heads)
    index = relative_position_index(window)
    bias = lookup_bias(table, index).detach()
    n = index.shape[0]
    assert_fits_the_page(plot_bias_table(table, window, title="a fresh table"))
    assert_fits_the_page(plot_query_bias(bias, window, query=n // 2, title="one query"))
    maps = {"uniform": torch.full((n,), 1 / n), "softmax(B)": bias[0, n // 2].softmax(-1)}
    assert_fits_the_page(plot_query_attention(maps, window, n // 2, title="attention"))
    if n <= 9:  # the lookup figure writes every value: it is meant for small windows
        assert_fits_the_page(plot_lookup(index, table, head=heads - 1))


def test_annotated_tables_get_cells_wide_enough_for_their_values():
    torch.manual_seed(0)
    fig = plot_bias_table(make_bias_table(3, 2), 3, title="", annotate=True)
    fig.canvas.draw()
    for ax in (ax for ax in fig.axes if ax.images):
        left, right = ax.transData.transform([[0, 0], [1, 0]])[:, 0]
        widest = max(t.get_window_extent().width for t in ax.texts)
        assert widest <= 0.85 * (right - left)


def test_dense_offset_grids_label_every_other_offset_and_keep_zero():
    fig = plot_bias_table(illustrative_distance_table(7, [1.0, 2.0, 3.0, 4.0]), 7, title="")
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_visible()]
    assert shown == ["-6", "-4", "-2", "0", "2", "4", "6"]
