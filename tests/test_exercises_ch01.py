"""Solutions to chapter 1's exercises (companion.exercises.ch01)."""

from __future__ import annotations

import pytest
import torch
from timm.models.vision_transformer import VisionTransformer

from companion.absolute import ClassTokenPositionEmbedding
from companion.exercises.ch01 import (
    fold_class_token_slot,
    resample_vit_position_embedding,
    sincos_dot_product_spread,
    vit_position_embedding_params,
)


def test_vit_b16_position_embedding_params():
    assert vit_position_embedding_params(224, 16, 768) == 197 * 768 == 151_296
    assert vit_position_embedding_params(384, 16, 768) == 577 * 768 == 443_136
    assert vit_position_embedding_params(224, 16, 768, class_token_slot=False) == 196 * 768


@pytest.mark.parametrize(("img_size", "no_embed_class"), [(224, False), (384, False), (224, True)])
def test_params_match_timm_vit(img_size, no_embed_class):
    # One block of width 768 is enough: the position embedding depends only on the patch grid.
    vit = VisionTransformer(
        img_size=img_size,
        patch_size=16,
        embed_dim=768,
        depth=1,
        num_heads=12,
        no_embed_class=no_embed_class,
    )
    expected = vit_position_embedding_params(img_size, 16, 768, class_token_slot=not no_embed_class)
    assert vit.pos_embed.numel() == expected


def test_params_reject_sizes_that_are_not_multiples():
    with pytest.raises(ValueError, match=r"img_size=\(225, 225\), patch_size=\(16, 16\)"):
        vit_position_embedding_params(225, 16, 768)


def test_resample_vit_b16_from_224_to_384():
    pos = torch.randn(1, 197, 768)
    out = resample_vit_position_embedding(pos, 16, 224, 384)
    assert out.shape == (1, 577, 768)
    assert torch.equal(out[:, 0], pos[:, 0])


def test_resample_vit_rejects_sizes_that_are_not_multiples():
    with pytest.raises(
        ValueError, match=r"new_img_size must be a multiple of patch_size=\(16, 16\)"
    ):
        resample_vit_position_embedding(torch.randn(1, 197, 8), 16, 224, 300)


def test_folding_the_class_token_slot_keeps_outputs_and_saves_one_row():
    torch.manual_seed(0)
    vit_style = ClassTokenPositionEmbedding(9, 6, order="concat-then-add")
    folded = fold_class_token_slot(vit_style)
    assert folded.order == "add-then-concat"
    assert folded.pos_embed.shape == (1, 9, 6)
    x = torch.randn(3, 9, 6)
    torch.testing.assert_close(folded(x), vit_style(x))
    n_params = sum(p.numel() for p in vit_style.parameters())
    assert sum(p.numel() for p in folded.parameters()) == n_params - 6


def test_folding_rejects_an_already_folded_module():
    with pytest.raises(ValueError, match=r"module\.order must be 'concat-then-add'"):
        fold_class_token_slot(ClassTokenPositionEmbedding(4, 4, order="add-then-concat"))


def test_sincos_dot_products_depend_only_on_offset():
    assert sincos_dot_product_spread((5, 7), 32) < 1e-4
    assert sincos_dot_product_spread(14, 768) < 1e-4


@pytest.mark.parametrize(("grid", "dim"), [(8, 32), (14, 768), ((3, 5), 16)])
def test_sincos_steps_along_a_row_and_a_column_are_equally_similar(grid, dim):
    from companion.exercises.ch01 import sincos_neighbour_similarities

    right, below = sincos_neighbour_similarities(grid, dim)
    assert right == pytest.approx(below, abs=1e-6)
    assert right < 1


def test_sincos_neighbour_similarities_need_two_rows_and_two_columns():
    from companion.exercises.ch01 import sincos_neighbour_similarities

    with pytest.raises(ValueError, match="grid_size must be at least 2 x 2"):
        sincos_neighbour_similarities((1, 4), 8)
