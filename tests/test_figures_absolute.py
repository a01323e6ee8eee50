"""Figures of chapters 0 and 1 (companion.figures.absolute, companion.figures.intro)."""

from __future__ import annotations

import pytest
import torch
from book_figures import (
    assert_fits_the_page,
    assert_legible_on_a_phone,
    assert_nothing_sticks_out_or_overlaps,
)
from matplotlib.figure import Figure

from companion.absolute import (
    AbsolutePositionEmbedding,
    resample_position_embedding,
    sincos_2d_position_embedding,
)
from companion.attention import WindowAttention
from companion.figures.absolute import (
    image_to_numpy,
    plot_broadcast_add,
    plot_class_token_orders,
    plot_init_histogram,
    plot_patch_grid,
    plot_resampled_channel,
    plot_similarity_maps,
    plot_similarity_mosaic,
)
from companion.figures.intro import plot_permutation_demo, plot_shuffled_patches, sample_image
from companion.permutation import permutation_equivariance_check


def _titles(fig: Figure) -> str:
    """Every axes title and every (sub)figure's suptitle, joined."""
    titles = [ax.get_title() for ax in fig.axes]
    titles += [f.get_suptitle() for f in (fig, *fig.subfigs)]
    return " | ".join(titles)


def test_sample_image_is_a_square_float_image_in_unit_range():
    image = sample_image(64)
    assert image.shape == (3, 64, 64)
    assert image.dtype == torch.float32
    assert image.min() >= 0.0 and image.max() <= 1.0
    assert torch.equal(sample_image(64), image)  # deterministic
    with pytest.raises(ValueError, match="size"):
        sample_image(0)


def test_image_to_numpy_rejects_non_rgb():
    assert image_to_numpy(torch.rand(3, 4, 5)).shape == (4, 5, 3)
    with pytest.raises(ValueError, match=r"image must have shape \(3, H, W\)"):
        image_to_numpy(torch.rand(1, 4, 5))


def test_patch_grid_figure_names_grid_and_patch_matrix_shape():
    fig = plot_patch_grid(torch.rand(3, 64, 64), 16)
    assert isinstance(fig, Figure)
    assert "4x4 grid, N = 16" in _titles(fig)
    assert "(16, 768)" in _titles(fig)


def test_init_histogram_marks_the_bounds():
    fig = plot_init_histogram(AbsolutePositionEmbedding(16, 64).pos_embed)
    far = fig.axes[0]
    assert "100 std away" in far.get_title()
    assert sorted(line.get_xdata()[0] for line in far.get_lines()) == [-2.0, 2.0]


def test_broadcast_figure_has_one_row_per_image():
    fig = plot_broadcast_add(torch.randn(2, 4, 3), torch.randn(1, 4, 3))
    assert len(fig.axes) == 6
    assert "(2, 4, 3)" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="pos_embed"):
        plot_broadcast_add(torch.randn(2, 4, 3), torch.randn(4, 3))


def test_similarity_figures_have_a_panel_per_embedding_and_query():
    tables = {"sin-cos": sincos_2d_position_embedding(5, 16), "random": torch.randn(1, 25, 16)}
    fig = plot_similarity_maps(tables, 5, [(0, 0), (2, 2), (4, 1)])
    assert sum(ax.get_title().startswith("query cell") for ax in fig.axes) == 6
    fig = plot_similarity_mosaic(tables, 5)
    assert {"sin-cos", "random"} <= {ax.get_title() for ax in fig.axes}


def test_resampled_channel_figure_names_both_grids():
    before = sincos_2d_position_embedding(6, 8)[None]
    after = resample_position_embedding(before, 6, 9)
    fig = plot_resampled_channel(before, after, 6, 9, channel=1)
    assert "6x6 grid" in _titles(fig) and "9x9 grid" in _titles(fig)


def test_class_token_orders_figure_shows_both_shapes():
    fig = plot_class_token_orders(3)
    assert "(1, 4, D)" in _titles(fig) and "(1, 3, D)" in _titles(fig)


def test_shuffled_patches_figure():
    fig = plot_shuffled_patches(torch.rand(3, 32, 32), 16, torch.tensor([3, 2, 1, 0]))
    assert len(fig.axes) == 2


def test_permutation_demo_figure_states_each_verdict():
    torch.manual_seed(0)
    tokens = torch.randn(1, 4, 8)
    perm = torch.tensor([1, 3, 0, 2])
    checks = {
        "no position": permutation_equivariance_check(
            WindowAttention(8, 2, 2, position=None), tokens, perm
        ),
        "bias": permutation_equivariance_check(WindowAttention(8, 2, 2), tokens, perm),
    }
    titles = _titles(plot_permutation_demo(tokens, checks))
    assert ": equivariant" in titles and "NOT equivariant" in titles


def test_every_chapter_1_figure_fits_the_book_column_with_legible_text():
    torch.manual_seed(0)
    sincos = sincos_2d_position_embedding(14, 768)
    tables = {"sin-cos": sincos, "learned": torch.randn(1, 196, 768) * 0.02}
    for fig in (
        plot_patch_grid(torch.rand(3, 224, 224), 16),
        plot_patch_grid(torch.rand(3, 64, 64), 16),
        plot_init_histogram(AbsolutePositionEmbedding(196, 64).pos_embed),
        plot_broadcast_add(torch.randn(2, 4, 3), torch.randn(1, 4, 3)),
        plot_broadcast_add(torch.randn(3, 6, 8), torch.randn(1, 6, 8)),
        plot_class_token_orders(4),
        plot_similarity_maps(tables, 14, [(0, 0), (7, 7), (3, 10)]),
        plot_similarity_maps(tables, 14, [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]),
        plot_similarity_mosaic(tables, 14),
        plot_resampled_channel(
            sincos[None], resample_position_embedding(sincos[None], 14, 24), 14, 24, 3
        ),
    ):
        assert_fits_the_page(fig)


def test_every_chapter_0_figure_fits_the_book_column_with_legible_text():
    torch.manual_seed(0)
    tokens = torch.randn(1, 6, 8)
    perm = torch.tensor([2, 4, 0, 1, 5, 3])
    checks = {
        "no position (position=None)": permutation_equivariance_check(
            WindowAttention(8, (2, 3), 2, position=None), tokens, perm
        ),
        "relative position bias (position=BiasTable())": permutation_equivariance_check(
            WindowAttention(8, (2, 3), 2), tokens, perm
        ),
    }
    assert_fits_the_page(plot_permutation_demo(tokens, checks))
    assert_fits_the_page(plot_shuffled_patches(sample_image(224), 56, torch.randperm(16)))


def test_the_jigsaw_figure_of_chapter_0_is_legible_on_a_phone():
    torch.manual_seed(0)
    fig = plot_shuffled_patches(sample_image(224), 56, torch.randperm(16))
    assert_nothing_sticks_out_or_overlaps(fig)
    assert_legible_on_a_phone(fig)
