"""Chapter 4 exercise solutions (companion.exercises.ch04) and the chapter's figures."""

import matplotlib.pyplot as plt
import pytest
import torch

from companion.exercises.ch04 import (
    bias_table_parameters,
    influence_map,
    mask_from_original_coordinates,
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
