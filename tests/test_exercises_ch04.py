"""Chapter 4 exercise solutions (companion.exercises.ch04) and the chapter's figures."""

import matplotlib.pyplot as plt
import pytest
import torch
from book_figures import assert_fits_the_page, assert_nothing_sticks_out_or_overlaps

from companion.exercises.ch04 import (
    bias_table_parameters,
    influence_map,
    mask_from_original_coordinates,
    masked_pair_weights,
    naive_shifted_window_count,
)
from companion.figures.swin import (
    plot_cyclic_shift,
    plot_patch_merging,
    plot_shifted_window_masks,
    plot_window_partition,
)
from companion.swin import swin_from_config
from companion.window import shifted_window_mask


@pytest.mark.parametrize(
    ("size", "window", "shift", "expected"),
    [
        ((8, 8), 4, 2, 9),  # the paper's example: 3 x 3 windows instead of 2 x 2
        ((8, 8), 4, 0, 4),  # no shift: the regular partition
        ((56, 56), 7, 3, 81),  # Swin-T stage 0: 9 x 9 instead of 8 x 8
        ((6, 12), (3, 4), (1, 2), 3 * 4),
    ],
)
def test_naive_shifted_partition_needs_more_windows(size, window, shift, expected):
    assert naive_shifted_window_count(*size, window, shift) == expected


@pytest.mark.parametrize(
    ("size", "window", "shift"),
    [((8, 8), 4, 2), ((6, 6), 3, 1), ((6, 12), (3, 4), (1, 2)), ((12, 8), 4, 3), ((8, 8), 4, 0)],
)
def test_mask_from_original_coordinates_equals_the_region_mask(size, window, shift):
    expected = shifted_window_mask(*size, window, shift)
    assert torch.equal(mask_from_original_coordinates(*size, window, shift), expected)


@pytest.fixture(scope="module")
def first_stage():
    torch.manual_seed(0)
    return swin_from_config("tiny-cpu").layers[0].blocks.eval()  # 8 x 8 map, window 4, shift 2


def quadrant(rows: slice, cols: slice) -> torch.Tensor:
    expected = torch.zeros(8, 8, dtype=torch.bool)
    expected[rows, cols] = True
    return expected


def test_one_block_sees_only_its_own_window(first_stage):
    x = torch.randn(1, 8, 8, 32)
    assert torch.equal(influence_map(first_stage[0], x, (3, 3)), quadrant(slice(0, 4), slice(0, 4)))


def test_regular_then_shifted_block_reaches_across_window_borders(first_stage):
    x = torch.randn(1, 8, 8, 32)
    assert influence_map(first_stage, x, (3, 3)).all()  # its shifted window spans all 4 windows


def test_a_corner_token_gains_nothing_from_the_shift(first_stage):
    # (0, 0) lands in the wrapped corner of the last shifted window: the mask keeps it with the
    # tokens of its own original window only.
    x = torch.randn(1, 8, 8, 32)
    assert torch.equal(influence_map(first_stage, x, (0, 0)), quadrant(slice(0, 4), slice(0, 4)))


@pytest.mark.parametrize("attn_impl", ["sdpa", "eager"])
def test_a_masked_pair_keeps_a_subnormal_weight_that_never_reaches_the_block_input(attn_impl):
    torch.manual_seed(0)
    stage = swin_from_config("tiny-cpu", attn_impl=attn_impl).layers[0].blocks.eval()
    masked, allowed = masked_pair_weights(stage[1], torch.randn(4, 16, 32))
    # At the attention layer: every masked weight is a float32 subnormal, not 0 ...
    assert masked.numel() == 2 * 448 and (masked > 0).all()
    assert masked.max() < torch.finfo(torch.float32).tiny < allowed.min()
    # ... and at the blocks' input the masked tokens' gradient is exactly 0: the maps need no
    # threshold, for a window token (16 tokens) and one whose shifted window spans all 64.
    x = torch.randn(1, 8, 8, 32)
    assert int(influence_map(stage, x, (0, 0)).sum()) == 16
    assert int(influence_map(stage, x, (3, 3)).sum()) == 64


def test_masked_pair_weights_refuses_a_block_without_a_mask_or_wrong_windows(first_stage):
    with pytest.raises(ValueError, match="shifted block"):
        masked_pair_weights(first_stage[0], torch.randn(4, 16, 32))
    with pytest.raises(ValueError, match=r"windows must have shape \(4, 16, C\)"):
        masked_pair_weights(first_stage[1], torch.randn(2, 16, 32))


def test_swin_t_has_23322_relative_biases():
    model = swin_from_config("swin_tiny_patch4_window7_224")
    assert bias_table_parameters(model) == 169 * (2 * 3 + 2 * 6 + 6 * 12 + 2 * 24)
    assert bias_table_parameters(swin_from_config("tiny-cpu", pos="none")) == 0


@pytest.mark.parametrize(
    "draw",
    [
        lambda: plot_window_partition(4, 6, (2, 3)),
        lambda: plot_window_partition(5, 7, (3, 4)),
        lambda: plot_cyclic_shift(8, 8, 4, 2),
        lambda: plot_cyclic_shift(6, 12, (3, 4), (1, 2)),
        lambda: plot_shifted_window_masks(8, 8, 4, 2),
        lambda: plot_patch_merging(4, 4),
        lambda: plot_patch_merging(5, 3),
    ],
)
def test_figures_draw(draw):
    fig = draw()
    assert fig.axes
    plt.close(fig)


def test_partition_figure_lists_the_windows_tokens():
    fig = plot_window_partition(4, 6, (2, 3))
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert texts[:6] == ["0", "1", "2", "6", "7", "8"]  # window 0 holds the top-left 2 x 3 block
    plt.close(fig)


def test_patch_merging_figure_writes_the_concatenation_order():
    fig = plot_patch_merging(4, 4)
    assert fig.axes[1].texts[0].get_text() == "[0, 4, 1, 5]"
    plt.close(fig)


@pytest.mark.parametrize(
    ("draw", "error", "match"),
    [
        (lambda: plot_window_partition(0, 4, 2), ValueError, "height must be an int >= 1"),
        (lambda: plot_cyclic_shift(8, 8, 4, -1), ValueError, "shift_size must be an int >= 0"),
        (lambda: plot_shifted_window_masks(6, 8, 4, 2), ValueError, "multiple of window_size"),
        (lambda: plot_patch_merging(4, "4"), TypeError, "width must be an int >= 1"),
        (lambda: naive_shifted_window_count(8, 8, 4, -2), ValueError, "shift_size must be"),
    ],
)
def test_bad_arguments_raise_naming_the_parameter(draw, error, match):
    with pytest.raises(error, match=match):
        draw()


#: Every call chapter 4 makes, and larger maps that need the stacked layouts.
CHAPTER_4_FIGURES = {
    "partition 4x6": lambda: plot_window_partition(4, 6, (2, 3)),
    "partition 5x7": lambda: plot_window_partition(5, 7, (3, 4)),
    "partition 6x9": lambda: plot_window_partition(6, 9, 3),
    "cyclic shift 8x8": lambda: plot_cyclic_shift(8, 8, 4, 2),
    "cyclic shift 6x12": lambda: plot_cyclic_shift(6, 12, (3, 4), (1, 2)),
    "cyclic shift 14x14": lambda: plot_cyclic_shift(14, 14, 7, 3),
    "masks 8x8": lambda: plot_shifted_window_masks(8, 8, 4, 2),
    "masks 6x12": lambda: plot_shifted_window_masks(6, 12, (3, 4), (1, 2)),
    "merging 4x4": lambda: plot_patch_merging(4, 4),
    "merging 5x3": lambda: plot_patch_merging(5, 3),
    "merging 6x8": lambda: plot_patch_merging(6, 8),
}


@pytest.mark.parametrize("name", list(CHAPTER_4_FIGURES))
def test_every_chapter_4_figure_fits_the_book_column_with_legible_text(name):
    fig = CHAPTER_4_FIGURES[name]()
    assert_fits_the_page(fig)
    assert_nothing_sticks_out_or_overlaps(fig)


@pytest.mark.parametrize("name", list(CHAPTER_4_FIGURES))
def test_written_numbers_fit_inside_their_cells(name):
    fig = CHAPTER_4_FIGURES[name]()
    fig.canvas.draw()
    for ax in fig.axes:
        if not ax.texts:
            continue
        left, right = ax.transData.transform([[0, 0], [1, 0]])[:, 0]  # one cell is one unit
        widest = max(t.get_window_extent().width for t in ax.texts)
        assert widest <= 0.85 * abs(right - left)
    plt.close(fig)


def test_two_grids_that_do_not_fit_side_by_side_are_stacked():
    side_by_side = plot_window_partition(4, 6, (2, 3))
    stacked = plot_window_partition(5, 7, (3, 4))
    (map_ax, list_ax), (map_below, list_below) = side_by_side.axes, stacked.axes
    assert list_ax.get_position().x0 > map_ax.get_position().x1
    assert list_below.get_position().y1 < map_below.get_position().y0
    plt.close(side_by_side)
    plt.close(stacked)


@pytest.mark.parametrize(
    ("size", "window", "shift", "expected"),
    [(56, 7, 3, (15, 64)), (28, 7, 3, (7, 16)), (14, 7, 3, (3, 4)), (8, 4, 2, (3, 4))],
)
def test_only_the_last_window_row_and_column_need_the_mask(size, window, shift, expected):
    from companion.exercises.ch04 import windows_with_masked_pairs

    assert windows_with_masked_pairs(size, size, window, shift) == expected
