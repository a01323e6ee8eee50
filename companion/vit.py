"""A plain Vision Transformer: patches, a learned absolute position embedding, pre-norm
Transformer blocks with global attention (no windows, no merging) and mean pooling.

    PatchEmbed                  (B, C, H, W) -> (B, N, D)   one linear map per patch
    AbsolutePositionEmbedding   (B, N, D)    -> (B, N, D)   + pos_embed (1, N, D)
    ViTBlock x depth            (B, N, D)    -> (B, N, D)   every token attends to every token
    LayerNorm, mean over the N tokens, Linear  -> (B, num_classes)

``pos_embed`` is exactly the ``h x w`` grid of patches, one row per patch (row-major), and nothing
but that table tells the blocks where a patch was: attention and the MLP treat the tokens as a
set, and the mean over the tokens forgets their order. So permuting the patches *and* the rows of
``pos_embed`` alike leaves the output unchanged, and all the position the classifier knows went
through the embedding.

The classifier reads the mean of the tokens (global average pooling, one of the two read-outs
the ViT paper compares in its appendix) rather than a class token. A class token must first learn
to attend to the patch that matters before that patch's embedding reaches the classifier; with the
mean, every patch's output reaches it from the first step. In short CPU runs on ``grid-cell`` a
class-token version stayed near chance for most of the run while the mean-pooled one learned the
task (``results/learned-vit/predictions.md``).

The attention is ``companion.attention.WindowAttention`` with one window that holds all ``N``
tokens and no position code: Swin's window attention over a single window is plain multi-head
self-attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from companion._checks import check_positive_int, to_pair
from companion.absolute import AbsolutePositionEmbedding, PatchEmbed, Size
from companion.attention import WindowAttention
from companion.layers import Mlp, trunc_normal_


def _check_ratio(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number > 0, got {value!r} ({type(value).__name__})")
    if not value > 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


class ViTBlock(nn.Module):
    """One pre-norm Transformer block: ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``.

    ``(B, L, D)`` -> ``(B, L, D)`` for the ``L = num_tokens`` it was built for. Every token
    attends to every token (one window of ``(1, L)``), with no position term in the attention.

    Args:
        dim: ``D``; must be divisible by ``num_heads``.
        num_tokens: ``L``, tokens per image (``N`` patches here).
        num_heads: attention heads.
        mlp_ratio: the MLP's hidden width is ``int(D * mlp_ratio)``.
        qkv_bias: learn a bias in the query/key/value projection.
    """

    def __init__(
        self,
        dim: int,
        num_tokens: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_tokens = check_positive_int("num_tokens", num_tokens)
        mlp_ratio = _check_ratio("mlp_ratio", mlp_ratio)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, (1, num_tokens), num_heads, qkv_bias, position=None)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, max(1, int(dim * mlp_ratio)))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, L, D)`` -> ``(B, L, D)``."""
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


@dataclass(frozen=True)
class ViTConfig:
    """Everything a ``VisionTransformer`` is built from, checked once, here (as ``SwinConfig``).

    Attributes:
        img_size: ``S`` or ``(H, W)``: the image size it accepts (stored as a pair, as is
            ``patch_size``).
        patch_size: ``P`` or ``(ph, pw)``; must divide ``img_size``. The token grid is
            ``(h, w) = (H / ph, W / pw)``, ``N = h * w`` patches.
        num_classes: outputs of the classifier.
        embed_dim: ``D``, channels per token.
        depth: number of ``ViTBlock``.
        num_heads: attention heads per block; must divide ``embed_dim``.
        mlp_ratio: hidden width of each MLP over ``D``.
        in_chans: image channels ``C``.
    """

    img_size: Size = 32
    patch_size: Size = 4
    num_classes: int = 16
    embed_dim: int = 32
    depth: int = 4
    num_heads: int = 2
    mlp_ratio: float = 4.0
    in_chans: int = 3

    def __post_init__(self) -> None:
        # Frozen: the normalised values are written with object.__setattr__.
        object.__setattr__(self, "img_size", to_pair("img_size", self.img_size))
        object.__setattr__(self, "patch_size", to_pair("patch_size", self.patch_size))
        for name in ("num_classes", "embed_dim", "depth", "num_heads", "in_chans"):
            check_positive_int(name, getattr(self, name))
        object.__setattr__(self, "mlp_ratio", _check_ratio("mlp_ratio", self.mlp_ratio))


class VisionTransformer(nn.Module):
    """A small ViT classifier with a learned absolute position embedding (module docstring),
    built from one ``ViTConfig`` (its docstring lists every setting).

    Attributes:
        grid_size: ``(h, w)``.
        pos_embed: the position embedding, a parameter ``(1, N, D)``: row ``r * w + c`` belongs
            to the patch in row ``r``, column ``c`` (it lives in ``position.pos_embed``).
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
        self.config = c = config
        self.patch_embed = PatchEmbed(c.img_size, c.patch_size, c.in_chans, c.embed_dim)
        self.grid_size = self.patch_embed.grid_size
        n = self.patch_embed.num_patches
        self.position = AbsolutePositionEmbedding(n, c.embed_dim)
        self.blocks = nn.Sequential(
            *(ViTBlock(c.embed_dim, n, c.num_heads, c.mlp_ratio) for _ in range(c.depth))
        )
        self.norm = nn.LayerNorm(c.embed_dim)
        self.head = nn.Linear(c.embed_dim, c.num_classes)
        # The ViT/Swin recipe for the linear layers (the embedding drew its values when built):
        # small truncated-normal weights, zero biases; LayerNorm keeps (1, 0).
        for module in self.modules():
            if isinstance(module, nn.Linear):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def pos_embed(self) -> nn.Parameter:
        """The learned position embedding ``(1, N, D)``, patches in row-major order."""
        return self.position.pos_embed

    def forward_features(self, x: Tensor) -> Tensor:
        """``(B, C, H, W)`` -> normalised tokens ``(B, N, D)``, one per patch, row-major."""
        tokens = self.patch_embed(x)  # (B, N, D); checks the image's shape
        return self.norm(self.blocks(self.position(tokens)))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C, H, W)`` -> logits ``(B, num_classes)``, from the mean of the tokens."""
        return self.head(self.forward_features(x).mean(dim=1))

    def no_weight_decay(self) -> set[str]:
        """Parameters an optimiser should not decay (timm's convention for ViT, and the Swin's):
        the position embedding (``companion.train.param_groups`` reads this)."""
        return {"position.pos_embed"}
