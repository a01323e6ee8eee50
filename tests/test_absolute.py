"""companion.absolute: patchify, PatchEmbed, the learned and sin-cos embeddings, resampling."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from timm.layers import PatchEmbed as TimmPatchEmbed
from timm.layers import build_sincos2d_pos_embed, resample_abs_pos_embed
from timm.models.vision_transformer import VisionTransformer

from companion.absolute import (
    CLASS_TOKEN_ORDERS,
    AbsolutePositionEmbedding,
    ClassTokenPositionEmbedding,
    PatchEmbed,
    add_position_embedding,
    cosine_similarity_map,
    flatten_patch_grid,
    init_embedding_,
    patchify,
    prepend_class_token,
    resample_position_embedding,
    sincos_2d_position_embedding,
    unpatchify,
)

# --- patchify / unpatchify -----------------------------------------------------------------


def test_patchify_shape_is_batch_patches_values():
    x = torch.randn(2, 3, 32, 48)
    assert patchify(x, 16).shape == (2, 2 * 3, 3 * 16 * 16)
    assert patchify(x, (8, 16)).shape == (2, 4 * 3, 3 * 8 * 16)


def test_patchify_row_major_patch_order_and_channel_first_values():
    x = torch.arange(2 * 4 * 4, dtype=torch.float32).reshape(1, 2, 4, 4)
    patches = patchify(x, 2)
    # Patch 1 is row 0, column 1: pixels (0..1, 2..3) of channel 0 then of channel 1.
    assert patches[0, 1].tolist() == [2, 3, 6, 7, 18, 19, 22, 23]


def test_unpatchify_inverts_patchify():
    x = torch.randn(2, 3, 12, 20)
    assert torch.equal(unpatchify(patchify(x, (3, 4)), (4, 5), (3, 4)), x)


def test_patchify_rejects_sizes_that_are_not_multiples():
    with pytest.raises(
        ValueError, match=r"image size \(H, W\)=\(30, 32\) and patch_size=\(16, 16\)"
    ):
        patchify(torch.randn(1, 3, 30, 32), 16)
    with pytest.raises(ValueError, match="images must have shape"):
        patchify(torch.randn(3, 32, 32), 16)


def test_unpatchify_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="patches must have shape"):
        unpatchify(torch.randn(1, 5, 12), (2, 2), 2)


def test_flatten_patch_grid_puts_channels_last_in_row_major_order():
    grid = torch.arange(2 * 2 * 3, dtype=torch.float32).reshape(1, 2, 2, 3)  # (B, D, h, w)
    tokens = flatten_patch_grid(grid)
    assert tokens.shape == (1, 6, 2)
    assert tokens[0, 4].tolist() == [grid[0, 0, 1, 1].item(), grid[0, 1, 1, 1].item()]
    with pytest.raises(ValueError, match="grid must have shape"):
        flatten_patch_grid(torch.randn(2, 3, 4))


# --- PatchEmbed ----------------------------------------------------------------------------


def test_patch_embed_maps_images_to_tokens():
    pe = PatchEmbed(img_size=64, patch_size=16, embed_dim=32)
    assert pe.grid_size == (4, 4)
    assert pe.num_patches == 16
    assert pe(torch.randn(2, 3, 64, 64)).shape == (2, 16, 32)


def test_patch_embed_accepts_rectangular_sizes():
    pe = PatchEmbed(img_size=(32, 64), patch_size=(8, 16), in_chans=1, embed_dim=4)
    assert pe.grid_size == (4, 4)
    assert pe(torch.randn(1, 1, 32, 64)).shape == (1, 16, 4)


def test_patch_embed_is_a_linear_map_of_each_flattened_patch():
    torch.manual_seed(0)
    pe = PatchEmbed(img_size=32, patch_size=8, embed_dim=6)
    x = torch.randn(2, 3, 32, 32)
    weight = pe.proj.weight.flatten(1)  # (D, C*p*p)
    expected = patchify(x, 8) @ weight.T + pe.proj.bias
    torch.testing.assert_close(pe(x), expected, rtol=1e-5, atol=1e-5)


def test_patch_embed_matches_timm():
    torch.manual_seed(0)
    ours = PatchEmbed(img_size=48, patch_size=16, embed_dim=12)
    theirs = TimmPatchEmbed(img_size=48, patch_size=16, in_chans=3, embed_dim=12)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 3, 48, 48)
    torch.testing.assert_close(ours(x), theirs(x))


def test_patch_embed_rejects_image_size_not_a_multiple_of_patch_size():
    with pytest.raises(ValueError, match=r"img_size=\(225, 225\) and patch_size=\(16, 16\)"):
        PatchEmbed(img_size=225, patch_size=16)


def test_patch_embed_rejects_an_input_of_another_size():
    pe = PatchEmbed(img_size=64, patch_size=16, embed_dim=8)
    with pytest.raises(ValueError, match=r"\(60, 64\).*img_size=\(64, 64\).*patch_size=\(16, 16\)"):
        pe(torch.randn(1, 3, 60, 64))
    with pytest.raises(ValueError, match="img_size=\\(64, 64\\)"):
        pe(torch.randn(1, 3, 80, 80))


def test_patch_embed_rejects_wrong_channels_and_rank():
    pe = PatchEmbed(img_size=32, patch_size=16, embed_dim=8)
    with pytest.raises(ValueError, match="in_chans=3"):
        pe(torch.randn(1, 1, 32, 32))
    with pytest.raises(ValueError, match="in_chans=3"):
        pe(torch.randn(3, 32, 32))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"img_size": 0, "patch_size": 16}, ValueError, "img_size"),
        ({"img_size": 32, "patch_size": "16"}, TypeError, "patch_size"),
        ({"img_size": 32, "patch_size": 16, "in_chans": 0}, ValueError, "in_chans"),
        ({"img_size": 32, "patch_size": 16, "embed_dim": 2.5}, TypeError, "embed_dim"),
    ],
)
def test_patch_embed_rejects_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        PatchEmbed(**kwargs)


# --- AbsolutePositionEmbedding -------------------------------------------------------------


def test_absolute_embedding_parameter_shape_and_init_scale():
    torch.manual_seed(0)
    pe = AbsolutePositionEmbedding(num_patches=196, dim=768)
    assert pe.pos_embed.shape == (1, 196, 768)
    assert pe.pos_embed.requires_grad
    assert abs(pe.pos_embed.std().item() - 0.02) < 5e-4
    assert abs(pe.pos_embed.mean().item()) < 5e-4


def test_trunc_normal_bounds_are_absolute_so_nothing_is_cut_at_std_002():
    torch.manual_seed(0)
    values = init_embedding_(torch.empty(200_000))
    # A normal sample has ~4.55% of its values beyond 2 std; a 2-std truncation would have none.
    beyond = (values.abs() > 2 * 0.02).float().mean().item()
    assert 0.04 < beyond < 0.051


def test_absolute_embedding_adds_the_same_table_to_every_image():
    torch.manual_seed(0)
    pe = AbsolutePositionEmbedding(num_patches=4, dim=3)
    x = torch.randn(5, 4, 3)
    out = pe(x)
    assert out.shape == (5, 4, 3)
    for b in range(5):
        torch.testing.assert_close(out[b] - x[b], pe.pos_embed[0])
    torch.testing.assert_close(pe(torch.zeros(1, 4, 3)), pe.pos_embed.detach())


def test_absolute_embedding_gradient_reaches_the_table():
    pe = AbsolutePositionEmbedding(num_patches=4, dim=3)
    pe(torch.randn(2, 4, 3)).sum().backward()
    # d(sum)/d(pos) = batch size, for every entry.
    torch.testing.assert_close(pe.pos_embed.grad, torch.full((1, 4, 3), 2.0))


def test_absolute_embedding_rejects_other_token_counts_and_widths():
    pe = AbsolutePositionEmbedding(num_patches=16, dim=8)
    with pytest.raises(ValueError, match=r"L=16, D=8.*got \(2, 15, 8\)"):
        pe(torch.randn(2, 15, 8))
    with pytest.raises(ValueError, match=r"got \(2, 16, 9\)"):
        pe(torch.randn(2, 16, 9))
    with pytest.raises(ValueError, match=r"got \(16, 8\)"):
        pe(torch.randn(16, 8))


def test_absolute_embedding_rejects_bad_sizes():
    with pytest.raises(ValueError, match="num_patches"):
        AbsolutePositionEmbedding(0, 8)
    with pytest.raises(TypeError, match="dim"):
        AbsolutePositionEmbedding(4, 8.0)


def test_add_position_embedding_rejects_a_table_without_batch_axis():
    with pytest.raises(ValueError, match=r"pos_embed must have shape \(1, L, D\)"):
        add_position_embedding(torch.randn(2, 4, 3), torch.randn(4, 3))


# --- class token orders --------------------------------------------------------------------


def test_prepend_class_token_puts_it_first_for_every_image():
    cls = torch.randn(1, 1, 3)
    x = torch.randn(2, 4, 3)
    out = prepend_class_token(x, cls)
    assert out.shape == (2, 5, 3)
    assert torch.equal(out[:, 0], cls[0].expand(2, 3))
    assert torch.equal(out[:, 1:], x)


def test_prepend_class_token_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="cls_token must have shape"):
        prepend_class_token(torch.randn(2, 4, 3), torch.randn(1, 3))
    with pytest.raises(ValueError, match=r"D=3"):
        prepend_class_token(torch.randn(2, 4, 5), torch.randn(1, 1, 3))


@pytest.mark.parametrize(("order", "rows"), [("concat-then-add", 5), ("add-then-concat", 4)])
def test_class_token_orders_shapes(order, rows):
    m = ClassTokenPositionEmbedding(num_patches=4, dim=3, order=order)
    assert m.pos_embed.shape == (1, rows, 3)
    assert m.embedded_prefix_tokens == rows - 4
    assert m(torch.randn(2, 4, 3)).shape == (2, 5, 3)


def test_add_then_concat_gives_the_class_token_no_position():
    m = ClassTokenPositionEmbedding(num_patches=4, dim=3, order="add-then-concat")
    x = torch.randn(2, 4, 3)
    out = m(x)
    assert torch.equal(out[:, 0], m.cls_token[0].expand(2, 3))
    torch.testing.assert_close(out[:, 1:], x + m.pos_embed)


def test_concat_then_add_gives_the_class_token_slot_zero():
    m = ClassTokenPositionEmbedding(num_patches=4, dim=3, order="concat-then-add")
    x = torch.randn(2, 4, 3)
    out = m(x)
    torch.testing.assert_close(out[:, 0], (m.cls_token + m.pos_embed[:, :1])[0].expand(2, 3))
    torch.testing.assert_close(out[:, 1:], x + m.pos_embed[:, 1:])


@pytest.mark.parametrize("order", CLASS_TOKEN_ORDERS)
def test_class_token_orders_match_timm_vit(order):
    torch.manual_seed(0)
    no_embed_class = order == "add-then-concat"
    vit = VisionTransformer(
        img_size=32, patch_size=16, embed_dim=8, depth=1, num_heads=2, no_embed_class=no_embed_class
    )
    ours = ClassTokenPositionEmbedding(vit.patch_embed.num_patches, 8, order=order)
    with torch.no_grad():
        ours.cls_token.copy_(vit.cls_token)
        ours.pos_embed.copy_(vit.pos_embed)
    x = torch.randn(2, 4, 8)
    torch.testing.assert_close(ours(x), vit._pos_embed(x))


def test_class_token_order_is_validated():
    with pytest.raises(ValueError, match=r"order must be one of \['concat-then-add', 'add-then-"):
        ClassTokenPositionEmbedding(4, 3, order="add-then-cat")


def test_class_token_module_rejects_wrong_token_count():
    m = ClassTokenPositionEmbedding(4, 3)
    with pytest.raises(ValueError, match=r"N=4, D=3"):
        m(torch.randn(2, 5, 3))


# --- sin-cos -------------------------------------------------------------------------------


def test_sincos_shape_dtype_and_first_cell():
    emb = sincos_2d_position_embedding((3, 5), 16)
    assert emb.shape == (15, 16)
    assert emb.dtype == torch.float32
    # Cell (0, 0): every angle is 0, so sin = 0 and cos = 1 in both halves.
    assert emb[0].tolist() == [0.0] * 4 + [1.0] * 4 + [0.0] * 4 + [1.0] * 4


def test_sincos_first_half_encodes_rows_second_half_columns():
    emb = sincos_2d_position_embedding((4, 6), 32).reshape(4, 6, 32)
    assert torch.equal(emb[:, :, :16], emb[:, :1, :16].expand(4, 6, 16))  # same along a row
    assert torch.equal(emb[:, :, 16:], emb[:1, :, 16:].expand(4, 6, 16))  # same down a column


def test_sincos_frequencies():
    dim, temperature = 8, 100.0
    emb = sincos_2d_position_embedding((3, 1), dim, temperature=temperature)
    omega = torch.tensor([1.0, temperature ** (-1 / 2)])
    torch.testing.assert_close(emb[2, :2], torch.sin(2 * omega))
    torch.testing.assert_close(emb[2, 2:4], torch.cos(2 * omega))


def test_sincos_matches_timm_up_to_channel_block_order():
    ours = sincos_2d_position_embedding((3, 5), 16)
    theirs = build_sincos2d_pos_embed([3, 5], dim=16)
    # timm orders the four blocks (sin row, sin col, cos row, cos col); ours keeps rows first.
    blocks = theirs.reshape(15, 4, 4)[:, [0, 2, 1, 3]].reshape(15, 16)
    torch.testing.assert_close(ours, blocks)


def test_sincos_dot_product_depends_only_on_offset():
    emb = sincos_2d_position_embedding((4, 4), 16).double().reshape(4, 4, 16)
    a = emb[0, 0] @ emb[1, 2]
    b = emb[2, 1] @ emb[3, 3]  # same offset (1, 2)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"grid_size": 4, "dim": 18}, ValueError, "dim must be divisible by 4.*dim=18"),
        ({"grid_size": 4, "dim": 0}, ValueError, "dim"),
        ({"grid_size": (4, 0), "dim": 8}, ValueError, "grid_size"),
        ({"grid_size": 4, "dim": 8, "temperature": 0.0}, ValueError, "temperature"),
        ({"grid_size": 4, "dim": 8, "temperature": "1e4"}, TypeError, "temperature"),
    ],
)
def test_sincos_rejects_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sincos_2d_position_embedding(**kwargs)


# --- cosine similarity ---------------------------------------------------------------------


def test_cosine_similarity_map_shape_and_self_similarity():
    sim = cosine_similarity_map(torch.randn(1, 12, 8), (3, 4))
    assert sim.shape == (3, 4, 3, 4)
    diag = torch.stack([sim[r, c, r, c] for r in range(3) for c in range(4)])
    torch.testing.assert_close(diag, torch.ones(12))


def test_cosine_similarity_map_rejects_wrong_token_count():
    with pytest.raises(ValueError, match=r"N = 3\*4 = 12"):
        cosine_similarity_map(torch.randn(13, 8), (3, 4))


# --- resampling ----------------------------------------------------------------------------


def test_resample_is_the_identity_when_grids_are_equal():
    pos = torch.randn(1, 1 + 14 * 14, 16)
    assert torch.equal(resample_position_embedding(pos, 14, 14, num_prefix_tokens=1), pos)


def test_resample_shape_and_keeps_prefix_tokens():
    pos = torch.randn(1, 1 + 14 * 14, 16)
    out = resample_position_embedding(pos, 14, (16, 12), num_prefix_tokens=1)
    assert out.shape == (1, 1 + 16 * 12, 16)
    assert torch.equal(out[:, :1], pos[:, :1])


def test_resample_keeps_a_constant_embedding_exactly():
    pos = torch.full((1, 2 + 7 * 7, 4), 0.37)
    pos[:, :2] = torch.randn(1, 2, 4)
    out = resample_position_embedding(pos, 7, 12, num_prefix_tokens=2)
    torch.testing.assert_close(out[:, 2:], torch.full((1, 144, 4), 0.37), rtol=0, atol=1e-6)


def _ramp(h: int, w: int) -> torch.Tensor:
    """A (1, h*w, 2) embedding linear in row and column (channel 0: 0.5 r + 2 c, channel 1: -r)."""
    rows, cols = torch.meshgrid(torch.arange(h).double(), torch.arange(w).double(), indexing="ij")
    return torch.stack((0.5 * rows + 2 * cols, -rows), dim=-1).reshape(1, h * w, 2)


def test_resample_is_exact_on_a_linear_ramp_at_half_way_samples():
    # Halving the grid samples old position 2k + 0.5, half-way between two cells, where the
    # symmetric cubic kernel reproduces a linear ramp exactly (away from the clamped border).
    out = resample_position_embedding(_ramp(16, 16), 16, 8).reshape(8, 8, 2)
    src = 2 * torch.arange(8).double() + 0.5
    expected = torch.stack(
        (0.5 * src[:, None] + 2 * src[None, :], -src[:, None].expand(8, 8)), dim=-1
    )
    torch.testing.assert_close(out[1:-1, 1:-1], expected[1:-1, 1:-1])


def test_bicubic_bends_a_linear_ramp_slightly_between_samples():
    # PyTorch's bicubic kernel (a = -0.75) reproduces constants but not straight lines in
    # general: at other sample phases a ramp of slope 1 moves by up to a few hundredths.
    out = resample_position_embedding(_ramp(14, 14), 14, 16).reshape(16, 16, 2)
    src = (torch.arange(16).double() + 0.5) * 14 / 16 - 0.5  # align_corners=False
    error = (out[2:-2, 2:-2, 1] + src[2:-2, None]).abs()
    assert 0.001 < error.max().item() < 0.1


def test_resample_matches_timm_without_antialiasing():
    torch.manual_seed(0)
    pos = torch.randn(1, 1 + 14 * 14, 8)
    for new in ((24, 24), (10, 10), (16, 12)):
        ours = resample_position_embedding(pos, 14, new, num_prefix_tokens=1)
        theirs = resample_abs_pos_embed(pos, list(new), [14, 14], 1, antialias=False)
        torch.testing.assert_close(ours, theirs)


def test_resample_agrees_with_interpolating_each_channel_image():
    pos = torch.randn(1, 6 * 6, 3)
    out = resample_position_embedding(pos, 6, 9)
    channel1 = pos[0, :, 1].reshape(1, 1, 6, 6)
    expected = F.interpolate(channel1, size=(9, 9), mode="bicubic", align_corners=False)
    torch.testing.assert_close(out[0, :, 1].reshape(9, 9), expected[0, 0])


def test_resample_keeps_dtype():
    pos = torch.randn(1, 16, 4, dtype=torch.bfloat16)
    assert resample_position_embedding(pos, 4, 6).dtype == torch.bfloat16


@settings(max_examples=25, deadline=None)
@given(
    oh=st.integers(1, 8),
    ow=st.integers(1, 8),
    nh=st.integers(1, 8),
    nw=st.integers(1, 8),
    prefix=st.integers(0, 2),
)
def test_resample_output_shape_property(oh, ow, nh, nw, prefix):
    pos = torch.randn(1, prefix + oh * ow, 4)
    out = resample_position_embedding(pos, (oh, ow), (nh, nw), num_prefix_tokens=prefix)
    assert out.shape == (1, prefix + nh * nw, 4)
    assert torch.equal(out[:, :prefix], pos[:, :prefix])


@pytest.mark.parametrize(
    ("shape", "prefix", "exc", "match"),
    [
        ((1, 197, 8), 0, ValueError, r"\(1, 196, D\).*got \(1, 197, 8\)"),
        ((1, 196, 8), 1, ValueError, r"\(1, 197, D\).*num_prefix_tokens=1"),
        ((196, 8), 0, ValueError, "pos_embed must have shape"),
        ((2, 196, 8), 0, ValueError, "pos_embed must have shape"),
        ((1, 196, 8), -1, ValueError, "num_prefix_tokens must be an int >= 0"),
        ((1, 196, 8), True, TypeError, "num_prefix_tokens"),
    ],
)
def test_resample_rejects_mismatched_shapes(shape, prefix, exc, match):
    with pytest.raises(exc, match=match):
        resample_position_embedding(torch.randn(shape), 14, 16, num_prefix_tokens=prefix)


def test_resample_rejects_bad_grids():
    with pytest.raises(ValueError, match="new_grid"):
        resample_position_embedding(torch.randn(1, 4, 2), 2, (0, 3))
