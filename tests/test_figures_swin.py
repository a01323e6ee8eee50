"""Chapter 4's figures (companion.figures.swin), drawn as the chapter draws them, fit the book's
column and stay legible on a 390 px phone (at least 8 CSS px of text once scaled to its column)."""

import pytest
from book_figures import (
    assert_fits_the_page,
    assert_legible_on_a_phone,
    assert_nothing_sticks_out_or_overlaps,
)

from companion.figures.swin import (
    plot_cyclic_shift,
    plot_patch_merging,
    plot_shifted_window_masks,
    plot_window_partition,
)

CHAPTER_4 = {
    "window partition 4x6": lambda: plot_window_partition(4, 6, (2, 3)),
    "cyclic shift": lambda: plot_cyclic_shift(8, 8, 4, 2),
    "shifted window masks": lambda: plot_shifted_window_masks(8, 8, 4, 2),
    "window partition 5x7": lambda: plot_window_partition(5, 7, (3, 4)),
    "patch merging": lambda: plot_patch_merging(4, 4),
}


@pytest.mark.parametrize("name", CHAPTER_4)
def test_chapter_4s_figures_fit_the_column_and_are_legible_on_a_phone(name):
    fig = CHAPTER_4[name]()
    assert_fits_the_page(fig)
    assert_nothing_sticks_out_or_overlaps(fig)
    assert_legible_on_a_phone(fig)
