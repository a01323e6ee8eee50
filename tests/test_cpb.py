"""companion.cpb: Swin V2's log-spaced coordinates and continuous bias, step by step and against
timm's SwinV2 WindowAttention for the same MLP weights."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.cpb import (
    ContinuousPositionBias,
    log_space,
    log_spaced_coordinates,
    normalise_offsets,
    offset_grid,
)
from companion.relative import bias_table_size, index_to_offset

swin_v2 = pytest.importorskip("timm.models.swin_transformer_v2")


def timm_attention(window, heads, pretrained=(0, 0)):
    torch.manual_seed(0)
    return swin_v2.WindowAttention(16, window, heads, pretrained_window_size=pretrained)


def timm_bias(attn):
    # timm computes the bias inside forward (next to cosine attention); these are its steps.
    table = attn.cpb_mlp(attn.relative_coords_table).view(-1, attn.num_heads)
    n = attn.window_size[0] * attn.window_size[1]
    bias = table[attn.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
    return 16 * torch.sigmoid(bias)


@pytest.mark.parametrize(
    ("window", "pretrained"),
    [((7, 7), None), ((3, 5), None), ((12, 12), (7, 7)), ((1, 4), None), ((8, 6), (4, 3))],
)
def test_coordinate_table_equals_timms_relative_coords_table(window, pretrained):
    theirs = timm_attention(window, 2, pretrained or (0, 0))
    ours = log_spaced_coordinates(window, pretrained)
    torch.testing.assert_close(ours, theirs.relative_coords_table[0])


@pytest.mark.parametrize(("window", "pretrained"), [((7, 7), None), ((6, 4), (3, 2))])
def test_bias_equals_timms_for_the_same_mlp_weights(window, pretrained):
    theirs = timm_attention(window, 3, pretrained or (0, 0))
    ours = ContinuousPositionBias(window, 3, pretrained)
    ours.cpb_mlp.load_state_dict(theirs.cpb_mlp.state_dict(), strict=True)
    with torch.no_grad():
        torch.testing.assert_close(ours(), timm_bias(theirs))


def test_state_dict_keys_are_timms_cpb_mlp_keys_and_buffers_are_not_saved():
    module = ContinuousPositionBias(4, 3)
    assert list(module.state_dict()) == ["cpb_mlp.0.weight", "cpb_mlp.0.bias", "cpb_mlp.2.weight"]
    assert module.cpb_mlp[0].weight.shape == (512, 2) and module.cpb_mlp[2].weight.shape == (3, 512)
    assert module().shape == (3, 16, 16)


def test_steps_compose_to_the_coordinates_and_rows_follow_the_bias_table_order():
    window = (3, 4)
    grid = offset_grid(window)
    assert grid.shape == (5, 7, 2)
    flat = grid.reshape(-1, 2)
    assert [tuple(map(int, flat[r])) for r in range(bias_table_size(window))] == [
        index_to_offset(r, window) for r in range(bias_table_size(window))
    ]
    normed = normalise_offsets(grid, window)
    assert normed[..., 0].abs().max() == 8 and normed[..., 1].abs().max() == 8
    torch.testing.assert_close(log_space(normed), log_spaced_coordinates(window))


@settings(max_examples=40, deadline=None)
@given(st.floats(-50, 50), st.floats(-50, 50))
def test_log_space_is_odd_increasing_and_compresses_large_values(a, b):
    x = torch.tensor([a, b], dtype=torch.float64)
    y = log_space(x)
    torch.testing.assert_close(log_space(-x), -y)
    if a < b:
        assert y[0] <= y[1]
    assert (y.abs() <= x.abs() + 1e-12).all() or x.abs().max() < 1e-9  # |log2(1+x)|/3 <= |x|


def test_log_space_of_the_largest_offset_is_log2_9_over_3():
    assert log_space(torch.tensor(8.0)).item() == pytest.approx(math.log2(9) / 3)


def test_bias_lies_between_0_and_16_and_is_shared_by_pairs_with_one_offset():
    module = ContinuousPositionBias((3, 3), 2)
    bias = module().detach()
    assert (bias > 0).all() and (bias < 16).all()
    # tokens 0 -> 1 and 4 -> 5 both have offset (0, -1)
    torch.testing.assert_close(bias[:, 0, 1], bias[:, 4, 5])


def test_set_window_size_keeps_each_offsets_coordinate_by_default():
    module = ContinuousPositionBias(4, 2)
    old = module.relative_coords_table.clone()
    module.set_window_size(8)
    assert module.pretrained_window_size == (4, 4)
    assert module().shape == (2, 64, 64)
    torch.testing.assert_close(module.relative_coords_table[4:11, 4:11], old)
    assert module.relative_coords_table.abs().max() > old.abs().max()  # the new offsets reach out


def test_set_window_size_without_keep_scale_renormalises_like_timm():
    ours = ContinuousPositionBias(4, 2)
    theirs = timm_attention((4, 4), 2)
    ours.set_window_size(8, keep_scale=False)
    theirs.set_window_size((8, 8))
    torch.testing.assert_close(ours.relative_coords_table, theirs.relative_coords_table[0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"window_size": 0, "num_heads": 2}, ValueError, "window_size must be"),
        ({"window_size": 4, "num_heads": 0}, ValueError, "num_heads must be"),
        (
            {"window_size": 4, "num_heads": 2, "pretrained_window_size": "7"},
            TypeError,
            "pretrained_window_size must be",
        ),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        ContinuousPositionBias(**kwargs)
