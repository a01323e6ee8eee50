import pytest
import torch

from companion.window import shifted_pair_offsets, wrapped_offset_errors

MAPS = [(8, 8, 4, 2), (56, 56, 7, 3), (6, 12, (3, 4), (1, 2)), (8, 12, (4, 6), (2, 0))]


@pytest.mark.parametrize(("height", "width", "window", "shift"), MAPS)
def test_every_kept_pair_has_its_true_image_offset(height, width, window, shift):
    offsets = shifted_pair_offsets(height, width, window, shift)
    assert offsets.agrees[offsets.kept].all()


@pytest.mark.parametrize(("height", "width", "window", "shift"), MAPS)
def test_the_mask_keeps_exactly_the_pairs_whose_in_window_offset_is_true(
    height, width, window, shift
):
    offsets = shifted_pair_offsets(height, width, window, shift)
    assert torch.equal(offsets.kept, offsets.agrees)


def test_masked_pairs_would_be_off_by_a_whole_map_height_or_width():
    errors = wrapped_offset_errors(shifted_pair_offsets(8, 12, 4, 2))
    assert errors.tolist() == [
        [-8, -12], [-8, 0], [-8, 12], [0, -12], [0, 12], [8, -12], [8, 0], [8, 12]
    ]  # fmt: skip


def test_without_a_shift_every_pair_is_kept_and_true():
    offsets = shifted_pair_offsets(8, 8, 4, 0)
    assert offsets.kept.all() and offsets.agrees.all()
    assert wrapped_offset_errors(offsets).numel() == 0


def test_summary_counts_kept_and_masked_pairs():
    summary = shifted_pair_offsets(8, 8, 4, 2).summary()
    assert summary == (
        "kept pairs: 576, with their true offset: 576\nmasked pairs: 448, with their true offset: 0"
    )
