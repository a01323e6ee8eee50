"""companion.vit: the plain ViT whose learned position embedding chapter 1 reads."""

import pytest
import torch
from torch import nn

from companion.permutation import shuffle_patches
from companion.vit import VisionTransformer, ViTBlock, ViTConfig

SMALL = dict(img_size=16, patch_size=4, num_classes=5, embed_dim=8, depth=2, num_heads=2)


def small_vit(seed: int = 0, **overrides) -> VisionTransformer:
    torch.manual_seed(seed)
    return VisionTransformer(ViTConfig(**{**SMALL, **overrides})).eval()


def test_shapes_from_image_to_tokens_to_logits():
    model = small_vit()
    x = torch.rand(3, 3, 16, 16)
    assert model.grid_size == (4, 4)
    assert model.forward_features(x).shape == (3, 16, 8)  # (B, N, D)
    assert model(x).shape == (3, 5)


def test_a_non_square_grid():
    model = small_vit(img_size=(8, 16))
    assert model.grid_size == (2, 4) and model.pos_embed.shape == (1, 8, 8)
    assert model(torch.rand(2, 3, 8, 16)).shape == (2, 5)


def test_the_position_embedding_is_one_parameter_of_shape_1_n_d():
    model = small_vit()
    assert isinstance(model.pos_embed, nn.Parameter) and model.pos_embed.requires_grad
    assert model.pos_embed.shape == (1, 16, 8)
    named = dict(model.named_parameters())
    assert named["position.pos_embed"] is model.pos_embed
    assert model.no_weight_decay() <= named.keys()
    assert 0.01 < float(model.pos_embed.detach().std()) < 0.03  # trunc_normal_(std=0.02)


def test_the_defaults_are_the_run_s_model():
    model = VisionTransformer(ViTConfig())
    assert model.grid_size == (8, 8) and model.pos_embed.shape == (1, 64, 32)
    assert len(model.blocks) == 4


def test_permuting_the_patches_and_the_embedding_alike_changes_nothing():
    model = small_vit()
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(2))
    shuffled = shuffle_patches(x, 4, perm)  # patch i of shuffled is patch perm[i] of x
    with torch.no_grad():
        model.pos_embed.normal_(std=1.0)  # a trained-sized embedding, whose effect is visible
        before = model(x)
        changed = model(shuffled)  # the patches moved, the embedding did not
        model.pos_embed.copy_(model.pos_embed[:, perm])  # now the embedding moves with them
        after = model(shuffled)
    assert torch.allclose(before, after, atol=1e-5)
    assert (before - changed).abs().max() > 100 * (before - after).abs().max() + 1e-4


def test_without_a_position_embedding_the_patches_order_is_invisible():
    model = small_vit()
    with torch.no_grad():
        model.pos_embed.zero_()
        x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(3))
        perm = torch.randperm(16, generator=torch.Generator().manual_seed(4))
        assert torch.allclose(model(x), model(shuffle_patches(x, 4, perm)), atol=1e-5)


def test_a_block_keeps_the_shape_and_attends_globally():
    torch.manual_seed(0)
    block = ViTBlock(dim=8, num_tokens=6, num_heads=2).eval()
    x = torch.randn(2, 6, 8)
    assert block(x).shape == (2, 6, 8)
    with torch.no_grad():
        y = block(x)
        x2 = x.clone()
        x2[:, 5] += torch.randn(2, 8)  # change the last token only
        changed = (block(x2) - y).abs().amax(dim=(0, 2))
    assert (changed > 1e-6).all()  # every token sees it: one window over all of them


def test_a_block_refuses_another_token_count():
    block = ViTBlock(dim=8, num_tokens=6, num_heads=2)
    with pytest.raises(ValueError, match="N=6"):
        block(torch.randn(1, 5, 8))


def test_an_image_of_another_size_is_refused_naming_img_size():
    with pytest.raises(ValueError, match=r"img_size=\(16, 16\)"):
        small_vit()(torch.rand(1, 3, 20, 20))


@pytest.mark.parametrize(
    ("override", "error", "match"),
    [
        ({"depth": 0}, ValueError, "depth must be an int >= 1, got 0"),
        ({"num_classes": 2.0}, TypeError, "num_classes must be an int >= 1"),
        ({"embed_dim": 6, "num_heads": 4}, ValueError, "dim must be divisible by num_heads=4"),
        ({"patch_size": 5}, ValueError, "img_size must be a multiple of patch_size"),
        ({"mlp_ratio": 0}, ValueError, "mlp_ratio must be a number > 0, got 0"),
        ({"mlp_ratio": "4"}, TypeError, "mlp_ratio must be a number > 0, got '4'"),
        ({"mlp_ratio": True}, TypeError, "mlp_ratio must be a number > 0, got True"),
    ],
)
def test_bad_arguments_are_refused_naming_the_parameter(override, error, match):
    with pytest.raises(error, match=match):
        VisionTransformer(ViTConfig(**{**SMALL, **override}))


def test_a_block_refuses_a_bad_token_count():
    with pytest.raises(ValueError, match="num_tokens must be an int >= 1, got 0"):
        ViTBlock(dim=8, num_tokens=0, num_heads=2)


def test_gradients_reach_the_embedding_and_every_block():
    model = small_vit().train()
    loss = model(torch.rand(4, 3, 16, 16)).logsumexp(dim=1).mean()
    loss.backward()
    assert model.pos_embed.grad is not None and model.pos_embed.grad.abs().sum() > 0
    for name, p in model.named_parameters():
        assert p.grad is not None, name
