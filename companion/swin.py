"""Swin Transformer: shifted-window attention, patch merging and a choice of position code.

The model is built from four parts, each a module below:

    PatchEmbed   (B, 3, H, W)   -> (B, H/p, W/p, C)        cut into p x p patches, project, norm
    SwinStage    (B, h, w, C_i) -> (B, h', w', C_{i+1})    [PatchMerging] then SwinBlocks
    final norm, global average pooling, PoolingHead -> (B, num_classes)

Feature maps stay channels-last ``(B, H, W, C)`` throughout, so windows are a reshape away
(``companion.window``). A model is built from one ``SwinConfig`` (``companion.swin_configs``),
whose ``pos`` (a ``companion.position.Position``) holds the position information: an absolute
embedding added once after the patch embedding (as in ViT) or not, and the window code every
window attention adds position with: Swin's relative position bias table (the paper's default,
``pos="rel"``), Swin V2's continuous bias (``"cpb"``, ``companion.cpb``), a 2-D rotary embedding
(``"rope-axial"``/``"rope-mixed"``, ``companion.rope``), or none.
``set_window_size`` and ``set_img_size`` move a trained model to another window or image size
(tables resized by ``companion.resize``).

Parameter and buffer names, shapes and the layout (patch merging at the *start* of stages 1, 2, ...)
follow ``timm.models.swin_transformer.SwinTransformer`` of timm 1.0, so with ``pos="rel"``
``model.load_state_dict(timm_model.state_dict())`` works and gives the same logits.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from companion import absolute
from companion._checks import check_bool, to_pair
from companion.absolute import AbsolutePositionEmbedding
from companion.attention import AttnImpl, WindowAttention
from companion.bias_table import SWIN_CODE
from companion.layers import DropPath, Mlp, trunc_normal_
from companion.merging import PatchMerging, PoolMerging, merged_resolution
from companion.position import NoPosition, WindowPosition, keep_checkpoint_names
from companion.relative import WindowSize
from companion.resize import ResizeMethod, check_resize_method
from companion.swin_configs import SwinConfig, model_config
from companion.window import (
    cyclic_shift,
    pad_to_windows,
    shifted_window_mask,
    tiles_exactly,
    window_partition,
    window_reverse,
)


def fit_window(
    resolution: tuple[int, int], window_size: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The window and shift a block uses on a ``resolution = (H, W)`` feature map.

    Returns ``((Wh, Ww), (sh, sw))``. On an axis where the map is no larger than the window, the
    window is clamped to the map (one window covers the axis) and the shift is 0: shifting a single
    window would only move tokens around inside it. Otherwise the shift is half the window.
    """
    (rh, rw), (wh, ww) = resolution, window_size
    window = (min(rh, wh), min(rw, ww))
    shift = (0 if rh <= wh else wh // 2, 0 if rw <= ww else ww // 2)
    return window, shift


class PatchEmbed(absolute.PatchEmbed):
    """ViT's patch embedding (``companion.absolute.PatchEmbed``), kept as a grid and normalised.

    ``(B, in_chans, H, W)`` -> ``(B, H/p, W/p, embed_dim)``: Swin works on the 2-D map (windows
    are cut from it), and normalises the tokens right after the projection.
    """

    def __init__(
        self, img_size: WindowSize, patch_size: WindowSize, in_chans: int, embed_dim: int
    ) -> None:
        super().__init__(img_size, patch_size, in_chans, embed_dim)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.project(x).permute(0, 2, 3, 1))


class SwinBlock(nn.Module):
    """One Swin block: (shifted-)window attention then an MLP, each with a residual connection.

    ``(B, H, W, C)`` -> ``(B, H, W, C)`` for the ``input_resolution = (H, W)`` it was built for.

    With ``shifted=True`` the map is rolled by half a window before partitioning (and back after),
    and the buffer ``attn_mask`` ``(nW, N, N)`` keeps tokens that the roll brought together from
    attending to each other. When ``H`` or ``W`` is not a multiple of the window the map is
    zero-padded at the bottom/right after the roll and cropped before rolling back, the order
    timm 1.0 uses (so its weights give the same outputs). ``position`` is what the window
    attention adds position with (``companion.attention.WindowPosition``).

    ``torus=True`` is a controlled variant that hides the map's border: the map is a torus whose
    opposite borders touch. The rolled map is attended *without* the mask, and where one window
    spans a whole axis its bias table takes offsets around that axis (``BiasTable``'s ``wrap``).
    Every token then attends within a full window and sees the same offsets wherever it is (up
    to its place inside the window grid), whereas with the mask tokens within half a window of
    any border attend within smaller regions, and a window that spans the map has edges at the
    border. It needs ``H`` and ``W`` to be multiples of the window (padding would bring a border
    back).
    """

    attn_mask: Tensor | None

    def __init__(
        self,
        dim: int,
        input_resolution: tuple[int, int],
        num_heads: int,
        window_size: tuple[int, int],
        shifted: bool,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_path: float = 0.0,
        position: WindowPosition = SWIN_CODE,
        attn_impl: AttnImpl = "sdpa",
        torus: bool = False,
    ) -> None:
        super().__init__()
        self.shifted = shifted
        self.input_resolution = input_resolution
        self.window_size, shift = fit_window(input_resolution, window_size)
        self.shift_size = shift if shifted else (0, 0)
        self.torus = check_bool("torus", torus)
        sizes = list(zip(input_resolution, self.window_size, strict=True))
        if torus and not tiles_exactly(input_resolution, self.window_size):
            raise ValueError(
                f"torus=True needs input_resolution to be a multiple of window_size, got "
                f"input_resolution={input_resolution} and window_size={self.window_size}"
            )
        if torus and position is not None:
            position = position.on_torus((sizes[0][0] == sizes[0][1], sizes[1][0] == sizes[1][1]))
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(
            dim, self.window_size, num_heads, qkv_bias, position=position, attn_impl=attn_impl
        )
        self.drop_path1 = DropPath(drop_path)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.drop_path2 = DropPath(drop_path)
        # Non-persistent: it is a function of the configuration, not a learned weight.
        self.register_buffer("attn_mask", self._shift_mask(), persistent=False)

    def _shift_mask(self) -> Tensor | None:
        """The shifted-window mask for the padded map that ``window_attention`` partitions
        (``None`` without a shift, or on a torus, where the rolled windows are neighbours)."""
        if not any(self.shift_size) or self.torus:
            return None
        padded = [
            math.ceil(r / w) * w
            for r, w in zip(self.input_resolution, self.window_size, strict=True)
        ]
        device = self.norm1.weight.device  # where the block lives (after a .to(), too)
        return shifted_window_mask(
            padded[0], padded[1], self.window_size, self.shift_size, device=device
        )

    def set_input_size(
        self,
        input_resolution: tuple[int, int],
        window_size: tuple[int, int],
        method: ResizeMethod = "geometric",
    ) -> None:
        """Run on another map size and/or window: window and shift are fitted again, the mask
        rebuilt and the attention's position code resized (``WindowAttention.set_window_size``)."""
        self.input_resolution = input_resolution
        self.window_size, shift = fit_window(input_resolution, window_size)
        self.shift_size = shift if self.shifted else (0, 0)
        self.attn.set_window_size(self.window_size, method)
        self.register_buffer("attn_mask", self._shift_mask(), persistent=False)

    def window_attention(self, x: Tensor) -> Tensor:
        """(Shifted-)window attention over a ``(B, H, W, C)`` map; returns the same shape."""
        _, h, w, c = x.shape
        shifted = any(self.shift_size)
        if shifted:
            x = cyclic_shift(x, self.shift_size)
        x = pad_to_windows(x, self.window_size)
        hp, wp = x.shape[1:3]
        windows = window_partition(x, self.window_size).view(-1, self.attn.num_tokens, c)
        windows = self.attn(windows, mask=self.attn_mask)
        x = window_reverse(windows.view(-1, *self.window_size, c), self.window_size, hp, wp)
        x = x[:, :h, :w]
        return cyclic_shift(x, self.shift_size, inverse=True) if shifted else x

    def forward(self, x: Tensor) -> Tensor:
        """``x + attention(norm1(x))``, then ``+ mlp(norm2(x))``; ``(B, H, W, C)`` in and out."""
        x = x + self.drop_path1(self.window_attention(self.norm1(x)))
        return x + self.drop_path2(self.mlp(self.norm2(x)))

    def extra_repr(self) -> str:
        return (
            f"input_resolution={self.input_resolution}, window_size={self.window_size}, "
            f"shift_size={self.shift_size}" + (", torus=True" if self.torus else "")
        )


class SwinStage(nn.Module):
    """Stage ``i`` of ``config``: an optional patch merging (``downsample``, every stage but the
    first) followed by ``config.depths[i]`` Swin blocks.

    Blocks alternate regular windows (even index) and shifted windows (odd index);
    ``shifted_windows=False`` (a controlled variant) makes every block use regular windows.
    ``input_resolution`` is the stage's input; with ``downsample`` the blocks see half of it,
    merged by ``PatchMerging`` (``patch_merging="concat"``) or ``PoolMerging`` (``"avgpool"``).
    ``drop_path``: the stochastic depth of each block.
    """

    def __init__(
        self,
        config: SwinConfig,
        i: int,
        input_resolution: tuple[int, int],
        drop_path: Sequence[float],
    ) -> None:
        super().__init__()
        dim = config.stage_dims[i]
        if i > 0:
            merge = PatchMerging if config.patch_merging == "concat" else PoolMerging
            self.downsample: nn.Module = merge(dim // 2)
            resolution = merged_resolution(input_resolution)
        else:
            self.downsample = nn.Identity()
            resolution = input_resolution
        self.output_resolution = resolution
        self.blocks = nn.Sequential(
            *(
                SwinBlock(
                    dim,
                    resolution,
                    config.num_heads[i],
                    config.window_size,
                    shifted=config.shifted_windows and j % 2 == 1,
                    mlp_ratio=config.mlp_ratio,
                    qkv_bias=config.qkv_bias,
                    drop_path=drop_path[j],
                    position=config.pos.window,
                    attn_impl=config.attn_impl,
                    torus=config.torus,
                )
                for j in range(config.depths[i])
            )
        )

    def forward(self, x: Tensor) -> Tensor:
        """``(B, h, w, C_in)`` -> ``(B, h', w', C)`` (``C_in = C / 2`` with downsampling)."""
        return self.blocks(self.downsample(x))


class PoolingHead(nn.Module):
    """Global average pooling then a linear classifier: ``(B, h, w, C)`` -> ``(B, num_classes)``."""

    def __init__(self, num_features: int, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(num_features, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x.mean(dim=(1, 2)))


class SwinTransformer(nn.Module):
    """Swin Transformer for image classification, built from one ``SwinConfig`` (its docstring
    lists every setting; ``swin_from_config`` builds a named one).

    ``forward``: ``(B, in_chans, H, W)`` -> logits ``(B, num_classes)``.
    """

    absolute: AbsolutePositionEmbedding | NoPosition

    def __init__(self, config: SwinConfig) -> None:
        super().__init__()
        if not isinstance(config, SwinConfig):
            raise TypeError(f"config must be a SwinConfig, got {type(config).__name__}")
        self.config = config
        c = config
        self.patch_embed = PatchEmbed(c.img_size, c.patch_size, c.in_chans, c.embed_dim)
        self.grid_size = self.patch_embed.grid_size
        # The absolute embedding (chapter 1's, kept as a (1, h, w, C) grid: timm's layout),
        # added once before the first stage, or NoPosition; saved as timm's absolute_pos_embed.
        self.absolute = c.pos.embedding(self.grid_size, c.embed_dim)
        keep_checkpoint_names(self, "absolute", "absolute_")

        # Stochastic depth grows linearly with the block's depth in the whole network.
        rates = torch.linspace(0.0, c.drop_path_rate, sum(c.depths)).tolist()
        stages = []
        resolution = self.grid_size
        for i, depth in enumerate(c.depths):
            start = sum(c.depths[:i])
            stage = SwinStage(c, i, resolution, rates[start : start + depth])
            stages.append(stage)
            resolution = stage.output_resolution
        self.layers = nn.Sequential(*stages)
        self.num_features = c.stage_dims[-1]
        self.norm = nn.LayerNorm(self.num_features)
        self.head = PoolingHead(self.num_features, c.num_classes)
        self.apply(_init_linear)

    @property
    def img_size(self) -> tuple[int, int]:
        """The input ``(H, W)`` (``config.img_size``; ``set_img_size`` changes it)."""
        return self.config.img_size

    @property
    def window_size(self) -> tuple[int, int]:
        """The window ``(Wh, Ww)`` before clamping (``config.window_size``)."""
        return self.config.window_size

    def forward_features(self, x: Tensor) -> Tensor:
        """``(B, in_chans, H, W)`` -> normalised last-stage features ``(B, h, w, num_features)``."""
        if tuple(x.shape[1:]) != (self.config.in_chans, *self.img_size):
            raise ValueError(
                f"x must have shape (B, {self.config.in_chans}, {self.img_size[0]}, "
                f"{self.img_size[1]}), got {tuple(x.shape)}"
            )
        x = self.absolute(self.patch_embed(x))
        return self.norm(self.layers(x))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, in_chans, H, W)`` -> logits ``(B, num_classes)``."""
        return self.head(self.forward_features(x))

    def no_weight_decay(self) -> set[str]:
        """Names of parameters that an optimiser should not decay: the absolute embedding and
        what each window code's term names (``PositionTerm.no_decay``: its table, MLP or
        frequencies, as Swin V2 and RoPE-ViT do)."""
        kept = {f"absolute.{name}" for name, _ in self.absolute.named_parameters()}
        for prefix, module in self.named_modules():
            if isinstance(module, WindowAttention):
                kept |= {
                    f"{prefix}.code.{name}"
                    for name, _ in module.code.named_parameters()
                    if name.startswith(module.code.no_decay)
                }
        return kept

    def set_window_size(self, window_size: WindowSize, method: ResizeMethod = "geometric") -> None:
        """Use another window in every stage (clamped to each map as at construction); bias
        tables are resized with ``method`` (``companion.resize.resize_bias_table``)."""
        self.set_input_size(window_size=window_size, method=method)

    def set_img_size(self, img_size: WindowSize, method: ResizeMethod = "geometric") -> None:
        """Accept images of ``img_size`` (a multiple of the patch size), keeping the window: the
        token grid grows, an absolute embedding is resampled and each stage's window, shift,
        padding and mask follow (a window clamped before may now be resized with ``method``)."""
        self.set_input_size(img_size=img_size, method=method)

    def set_input_size(
        self,
        img_size: WindowSize | None = None,
        window_size: WindowSize | None = None,
        method: ResizeMethod = "geometric",
    ) -> None:
        """Change the input size and/or window in place; the weights carry over.

        For every block the window is clamped to its feature map again (``fit_window``), the
        shift recomputed, the shifted-window mask rebuilt for the new padded map, and the
        position code told its new window: a bias table is resized with ``method``, a continuous
        bias or a rotary embedding recomputes its coordinates. An absolute embedding is
        resampled (bicubic, chapter 1) to the new patch grid. Raises ``ValueError`` before
        changing anything when the new image size is not a multiple of the patch size, or for
        a ``torus=True`` model.
        """
        method = check_resize_method(method)
        if self.config.torus:
            raise ValueError(
                "set_window_size and set_img_size cannot move a model with torus=True: its "
                "windows that span a whole map measure offsets around it, and its maps must stay "
                "multiples of the window; build the model at the new size instead"
            )
        config = dataclasses.replace(
            self.config,
            img_size=self.img_size if img_size is None else to_pair("img_size", img_size),
            window_size=self.window_size
            if window_size is None
            else to_pair("window_size", window_size),
        )  # checked again, as at construction
        patch = config.patch_size
        grid = (config.img_size[0] // patch[0], config.img_size[1] // patch[1])
        self.absolute.resize(grid)  # resampled (bicubic, chapter 1), if there is one
        self.patch_embed.img_size, self.patch_embed.grid_size = config.img_size, grid
        self.patch_embed.num_patches = grid[0] * grid[1]
        self.config, self.grid_size = config, grid
        resolution = grid
        for i, stage in enumerate(self.layers):
            assert isinstance(stage, SwinStage)
            if i > 0:
                resolution = merged_resolution(resolution)
            stage.output_resolution = resolution
            for block in stage.blocks:
                assert isinstance(block, SwinBlock)
                block.set_input_size(resolution, config.window_size, method)


def _init_linear(module: nn.Module) -> None:
    # The ViT/Swin recipe: small truncated-normal weights, zero biases; LayerNorm keeps (1, 0).
    if isinstance(module, nn.Linear):
        trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def swin_from_config(name: str, **overrides: Any) -> SwinTransformer:
    """Build the ``SwinTransformer`` of ``CONFIGS[name]``; keyword ``overrides`` replace entries
    (any field of ``SwinConfig``).

    >>> swin_from_config("tiny-cpu", pos="abs").config.pos.name
    'abs'
    """
    return SwinTransformer(model_config(name, **overrides))
