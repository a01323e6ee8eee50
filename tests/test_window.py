"""companion.window: partition/reverse, cyclic shift, padding and the shifted-window mask."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.window import (
    MASK_VALUE,
    cyclic_shift,
    pad_to_windows,
    shifted_window_mask,
    shifted_window_regions,
    window_partition,
    window_reverse,
)

# A (B, H, W, C) map whose size is a multiple of a (Wh, Ww) window.
windowed_maps = st.tuples(
    st.integers(1, 2),  # B
    st.integers(1, 4),  # Wh
    st.integers(1, 4),  # Ww
    st.integers(1, 3),  # windows down
    st.integers(1, 3),  # windows across
    st.integers(1, 3),  # C
)


def numbered_map(b: int, h: int, w: int, c: int) -> torch.Tensor:
    return torch.arange(b * h * w * c, dtype=torch.float32).view(b, h, w, c)


@settings(max_examples=40, deadline=None)
@given(windowed_maps)
def test_reverse_undoes_partition(dims):
    b, wh, ww, nh, nw, c = dims
    x = numbered_map(b, wh * nh, ww * nw, c)
    windows = window_partition(x, (wh, ww))
    assert windows.shape == (b * nh * nw, wh, ww, c)
    assert torch.equal(window_reverse(windows, (wh, ww), wh * nh, ww * nw), x)


def test_partition_numbers_windows_row_major_image_by_image():
    b, wh, ww, nh, nw = 2, 2, 3, 2, 3
    x = numbered_map(b, wh * nh, ww * nw, 1)
    windows = window_partition(x, (wh, ww))
    for image in range(b):
        for r in range(nh):
            for col in range(nw):
                expected = x[image, r * wh : (r + 1) * wh, col * ww : (col + 1) * ww]
                assert torch.equal(windows[image * nh * nw + r * nw + col], expected)


def test_square_window_given_as_int_equals_pair():
    x = numbered_map(1, 4, 4, 2)
    assert torch.equal(window_partition(x, 2), window_partition(x, (2, 2)))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 7), st.integers(0, 7))
def test_cyclic_shift_moves_token_i_plus_s_to_i_and_inverse_undoes_it(h, w, sh, sw):
    x = numbered_map(1, h, w, 1)
    shifted = cyclic_shift(x, (sh, sw))
    for i in range(h):
        for j in range(w):
            assert shifted[0, i, j, 0] == x[0, (i + sh) % h, (j + sw) % w, 0]
    assert torch.equal(cyclic_shift(shifted, (sh, sw), inverse=True), x)


def test_pad_to_windows_adds_zeros_at_bottom_and_right_only():
    x = torch.ones(2, 5, 7, 3)
    padded = pad_to_windows(x, (3, 4))
    assert padded.shape == (2, 6, 8, 3)
    assert torch.equal(padded[:, :5, :7], x)
    assert padded[:, 5:].abs().sum() == 0 and padded[:, :, 7:].abs().sum() == 0


def test_pad_to_windows_leaves_a_fitting_map_untouched():
    x = torch.ones(1, 6, 8, 2)
    assert pad_to_windows(x, (3, 4)) is x


def brute_force_mask(height: int, width: int, window, shift) -> torch.Tensor:
    """The mask from its definition, written independently of the region labels.

    After rolling by (sh, sw), token (i, j) came from ((i + sh) % H, (j + sw) % W); it "wrapped"
    along an axis when that index went past the edge. Two tokens of one window were neighbours in
    the image (and may attend to each other) exactly when they wrapped alike along both axes.
    """
    (wh, ww), (sh, sw) = window, shift
    n = wh * ww
    masks = []
    for top in range(0, height, wh):
        for left in range(0, width, ww):
            cells = [(top + a, left + b) for a in range(wh) for b in range(ww)]
            wrapped = [(i + sh >= height, j + sw >= width) for i, j in cells]
            mask = torch.zeros(n, n)
            for q in range(n):
                for k in range(n):
                    if wrapped[q] != wrapped[k]:
                        mask[q, k] = MASK_VALUE
            masks.append(mask)
    return torch.stack(masks)


@pytest.mark.parametrize(
    ("height", "width", "window", "shift"),
    [
        (8, 8, (4, 4), (2, 2)),  # the paper's layout
        (6, 6, (3, 3), (1, 1)),  # odd window, shift 1
        (6, 12, (3, 4), (1, 2)),  # non-square window
        (4, 8, (4, 4), (0, 2)),  # one axis a single window: shift only across
        (8, 8, (4, 4), (0, 0)),  # no shift: nothing to mask
        (12, 8, (4, 4), (3, 1)),  # shift other than half a window
    ],
)
def test_mask_matches_brute_force_definition(height, width, window, shift):
    mask = shifted_window_mask(height, width, window, shift)
    assert mask.shape == (
        (height // window[0]) * (width // window[1]),
        *(2 * [window[0] * window[1]]),
    )
    assert torch.equal(mask, brute_force_mask(height, width, window, shift))


def test_mask_is_symmetric_with_zero_diagonal_and_two_values():
    mask = shifted_window_mask(8, 8, 4, 2)
    assert torch.equal(mask, mask.transpose(1, 2))
    assert torch.all(mask.diagonal(dim1=1, dim2=2) == 0)
    assert set(mask.unique().tolist()) == {0.0, MASK_VALUE}


def test_only_windows_on_the_bottom_or_right_edge_are_masked():
    mask = shifted_window_mask(12, 12, 4, 2)  # 3 x 3 windows
    masked = (mask != 0).flatten(1).any(1).view(3, 3)
    expected = torch.tensor([[False, False, True], [False, False, True], [True, True, True]])
    assert torch.equal(masked, expected)


def test_regions_label_the_three_bands_of_each_axis():
    labels = shifted_window_regions(8, 8, 4, 2)
    rows = labels[:, 0] // 3
    assert rows.tolist() == [0, 0, 0, 0, 1, 1, 2, 2]
    assert labels.unique().numel() == 9


def test_mask_value_and_device_are_honoured():
    mask = shifted_window_mask(4, 4, 2, 1, mask_value=-1e4, device="cpu")
    assert set(mask.unique().tolist()) == {0.0, -1e4}
    assert mask.dtype == torch.float32


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: window_partition(torch.zeros(4, 4, 1), 2), "x must be a .B, H, W, C. tensor"),
        (lambda: window_partition(torch.zeros(1, 5, 4, 1), 2), "must be a multiple of window"),
        (lambda: window_partition(torch.zeros(1, 4, 4, 1), 0), "window_size must be an int >= 1"),
        (lambda: window_reverse(torch.zeros(4, 2, 2, 1), 2, 5, 4), "must be a multiple of"),
        (lambda: window_reverse(torch.zeros(4, 2, 3, 1), 2, 4, 4), "windows must have shape"),
        (lambda: window_reverse(torch.zeros(3, 2, 2, 1), 2, 4, 4), r"windows.shape\[0\]=3"),
        (lambda: cyclic_shift(torch.zeros(1, 4, 4, 1), -1), "shift_size must be an int >= 0"),
        (lambda: cyclic_shift(torch.zeros(1, 4, 4, 1), (1, 2, 3)), "shift_size must be"),
        (lambda: pad_to_windows(torch.zeros(4, 4), 2), "x must be a .B, H, W, C. tensor"),
        (lambda: shifted_window_mask(6, 8, 4, 2), "must be a multiple of window"),
    ],
)
def test_bad_input_raises_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_window_size_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="window_size"):
        window_partition(torch.zeros(1, 4, 4, 1), "2")
