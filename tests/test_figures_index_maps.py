import matplotlib.pyplot as plt
import pytest
import torch
from book_figures import assert_fits_the_page

from companion.figures.index_maps import plot_stacked_offset_maps
from companion.relative import relative_position_index


@pytest.mark.parametrize("window", [2, 3, (2, 3)])
def test_each_query_map_read_row_by_row_is_that_querys_index_row(window):
    wh, ww = (window, window) if isinstance(window, int) else window
    index = relative_position_index(window)
    maps = index.reshape(wh, ww, wh, ww)
    for q in range(wh * ww):
        assert torch.equal(maps[q // ww, q % ww].flatten(), index[q])


@pytest.mark.parametrize("window", [2, 3, (2, 3), 7])
def test_stacked_offset_maps_draw_one_tile_per_query_and_the_matrix(window):
    wh, ww = (window, window) if isinstance(window, int) else window
    fig = plot_stacked_offset_maps(window)
    assert len(fig.axes) == wh * ww + 1
    assert_fits_the_page(fig)
    plt.close(fig)


def test_stacked_offset_maps_reject_a_bad_window_naming_it():
    with pytest.raises(ValueError, match="window_size"):
        plot_stacked_offset_maps(0)
