"""companion.swin and companion.layers: shapes, position variants, blocks, configs and bad input."""

import dataclasses

import pytest
import torch

from companion.figures.swin_summary import stage_summary
from companion.layers import DropPath, Mlp
from companion.merging import PatchMerging
from companion.swin import SwinBlock, SwinTransformer, fit_window, swin_from_config
from companion.swin_configs import CONFIGS, POS_CHOICES, SwinConfig

TINY = CONFIGS["tiny-cpu"]


def images(batch: int = 2, size=(32, 32)) -> torch.Tensor:
    return torch.randn(batch, 3, *size, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("pos", POS_CHOICES)
def test_every_pos_variant_gives_logits_of_shape_batch_by_classes(pos, tiny_swin):
    model = tiny_swin(pos=pos)
    assert model(images(3)).shape == (3, 10)
    assert model.forward_features(images(3)).shape == (3, 4, 4, 64)


@pytest.mark.parametrize(
    ("pos", "has_abs", "has_rel"),
    [("none", False, False), ("abs", True, False), ("rel", False, True), ("abs+rel", True, True)],
)
def test_position_parameters_exist_only_for_their_pos(pos, has_abs, has_rel, tiny_swin):
    names = set(tiny_swin(pos=pos).state_dict())
    assert ("absolute_pos_embed" in names) == has_abs
    tables = [n for n in names if n.endswith("relative_position_bias_table")]
    assert bool(tables) == has_rel
    if has_rel:
        assert len(tables) == sum(TINY["depths"])  # one table in every block


def test_absolute_embedding_has_one_vector_per_patch_and_small_init(tiny_swin):
    embed = tiny_swin(pos="abs").absolute.pos_embed
    assert embed.shape == (1, 8, 8, 32)
    assert 0.015 < embed.std().item() < 0.025


def test_absolute_embedding_changes_the_output(tiny_swin):
    model = tiny_swin(pos="abs")
    x = images()
    before = model(x)
    with torch.no_grad():
        model.absolute.pos_embed.add_(torch.randn_like(model.absolute.pos_embed))
    assert not torch.allclose(before, model(x))


def test_buffers_are_not_saved_in_the_state_dict(tiny_swin):
    model = tiny_swin()
    keys = model.state_dict().keys()
    assert not any("relative_position_index" in k or "attn_mask" in k for k in keys)
    buffers = dict(model.named_buffers())
    assert "layers.0.blocks.1.attn_mask" in buffers


def test_eager_and_sdpa_models_agree():
    torch.manual_seed(0)
    cfg = {**TINY, "img_size": (32, 48), "window_size": (4, 3)}
    sdpa = SwinTransformer(SwinConfig(**cfg, attn_impl="sdpa")).eval()
    eager = SwinTransformer(SwinConfig(**cfg, attn_impl="eager")).eval()
    eager.load_state_dict(sdpa.state_dict())
    x = images(size=(32, 48))
    torch.testing.assert_close(sdpa(x), eager(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("pos", POS_CHOICES)
def test_gradients_reach_every_parameter(pos, tiny_swin):
    model = tiny_swin(pos=pos).train()
    model(images()).logsumexp(-1).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_initialisation_is_deterministic_under_a_seed(tiny_swin):
    a, b = tiny_swin(pos="abs+rel"), tiny_swin(pos="abs+rel")
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name


def test_linear_layers_start_small_with_zero_bias(tiny_swin):
    fc1 = tiny_swin().layers[0].blocks[0].mlp.fc1
    assert fc1.weight.std().item() < 0.03 and torch.all(fc1.bias == 0)


def test_shifted_blocks_alternate_and_clamped_windows_never_shift():
    model = swin_from_config("cifar")
    summary = stage_summary(model)
    assert [row["resolution"] for row in summary] == [(16, 16), (8, 8), (4, 4)]
    assert [row["channels"] for row in summary] == [96, 192, 384]
    assert [row["shift"] for row in summary] == [(2, 2), (2, 2), (0, 0)]
    assert [b.shift_size for b in model.layers[0].blocks] == [(0, 0), (2, 2)]
    last = model.layers[2].blocks[1]
    assert last.window_size == (4, 4) and last.attn_mask is None
    assert sum(row["params"] for row in summary) < sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("resolution", "window", "expected"),
    [
        ((8, 8), (4, 4), ((4, 4), (2, 2))),
        ((4, 4), (7, 7), ((4, 4), (0, 0))),  # smaller map: one window, no shift
        ((3, 9), (3, 5), ((3, 5), (0, 2))),  # clamped on one axis only
        ((9, 13), (3, 5), ((3, 5), (1, 2))),  # not a multiple: padded, still shifted
    ],
)
def test_fit_window_clamps_to_the_map_and_halves_for_the_shift(resolution, window, expected):
    assert fit_window(resolution, window) == expected


def test_block_pads_a_map_that_is_not_a_multiple_of_the_window():
    torch.manual_seed(0)
    block = SwinBlock(8, (5, 7), 2, (3, 4), shifted=True).eval()
    assert block.attn_mask.shape == (2 * 2, 12, 12)  # padded map 6 x 8: 2 x 2 windows
    x = torch.randn(2, 5, 7, 8)
    assert block(x).shape == x.shape


def test_block_equals_attention_on_hand_made_windows_when_not_shifted():
    torch.manual_seed(0)
    block = SwinBlock(8, (4, 4), 2, (2, 2), shifted=False).eval()
    x = torch.randn(1, 4, 4, 8)
    y = block.norm1(x)
    top_left = y[:, :2, :2].reshape(1, 4, 8)
    expected = block.attn(top_left).view(1, 2, 2, 8)
    torch.testing.assert_close(block.window_attention(y)[:, :2, :2], expected)


def test_unshifted_block_commutes_with_rolling_by_whole_windows():
    # Rolling by a whole window only reorders the windows, and attention never looks across them.
    torch.manual_seed(0)
    block = SwinBlock(8, (8, 8), 2, (4, 4), shifted=False).eval()
    x = torch.randn(1, 8, 8, 8)
    rolled = torch.roll(x, shifts=(4, 4), dims=(1, 2))
    torch.testing.assert_close(block(rolled), torch.roll(block(x), shifts=(4, 4), dims=(1, 2)))


def test_patch_merging_concatenates_top_left_bottom_left_top_right_bottom_right():
    merge = PatchMerging(1)
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).view(1, 2, 2, 1)
    captured = {}
    merge.norm.register_forward_hook(lambda m, inputs, out: captured.setdefault("in", inputs[0]))
    out = merge(x)
    assert out.shape == (1, 1, 1, 2)
    assert captured["in"].flatten().tolist() == [1.0, 3.0, 2.0, 4.0]


def test_patch_merging_pads_odd_maps():
    assert PatchMerging(4)(torch.randn(2, 5, 3, 4)).shape == (2, 3, 2, 8)


def test_drop_path_keeps_or_drops_whole_samples_and_is_identity_in_eval():
    torch.manual_seed(0)
    drop = DropPath(0.5)
    x = torch.ones(1000, 3, 2)
    out = drop(x)
    per_sample = out.flatten(1)
    assert torch.all((per_sample == 0).all(1) | (per_sample == 2).all(1))
    assert abs(out.mean().item() - 1.0) < 0.1
    assert drop.eval()(x) is x


def test_mlp_keeps_the_channel_count():
    assert Mlp(8, 32)(torch.randn(2, 3, 8)).shape == (2, 3, 8)


def test_config_overrides_replace_entries():
    model = swin_from_config("tiny-cpu", num_classes=3, pos="none")
    assert model.config.num_classes == 3 and model.config.pos.name == "none"
    assert CONFIGS["tiny-cpu"]["num_classes"] == 10  # the shared dict is untouched


def test_config_names():
    assert {"tiny-cpu", "cifar", "swin_tiny_patch4_window7_224"} <= set(CONFIGS)
    assert swin_from_config("cifar").config.patch_size == (2, 2)


def test_no_weight_decay_lists_the_position_tables(tiny_swin):
    names = tiny_swin(pos="abs+rel").no_weight_decay()
    assert "absolute.pos_embed" in names  # parameter names (a checkpoint's: absolute_pos_embed)
    assert "layers.0.blocks.0.attn.code.relative_position_bias_table" in names
    assert not any(n.endswith("weight") for n in names)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pos": "learned"}, ValueError, "pos must be one of"),
        ({"attn_impl": "flash"}, ValueError, "attn_impl must be one of"),
        ({"img_size": 30}, ValueError, "img_size must be a multiple of patch_size"),
        ({"depths": (2, 2, 2)}, ValueError, "depths and num_heads must have one entry per stage"),
        ({"num_heads": (3, 4)}, ValueError, r"embed_dim \* 2\*\*i must be divisible by num_heads"),
        ({"depths": 2}, TypeError, "depths must be a non-empty sequence"),
        ({"num_heads": ()}, TypeError, "num_heads must be a non-empty sequence"),
        ({"depths": (2, 0)}, ValueError, r"depths\[1\] must be an int >= 1"),
        ({"window_size": 0}, ValueError, "window_size must be an int >= 1"),
        ({"img_size": "32"}, TypeError, "img_size must be an int >= 1"),
        ({"embed_dim": 0}, ValueError, "embed_dim must be an int >= 1"),
        ({"num_classes": 2.5}, TypeError, "num_classes must be an int >= 1"),
        ({"drop_path_rate": 1.0}, ValueError, r"drop_path_rate must be a float in \[0, 1\)"),
        ({"drop_path_rate": "0.1"}, TypeError, "drop_path_rate must be a float"),
        ({"mlp_ratio": 0.0}, ValueError, "mlp_ratio must give at least 1 hidden channel"),
        ({"mlp_ratio": None}, TypeError, "mlp_ratio must be a positive number"),
    ],
)
def test_bad_arguments_raise_naming_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        SwinTransformer(SwinConfig(**{**TINY, **kwargs}))


def test_unknown_config_name_lists_the_allowed_names():
    with pytest.raises(ValueError, match=r"name must be one of \[.*'tiny-cpu'.*\], got 'huge'"):
        swin_from_config("huge")


@pytest.mark.parametrize("shape", [(2, 3, 32, 48), (2, 1, 32, 32), (3, 32, 32)])
def test_input_of_the_wrong_shape_raises(shape, tiny_swin):
    with pytest.raises(ValueError, match=r"x must have shape \(B, 3, 32, 32\)"):
        tiny_swin()(torch.zeros(shape))


def test_drop_path_rejects_a_rate_outside_zero_one():
    with pytest.raises(ValueError, match="drop_prob must be a float in"):
        DropPath(1.0)
    with pytest.raises(TypeError, match="drop_prob must be a float in"):
        DropPath("0.1")


@pytest.mark.parametrize(
    ("pos", "suffixes"),
    [
        ("cpb", {"cpb.cpb_mlp.0.weight", "cpb.cpb_mlp.0.bias", "cpb.cpb_mlp.2.weight"}),
        ("rope-mixed", {"rope.freqs"}),
        ("rope-axial", set()),
    ],
)
def test_later_position_codes_live_in_every_attention_and_replace_the_table(
    pos, suffixes, tiny_swin
):
    model = tiny_swin(pos=pos)
    names = set(model.state_dict())
    assert not any(n.endswith("relative_position_bias_table") for n in names)
    assert "absolute_pos_embed" not in names
    for stage in range(len(TINY["depths"])):
        for block in range(TINY["depths"][stage]):
            prefix = f"layers.{stage}.blocks.{block}.attn."
            assert {n.removeprefix(prefix) for n in names if n.startswith(prefix)} - {
                "qkv.weight",
                "qkv.bias",
                "proj.weight",
                "proj.bias",
            } == suffixes


@pytest.mark.parametrize("pos", ["cpb", "rope-axial", "rope-mixed"])
def test_eager_and_sdpa_agree_for_the_later_position_codes(pos):
    torch.manual_seed(0)
    sdpa = swin_from_config("tiny-cpu", pos=pos).eval()
    eager = swin_from_config("tiny-cpu", pos=pos, attn_impl="eager").eval()
    eager.load_state_dict(sdpa.state_dict())
    torch.testing.assert_close(sdpa(images()), eager(images()), atol=1e-5, rtol=1e-4)


def test_a_config_is_checked_once_frozen_and_stores_pairs():
    config = SwinConfig(**{**TINY, "window_size": 4, "depths": [2, 2]})
    assert config.window_size == (4, 4) and config.depths == (2, 2) and config.img_size == (32, 32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.pos = "abs"  # type: ignore[misc]
    assert SwinTransformer(config).config is config
    with pytest.raises(TypeError, match="config must be a SwinConfig, got dict"):
        SwinTransformer(TINY)  # type: ignore[arg-type]
