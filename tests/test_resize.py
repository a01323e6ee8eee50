"""companion.resize and companion.train.convert: resized bias tables, new windows and image sizes,
official checkpoints; checked against timm and against properties of the resampling."""

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.relative import bias_table_size, offset_to_index
from companion.resize import (
    geometric_positions,
    linear_interpolation_matrix,
    resize_bias_table,
    table_as_images,
)
from companion.swin import SwinTransformer, swin_from_config
from companion.swin_configs import CONFIGS, SwinConfig
from companion.train.convert import convert_official_state_dict, to_official_state_dict

pos_embed_rel = pytest.importorskip("timm.layers.pos_embed_rel")
timm_swin = pytest.importorskip("timm.models.swin_transformer")


def random_table(window, heads=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(bias_table_size(window), heads, generator=g)


@pytest.mark.parametrize(("old", "new"), [(7, 12), (4, 8), (7, 5), (2, 3)])
def test_bicubic_equals_timm_simple_resize_for_square_windows(old, new):
    table = random_table(old)
    shape = (bias_table_size(new), 3)
    expected = pos_embed_rel.resize_rel_pos_bias_table_simple(table, (new, new), shape)
    torch.testing.assert_close(resize_bias_table(table, old, new, "bicubic"), expected)


@pytest.mark.parametrize(("old", "new"), [((3, 5), (6, 9)), ((4, 2), (4, 7)), ((7, 7), (5, 3))])
def test_bicubic_equals_timm_simple_resize_for_non_square_windows(old, new):
    # timm's flat-table path assumes a square source; its (heads, rows, cols) path does not.
    table = random_table(old)
    images = table_as_images(table, old)
    sides = (2 * new[0] - 1, 2 * new[1] - 1)
    expected = pos_embed_rel.resize_rel_pos_bias_table_simple(images, new, (3, *sides))
    got = table_as_images(resize_bias_table(table, old, new, "bicubic"), new)
    torch.testing.assert_close(got, expected)


@pytest.mark.skipif(
    int(os.environ.get("TIMM_USE_SCIPY_INTERP", 0)) > 0, reason="timm then uses SciPy's cubic"
)
@pytest.mark.parametrize(
    ("old", "new"),
    [((7, 7), (12, 12)), ((4, 4), (8, 8)), ((3, 5), (6, 9)), ((4, 2), (4, 7)), ((7, 7), (5, 5))],
)
def test_geometric_equals_timm_beit_resize_square_and_non_square(old, new):
    table = random_table(old)
    shape = (bias_table_size(new), 3)
    expected = pos_embed_rel.resize_rel_pos_bias_table(table, new, shape, old_window_size=old)
    torch.testing.assert_close(
        resize_bias_table(table, old, new, "geometric"), expected, atol=1e-5, rtol=1e-5
    )


def test_geometric_keeps_short_offsets_near_their_values_while_bicubic_stretches_them():
    # A table that is the row offset itself: geometric puts offset 1 at ~1, bicubic at ~1.7.
    old, new = (7, 7), (12, 12)
    images = torch.arange(-6.0, 7.0)[:, None].expand(13, 13)
    table = images.reshape(-1, 1)
    geometric = table_as_images(resize_bias_table(table, old, new, "geometric"), new)[0]
    bicubic = table_as_images(resize_bias_table(table, old, new, "bicubic"), new)[0]
    assert geometric[11 + 1, 11] == pytest.approx(1.0, abs=0.02)
    assert geometric[11, 11] == 0 and geometric[-1, 11] == pytest.approx(6.0, abs=1e-4)
    assert abs(bicubic[11 + 1, 11].item() - 1.0) > 0.3


@settings(max_examples=30, deadline=None)
@given(
    old=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    new=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    method=st.sampled_from(["bicubic", "geometric"]),
)
def test_resizing_a_constant_table_keeps_it_constant(old, new, method):
    table = torch.full((bias_table_size(old), 2), 0.75)
    resized = resize_bias_table(table, old, new, method)
    assert resized.shape == (bias_table_size(new), 2)
    torch.testing.assert_close(resized, torch.full_like(resized, 0.75))


@settings(max_examples=30, deadline=None)
@given(old=st.integers(2, 9), new=st.integers(2, 16))
def test_geometric_positions_are_symmetric_increasing_and_reach_the_new_largest_offset(old, new):
    positions = geometric_positions(2 * old - 1, 2 * new - 1).double()
    assert positions[old - 1] == 0
    torch.testing.assert_close(positions, -positions.flip(0))
    assert (positions.diff() > 0).all()
    assert positions[old] == 1  # offset 1 keeps unit spacing
    if new > old and (1.5 ** (old - 1) - 1) / 0.5 > new - 1:  # the ratio is inside BEiT's range
        assert positions[-1].item() == pytest.approx(new - 1, abs=1e-3)


def test_interpolation_weights_sum_to_one_and_clamp_outside():
    points = torch.tensor([-2.0, 0.0, 1.0, 3.0])
    matrix = linear_interpolation_matrix(points, torch.tensor([-5.0, -1.0, 1.0, 2.0, 9.0]))
    torch.testing.assert_close(matrix.sum(1), torch.ones(5))
    assert matrix[0, 0] == 1 and matrix[-1, -1] == 1
    assert matrix[1, 0] == 0.5 and matrix[1, 1] == 0.5 and matrix[2, 2] == 1


def test_same_window_returns_the_table_unchanged():
    table = random_table(4)
    assert resize_bias_table(table, 4, (4, 4)) is table


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "nearest"}, ValueError, "method must be one of"),
        ({"old_window": 5}, ValueError, r"table must have shape .*old_window=\(5, 5\)"),
        ({"new_window": 0}, ValueError, "new_window must be"),
        ({"new_window": (2, 2.5)}, TypeError, "new_window must be"),
    ],
)
def test_bad_arguments_are_rejected_with_the_parameter_named(kwargs, error, match):
    args = {"table": random_table(4), "old_window": 4, "new_window": 6, "method": "bicubic"}
    with pytest.raises(error, match=match):
        resize_bias_table(**{**args, **kwargs})


# --- whole models -----------------------------------------------------------------------------


def images(size, batch=2):
    return torch.randn(batch, 3, *size, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize(
    ("config", "window"),
    [("tiny-cpu", 8), ("tiny-cpu", (2, 6)), ("odd", (4, 7)), ("odd", 2)],
    ids=["tiny-8", "tiny-2x6", "odd-4x7", "odd-2"],
)
def test_set_window_size_gives_timms_logits_for_the_same_weights(
    config, window, perturbed_timm_swin, odd_swin_config
):
    cfg = odd_swin_config if config == "odd" else CONFIGS[config]
    theirs = perturbed_timm_swin(cfg)
    ours = SwinTransformer(SwinConfig(**cfg)).eval()
    ours.load_state_dict(theirs.state_dict())
    theirs.set_input_size(window_size=window)
    ours.set_window_size(window, method="geometric")
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    their_buffers = dict(theirs.named_buffers())
    for name, buffer in ours.named_buffers():  # indices and masks for the new windows
        name = name.replace(".code.", ".")  # our index lives in the attention's bias term
        assert torch.equal(buffer, their_buffers[name]), name
    x = images(cfg["img_size"] if isinstance(cfg["img_size"], tuple) else (32, 32))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("size", [(48, 48), (64, 40)])
def test_set_img_size_keeps_the_window_and_gives_timms_logits(size, perturbed_timm_swin):
    cfg = CONFIGS["tiny-cpu"]
    theirs = perturbed_timm_swin(cfg)
    ours = SwinTransformer(SwinConfig(**cfg)).eval()
    ours.load_state_dict(theirs.state_dict())
    theirs.set_input_size(img_size=size, window_size=cfg["window_size"])
    ours.set_img_size(size)
    assert ours.img_size == size and ours.grid_size == (size[0] // 4, size[1] // 4)
    with torch.no_grad():
        torch.testing.assert_close(ours(images(size)), theirs(images(size)), atol=2e-5, rtol=1e-4)


def test_a_window_grown_then_shrunk_back_with_geometric_gives_the_original_table_back():
    model = swin_from_config("tiny-cpu").eval()
    table = model.layers[0].blocks[0].attn.code.relative_position_bias_table.detach().clone()
    x = images((32, 32))
    model.set_window_size(2)  # shrink: 2 x 2 windows everywhere
    assert model.layers[0].blocks[1].attn_mask.shape == (16, 4, 4)
    model.set_window_size(4)
    # The centre (offsets of a 2 x 2 window) survives the round trip exactly.
    resized = model.layers[0].blocks[0].attn.code.relative_position_bias_table
    centre = [offset_to_index(dy, dx, 4) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    torch.testing.assert_close(resized[centre], table[centre], atol=0.02 * 2, rtol=0)
    assert model(x).shape == (2, 10)


def test_set_img_size_resamples_the_absolute_embedding_to_the_new_grid():
    model = swin_from_config("tiny-cpu", pos="abs+rel").eval()
    old = model.absolute.pos_embed.detach().clone()
    model.set_img_size(64)
    assert model.absolute.pos_embed.shape == (1, 16, 16, 32)
    assert model.absolute.pos_embed.requires_grad
    model.set_img_size(32)  # bicubic down again is close to, not equal to, the original
    assert (model.absolute.pos_embed - old).abs().mean() < old.abs().mean()
    assert model(images((32, 32))).shape == (2, 10)


@pytest.mark.parametrize("pos", ["cpb", "rope-axial", "rope-mixed", "none"])
def test_other_position_codes_move_to_a_new_window_without_new_parameters(pos):
    model = swin_from_config("tiny-cpu", pos=pos).eval()
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    model.set_img_size(64)
    model.set_window_size(8)
    assert {k: v.shape for k, v in model.state_dict().items()} == shapes
    assert model(images((64, 64))).shape == (2, 10)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.set_img_size(30), ValueError, r"img_size must be a multiple of patch_size"),
        (lambda m: m.set_img_size(0), ValueError, "img_size must be"),
        (lambda m: m.set_window_size((3, 0)), ValueError, "window_size must be"),
        (lambda m: m.set_window_size("7"), TypeError, "window_size must be"),
        (lambda m: m.set_window_size(5, method="area"), ValueError, "method must be one of"),
    ],
)
def test_impossible_sizes_raise_before_changing_the_model(call, error, match):
    model = swin_from_config("tiny-cpu").eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(error, match=match):
        call(model)
    assert model.img_size == (32, 32) and model.window_size == (4, 4)
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key


# --- official checkpoints ---------------------------------------------------------------------


@pytest.mark.parametrize("pos", ["rel", "abs+rel"], ids=["ape-off", "ape-on"])
def test_official_layout_round_trips_with_strict_load_and_equal_logits(pos):
    source = swin_from_config("tiny-cpu", pos=pos).eval()
    official = to_official_state_dict(source)
    assert "layers.0.downsample.reduction.weight" in official and "head.weight" in official
    assert "layers.0.blocks.1.attn_mask" in official
    assert "layers.1.blocks.0.attn.relative_position_index" in official
    if pos == "abs+rel":
        assert official["absolute_pos_embed"].shape == (1, 64, 32)
    target = swin_from_config("tiny-cpu", pos=pos).eval()
    target.load_state_dict(convert_official_state_dict({"model": official}, target), strict=True)
    x = images((32, 32))
    with torch.no_grad():
        torch.testing.assert_close(target(x), source(x))


@pytest.mark.parametrize("method", ["bicubic", "geometric"])
def test_official_checkpoint_loads_into_a_larger_window_and_image_with_resized_tables(method):
    source = swin_from_config("tiny-cpu", pos="abs+rel").eval()
    official = to_official_state_dict(source)
    target = swin_from_config("tiny-cpu", pos="abs+rel", img_size=64, window_size=8).eval()
    target.load_state_dict(convert_official_state_dict(official, target, method), strict=True)
    source.set_img_size(64)
    source.set_window_size(8, method=method)
    x = images((64, 64))
    with torch.no_grad():
        torch.testing.assert_close(target(x), source(x))


def test_official_checkpoint_with_ape_into_a_model_without_it_names_the_fix():
    official = to_official_state_dict(swin_from_config("tiny-cpu", pos="abs+rel"))
    with pytest.raises(ValueError, match=r"ape=True .* pos='abs\+rel'"):
        convert_official_state_dict(official, swin_from_config("tiny-cpu", pos="rel"))
