"""The controlled variants of companion.swin: each option's defining property, and bad input."""

import pytest
import torch

from companion.attention import WindowAttention
from companion.bias_table import BiasTable
from companion.cpb import ContinuousBias
from companion.merging import PatchMerging, PoolMerging
from companion.relative import offset_to_index, pairwise_offsets, relative_position_index
from companion.rope import Rotary
from companion.swin import SwinBlock, SwinTransformer, swin_from_config
from companion.swin_configs import CONFIGS, VARIANTS, model_config, variant_overrides

TINY = CONFIGS["tiny-cpu"]


def images(batch: int = 2) -> torch.Tensor:
    return torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(0))


def strong_bias(model: SwinTransformer) -> SwinTransformer:
    """Give every bias table values of order 1 (the initial ones, std 0.02, barely matter)."""
    torch.manual_seed(1)
    for name, p in model.named_parameters():
        if name.endswith("relative_position_bias_table"):
            torch.nn.init.normal_(p.data)
    return model


def roll_by_a_window(x: torch.Tensor) -> torch.Tensor:
    """Roll the image by one stage-0 window: 4 patches of 4 pixels on each axis."""
    return torch.roll(x, shifts=(16, 16), dims=(2, 3))


@pytest.mark.parametrize(
    ("variant", "pos"),
    [
        (v, p)
        for v in VARIANTS
        for p in ("none", "abs+rel")
        if (v, p) != ("abs-offset-bias", "none")
    ],
)
def test_every_variant_gives_logits_and_trains_every_parameter(variant, pos, tiny_swin):
    model = tiny_swin(pos=pos, **VARIANTS[variant]).train()
    logits = model(images(3))
    assert logits.shape == (3, 10)
    logits.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


# --------------------------------------------------------------------------- (a) and (d): windows


def test_without_shifted_windows_no_block_shifts_or_masks(tiny_swin):
    model = tiny_swin(shifted_windows=False)
    blocks = [b for stage in model.layers for b in stage.blocks]
    assert all(b.shift_size == (0, 0) and b.attn_mask is None for b in blocks)


@pytest.mark.parametrize("variant", [{"shifted_windows": False}, {"torus": True}])
def test_without_the_shift_mask_nothing_tells_a_position_free_swin_where_the_border_is(
    variant, tiny_swin
):
    # Rolling the image by a whole window moves no token across a window or merge-group border,
    # so only the shifted windows' mask (which treats rows and columns near the map's borders
    # differently) can change the logits.
    model, masked = tiny_swin(pos="none", **variant), tiny_swin(pos="none")
    x = images()
    torch.testing.assert_close(model(roll_by_a_window(x)), model(x))
    assert not torch.allclose(masked(roll_by_a_window(x)), masked(x), atol=1e-4)


@pytest.mark.parametrize("offsets", ["signed", "magnitude"])
def test_on_a_torus_even_relative_bias_cannot_tell_where_the_border_is(offsets, tiny_swin):
    # Stage 1's single window spans the 4 x 4 map: without wrapping, its edges are the border.
    model = strong_bias(tiny_swin(pos="rel", torus=True, rel_bias_offsets=offsets))
    clipped = strong_bias(tiny_swin(pos="rel", shifted_windows=False, rel_bias_offsets=offsets))
    x = images()
    torch.testing.assert_close(model(roll_by_a_window(x)), model(x))
    assert not torch.allclose(clipped(roll_by_a_window(x)), clipped(x), atol=1e-4)


def test_torus_keeps_the_shift_drops_the_mask_and_wraps_windows_that_span_the_map(tiny_swin):
    model = tiny_swin(pos="rel", torus=True)
    shifted = model.layers[0].blocks[1]
    assert shifted.shift_size == (2, 2) and shifted.attn_mask is None
    assert (
        shifted.attn.position.wrap == (False, False)
        and model.layers[1].blocks[0].attn.position.wrap == (True,) * 2
    )


def test_wrapped_offsets_go_around_the_ring():
    index = relative_position_index((1, 4), (False, True))
    # Query 0, key 3 of a 4-token ring are neighbours: offset -3 becomes +1 ... (0 - 3 + 2) % 4 - 2.
    assert index[0, 3] == offset_to_index(0, 1, (1, 4))
    assert index[3, 0] == offset_to_index(0, -1, (1, 4))
    assert index[0, 2] == index[2, 0] == offset_to_index(0, -2, (1, 4))


@pytest.mark.parametrize("shifts", [(4, 0), (0, 4), (4, 4)])
def test_torus_blocks_with_relative_bias_commute_with_rolling_by_whole_windows(shifts):
    torch.manual_seed(0)
    blocks = torch.nn.Sequential(
        SwinBlock(8, (8, 8), 2, (4, 4), shifted=False),
        SwinBlock(8, (8, 8), 2, (4, 4), shifted=True, torus=True),
    ).eval()
    x = torch.randn(1, 8, 8, 8)
    roll = lambda t: torch.roll(t, shifts=shifts, dims=(1, 2))  # noqa: E731
    torch.testing.assert_close(blocks(roll(x)), roll(blocks(x)))


def test_a_torus_refuses_a_map_that_needs_padding():
    with pytest.raises(ValueError, match=r"torus=True needs input_resolution"):
        SwinBlock(8, (6, 8), 2, (4, 4), shifted=True, torus=True)


# --------------------------------------------------------------------------- (b): merging


def shuffle_within_groups(x: torch.Tensor) -> torch.Tensor:
    """Permute the four tokens of every 2 x 2 group of ``(B, H, W, C)`` (a 3-cycle plus a fixed
    point: top-left -> top-right -> bottom-right -> top-left, bottom-left stays)."""
    y = x.clone()
    y[:, 0::2, 1::2], y[:, 1::2, 1::2], y[:, 0::2, 0::2] = (
        x[:, 0::2, 0::2],
        x[:, 0::2, 1::2],
        x[:, 1::2, 1::2],
    )
    return y


def test_pooling_merge_ignores_where_in_its_group_a_feature_was_and_concatenation_does_not():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 4, 8)
    pool, concat = PoolMerging(8), PatchMerging(8)
    assert pool(x).shape == concat(x).shape == (2, 3, 2, 16)
    torch.testing.assert_close(pool(shuffle_within_groups(x)), pool(x))
    assert not torch.allclose(concat(shuffle_within_groups(x)), concat(x))


def test_pooling_merge_averages_each_group_and_pads_odd_maps():
    merge = PoolMerging(1)
    captured = {}
    merge.norm.register_forward_hook(lambda m, inputs, out: captured.setdefault("in", inputs[0]))
    merge(torch.tensor([[1.0, 2.0], [3.0, 6.0]]).view(1, 2, 2, 1))
    assert captured["in"].flatten().tolist() == [3.0]
    assert PoolMerging(4)(torch.randn(2, 5, 3, 4)).shape == (2, 3, 2, 8)


def test_the_model_uses_the_merge_it_is_asked_for(tiny_swin):
    assert isinstance(tiny_swin(patch_merging="avgpool").layers[1].downsample, PoolMerging)
    assert isinstance(tiny_swin().layers[1].downsample, PatchMerging)


# --------------------------------------------------------------------------- (c): |offset| bias


def test_magnitude_index_numbers_the_absolute_offsets_row_major():
    window = (3, 4)
    index = BiasTable("magnitude").index(window)
    offsets = pairwise_offsets(
        torch.stack(torch.meshgrid(*map(torch.arange, window), indexing="ij")).flatten(1)
    )
    assert torch.equal(index, offsets[..., 0].abs() * 4 + offsets[..., 1].abs())
    assert index.max().item() == 3 * 4 - 1


def test_magnitude_bias_is_symmetric_and_blind_to_the_sign_of_each_axis():
    torch.manual_seed(0)
    attn = WindowAttention(8, (4, 4), 2, position=BiasTable("magnitude"))
    assert attn.code.relative_position_bias_table.shape == (16, 2)
    bias = attn.relative_position_bias().view(2, 4, 4, 4, 4)  # (head, qy, qx, ky, kx)
    torch.testing.assert_close(bias, bias.permute(0, 3, 4, 1, 2))  # B(q, k) = B(k, q)
    # Mirroring the window left-right (or top-bottom) flips the sign of dx (dy) only.
    torch.testing.assert_close(bias, bias.flip(2, 4))
    torch.testing.assert_close(bias, bias.flip(1, 3))
    signed = WindowAttention(8, (4, 4), 2).relative_position_bias().view(2, 4, 4, 4, 4)
    assert not torch.allclose(signed, signed.permute(0, 3, 4, 1, 2))


@pytest.mark.parametrize("kind", ["signed", "magnitude"])
def test_offset_table_holds_the_bias_of_every_signed_offset(kind):
    torch.manual_seed(0)
    attn = WindowAttention(8, (3, 4), 2, position=BiasTable(kind))
    table = attn.offset_table()
    assert table.shape == (5 * 7, 2)
    # Row (dy + 2) * 7 + (dx + 3) is the bias of every (query, key) pair with that offset.
    q, k = 2 * 4 + 1, 0 * 4 + 3  # query (2, 1), key (0, 3): offset (2, -2)
    torch.testing.assert_close(
        table[(2 + 2) * 7 + (-2 + 3)], attn.relative_position_bias()[:, q, k]
    )


def test_magnitude_variant_has_one_bias_per_absolute_offset_in_every_block(tiny_swin):
    model = tiny_swin(pos="rel", rel_bias_offsets="magnitude")
    tables = [p for n, p in model.named_parameters() if n.endswith("relative_position_bias_table")]
    assert [t.shape for t in tables] == [(16, 2), (16, 2), (16, 4), (16, 4)]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"shifted_windows": "no"}, TypeError, "shifted_windows must be True or False, got 'no'"),
        ({"torus": 0}, TypeError, "torus must be True or False, got 0"),
        ({"patch_merging": "max"}, ValueError, r"patch_merging must be one of \['concat', 'avg"),
        ({"rel_bias_offsets": "abs"}, ValueError, r"rel_bias_offsets must be one of \['signed'"),
        ({"pos": "sinus"}, ValueError, r"pos must be one of \['none', 'abs'"),
    ],
)
def test_bad_variant_arguments_raise_naming_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        SwinTransformer(model_config("tiny-cpu", **kwargs))


@pytest.mark.parametrize("pos", ["none", "abs", "cpb", "rope-mixed"])
def test_a_table_variant_is_refused_for_a_position_without_a_table(pos):
    with pytest.raises(ValueError, match=f"which pos='{pos}' does not have"):
        model_config("tiny-cpu", pos=pos, rel_bias_offsets="magnitude")
    assert model_config("tiny-cpu", pos=pos, rel_bias_offsets="signed").pos.name == pos


def test_variant_names_combine_with_plus_into_model_options():
    assert variant_overrides("swin") == {}
    assert variant_overrides("pool-merge+abs-offset-bias") == {
        "patch_merging": "avgpool",
        "rel_bias_offsets": "magnitude",
    }
    assert set(VARIANTS) == {"no-shift", "pool-merge", "abs-offset-bias", "torus"}
    model = swin_from_config("tiny-cpu", **variant_overrides("no-shift+torus"))
    assert not model.config.shifted_windows and model.config.torus
    with pytest.raises(ValueError, match=r"variant must be one of \['swin', 'no-shift'"):
        variant_overrides("pool-merge+flip")


# --------------------------------------------------------------------------- with chapter 6


@pytest.mark.parametrize("method", ["bicubic", "geometric"])
def test_a_magnitude_table_resizes_as_the_signed_table_it_stands_for(method, tiny_swin):
    from companion.resize import resize_bias_table

    model = strong_bias(tiny_swin(pos="rel", rel_bias_offsets="magnitude"))
    attn = model.layers[0].blocks[0].attn
    expected = resize_bias_table(attn.offset_table().detach(), (4, 4), (6, 6), method)
    model.set_img_size(48)  # a 12 x 12 grid, then 6 x 6: room for 6 x 6 windows
    model.set_window_size(6, method=method)
    assert attn.code.relative_position_bias_table.shape == (36, 2)
    assert attn.code.relative_position_bias_table.requires_grad
    torch.testing.assert_close(attn.offset_table(), expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(attn.code.relative_position_index, BiasTable("magnitude").index((6, 6)))
    assert model(torch.randn(2, 3, 48, 48)).shape == (2, 10)


@pytest.mark.parametrize("call", [lambda m: m.set_window_size(2), lambda m: m.set_img_size(64)])
def test_a_torus_refuses_to_move_to_another_size_before_changing_anything(call, tiny_swin):
    model = tiny_swin(pos="rel", torus=True)
    with pytest.raises(ValueError, match="cannot move a model with torus=True"):
        call(model)
    assert model.img_size == (32, 32) and model.window_size == (4, 4)
    attn = model.layers[1].blocks[0].attn  # a 4 x 4 map in 4 x 4 windows: offsets wrap
    with pytest.raises(ValueError, match=r"cannot move a window with wrap=\(True, True\)"):
        attn.set_window_size(2)


@pytest.mark.parametrize("pos", ["cpb", "rope-axial", "rope-mixed"])
def test_a_torus_refuses_position_codes_that_cannot_wrap_offsets(pos, tiny_swin):
    with pytest.raises(ValueError, match=rf"torus=True wraps offsets .* got pos='{pos}'"):
        tiny_swin(pos=pos, torus=True)
    # Below the model, a wrap can only be written on a bias table: the other codes have none,
    # and a block on a torus asks its code for the wrapped version, which they refuse.
    code = ContinuousBias() if pos == "cpb" else Rotary(pos.removeprefix("rope-"))
    with pytest.raises(TypeError, match="wrap"):
        type(code)(wrap=(True, False))
    with pytest.raises(ValueError, match="only a bias table can do"):
        SwinBlock(8, (4, 4), 2, (4, 4), shifted=False, position=code, torus=True)


@pytest.mark.parametrize("variant", ["no-shift", "pool-merge"])
@pytest.mark.parametrize("pos", ["cpb", "rope-mixed"])
def test_window_and_merge_variants_combine_with_the_later_position_codes(variant, pos, tiny_swin):
    model = tiny_swin(pos=pos, **VARIANTS[variant])
    model.set_window_size(2)
    assert model(images()).shape == (2, 10)


def test_a_torus_the_maps_cannot_hold_is_refused_by_the_config_before_any_model_is_built():
    # 40 px in 4-px patches: a 10 x 10 map, not a multiple of the 4 x 4 window.
    with pytest.raises(ValueError, match=r"stage 0: a \(10, 10\) map in \(4, 4\) windows"):
        model_config("tiny-cpu", torus=True, img_size=40)
    model_config("tiny-cpu", img_size=40)  # without the torus, padding makes it fit
