"""Chapter 2 figures: each returns a Figure that shows the values it claims to show."""

import numpy as np
import pytest
import torch
from book_figures import assert_fits_the_page, assert_legible_on_a_phone
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation

from companion.figures.index_maps import plot_stacked_offset_maps
from companion.figures.relative import (
    draw_matrix,
    float_fmt,
    plot_int_matrix,
    plot_offset_bijection,
    plot_offset_components,
    plot_offset_grid,
    plot_offsets_on_window,
    plot_relative_index,
    plot_window_grid,
)
from companion.relative import (
    flatten_coordinates,
    grid_coordinates,
    pairwise_offsets,
    relative_position_index,
)

SEED_M2_INDEX = [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def red_boxes(fig: Figure) -> int:
    return sum(
        isinstance(p, Rectangle) and p.get_edgecolor()[:3] == (1, 0, 0)
        for ax in fig.axes
        for p in ax.patches
    )


def test_window_grid_labels_every_cell_with_row_col_and_token():
    fig = plot_window_grid((2, 3))
    assert isinstance(fig, Figure)
    labels = texts(fig)
    for r in range(2):
        for c in range(3):
            assert f"({r}, {c})" in labels and f"token {r * 3 + c}" in labels


def test_int_matrix_writes_every_value_in_its_cell():
    fig = plot_int_matrix(relative_position_index(2), title="index")
    assert texts(fig) == [str(v) for row in SEED_M2_INDEX for v in row]
    assert fig.axes[0].get_title() == "index"


def test_int_matrix_accepts_tick_labels_for_the_flattened_coordinates():
    flat = flatten_coordinates(grid_coordinates(2))
    fig = plot_int_matrix(flat, row_labels=["row", "col"])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["row", "col"]


def test_int_matrix_outlines_highlighted_cells():
    mask = relative_position_index(2) == 4
    assert red_boxes(plot_int_matrix(relative_position_index(2), highlight=mask)) == 4


def test_large_matrix_is_drawn_without_values_but_with_a_colour_bar():
    fig = plot_relative_index(7)
    assert texts(fig) == []
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert fig.axes[0].images[0].get_array().shape == (49, 49)


def test_relative_index_of_m2_shows_the_seed_numbers():
    assert texts(plot_relative_index(2)) == [str(v) for row in SEED_M2_INDEX for v in row]


def test_block_separators_mark_window_rows():
    fig = plot_relative_index(3)
    assert len(fig.axes[0].lines) == 4  # 2 vertical + 2 horizontal lines between 3 blocks


def test_offset_components_draws_row_and_column_parts():
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(2)))
    fig = plot_offset_components(offsets, title="offsets")
    assert len(fig.axes) == 2
    assert fig.axes[0].images[0].get_array().tolist() == offsets[..., 0].tolist()
    assert fig.axes[1].images[0].get_array().tolist() == offsets[..., 1].tolist()


def test_negative_values_get_a_diverging_scale_centred_on_zero():
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(3)))
    image = plot_offset_components(offsets, title="").axes[0].images[0]
    assert image.get_clim() == (-2.0, 2.0)


def test_offsets_on_window_show_query_minus_key():
    labels = texts(plot_offsets_on_window(2, 0))
    # Key (0, 1) seen from query (0, 0): (0, 0) - (0, 1) = (0, -1), the seed's example.
    assert "(0, -1)" in labels and "(-1, 0)" in labels and "(-1, -1)" in labels
    assert "query" in labels


def test_offsets_on_window_draws_one_arrow_per_other_key_in_small_windows():
    fig = plot_offsets_on_window(3, 4)
    assert sum(isinstance(t, Annotation) for t in fig.axes[0].texts) == 8
    big = plot_offsets_on_window(7, 10)
    assert not any(isinstance(t, Annotation) for t in big.axes[0].texts)


def test_offset_bijection_numbers_the_offsets_row_major():
    fig = plot_offset_bijection(2)
    numbers = fig.axes[0].images[0].get_array()
    assert numbers.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert "(0,-1)" in texts(fig)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["-1", "0", "1"]


def test_offset_bijection_for_a_non_square_window():
    numbers = plot_offset_bijection((2, 3)).axes[0].images[0].get_array()
    assert numbers.shape == (3, 5)
    assert numbers.flatten().tolist() == list(range(15))


def test_offset_grid_outlines_every_repeated_value():
    values = torch.tensor([[0, 1, 2], [1, 2, 3], [2, 3, 4]])
    fig = plot_offset_grid(values, 2, title="no multiply", highlight_repeats=True)
    assert red_boxes(fig) == 7  # all but the unique 0 and 4


def test_float_fmt_uses_more_decimals_for_small_values_and_never_minus_zero():
    assert float_fmt(np.array([0.5, -1.25]))(-1.25) == "-1.25"
    small = float_fmt(np.array([0.02, -0.03]))
    assert small(-0.0234) == "-0.023"
    assert small(-0.0001) == "0.000"
    assert float_fmt(torch.tensor([0.5], requires_grad=True))(0.5) == "0.50"


def test_draw_matrix_shares_limits_when_given():
    fig = Figure()
    image = draw_matrix(fig.subplots(), np.array([[0.1, 0.2]]), limits=(0.0, 1.0))
    assert image.get_clim() == (0.0, 1.0)


@pytest.mark.parametrize(
    ("matrix", "error", "match"),
    [
        (torch.zeros(4), ValueError, r"matrix must be 2-D, got shape \(4,\)"),
        ([[1, 2]], TypeError, "matrix must be a 2-D torch.Tensor or numpy array, got list"),
    ],
)
def test_int_matrix_rejects_what_is_not_a_matrix(matrix, error, match):
    with pytest.raises(error, match=match):
        plot_int_matrix(matrix)


def test_highlight_of_the_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match=r"highlight must have the matrix's shape \(2, 2\)"):
        plot_int_matrix(torch.zeros(2, 2), highlight=torch.zeros(3, 3, dtype=torch.bool))


def test_tick_labels_must_match_the_matrix():
    with pytest.raises(ValueError, match="got 3 tick labels for 2 rows/columns"):
        plot_int_matrix(torch.zeros(2, 2), row_labels=["a", "b", "c"])


def test_offset_components_rejects_a_tensor_that_is_not_pairs():
    with pytest.raises(
        ValueError, match=r"pairs must be a tensor of shape \(N, N, 2\), got \(4, 4\)"
    ):
        plot_offset_components(torch.zeros(4, 4), title="")


@pytest.mark.parametrize(("query", "error"), [(4, ValueError), (-1, ValueError), (1.0, TypeError)])
def test_offsets_on_window_rejects_a_query_outside_the_window(query, error):
    with pytest.raises(error, match="query must be"):
        plot_offsets_on_window(2, query)


def test_offset_grid_rejects_values_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"values must have shape \(2Wh-1, 2Ww-1\) = \(3, 3\)"):
        plot_offset_grid(torch.zeros(4, 4), 2, title="")


def test_window_figures_reject_a_bad_window_size():
    with pytest.raises(ValueError, match="window_size"):
        plot_window_grid(0)


@pytest.mark.parametrize("window", [2, 3, (2, 3), 7])
def test_every_chapter_2_figure_fits_the_book_column_with_legible_text(window):
    wh, ww = (window, window) if isinstance(window, int) else window
    flat = flatten_coordinates(grid_coordinates(window))
    assert_fits_the_page(plot_window_grid(window))
    assert_fits_the_page(plot_int_matrix(flat, row_labels=["row", "col"]))
    assert_fits_the_page(
        plot_offset_components(pairwise_offsets(flat), title="offsets", block_size=ww)
    )
    assert_fits_the_page(plot_offsets_on_window(window, 0))
    assert_fits_the_page(plot_relative_index(window))
    assert_fits_the_page(plot_offset_bijection(window))
    grid = torch.zeros(2 * wh - 1, 2 * ww - 1)
    assert_fits_the_page(plot_offset_grid(grid, window, title="", highlight_repeats=True))


def test_offset_components_stack_when_side_by_side_cells_would_be_too_narrow():
    small = plot_offset_components(
        pairwise_offsets(flatten_coordinates(grid_coordinates(2))), title=""
    )
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in small.axes] == [(1, 2)] * 2
    wide = plot_offset_components(
        pairwise_offsets(flatten_coordinates(grid_coordinates(4))), title=""
    )
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in wide.axes] == [(2, 1)] * 2


def test_offset_labels_run_from_minus_to_plus_window_minus_one():
    from companion.figures.relative import offset_labels

    assert offset_labels((2, 3)) == (["-1", "0", "1"], ["-2", "-1", "0", "1", "2"])
    assert offset_labels(1) == (["0"], ["0"])


@pytest.mark.parametrize("window", [2, 3])
def test_chapter_2s_wide_figures_are_legible_on_a_phone(window):
    # The figures the chapter draws at the column's full width: its text must still be 8 CSS px
    # when a 390 px phone shows them at about half that width.
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(window)))
    assert_legible_on_a_phone(plot_offset_components(offsets, title="offsets", block_size=window))
    assert_legible_on_a_phone(plot_int_matrix(relative_position_index(window), block_size=window))
    assert_legible_on_a_phone(plot_stacked_offset_maps(window))
    assert_legible_on_a_phone(plot_offset_bijection(7))
