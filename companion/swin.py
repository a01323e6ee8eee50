"""Swin Transformer: shifted-window attention, patch merging and a choice of position code.

The model is built from four parts, each a module below:

    PatchEmbed   (B, 3, H, W)   -> (B, H/p, W/p, C)        cut into p x p patches, project, norm
    SwinStage    (B, h, w, C_i) -> (B, h', w', C_{i+1})    [PatchMerging] then SwinBlocks
    final norm, global average pooling, PoolingHead -> (B, num_classes)

Feature maps stay channels-last ``(B, H, W, C)`` throughout, so windows are a reshape away
(``companion.window``). ``pos`` chooses the position information: ``"rel"`` (the paper's default,
a relative position bias in every window attention), ``"abs"`` (a learnable absolute embedding
added once after the patch embedding, as in ViT), ``"abs+rel"`` (both) or ``"none"``; and two
later codes (chapter 6): ``"cpb"`` (Swin V2's continuous position bias, ``companion.cpb``) and
``"rope-axial"``/``"rope-mixed"`` (2-D rotary embeddings of q and k, ``companion.rope``).
``set_window_size`` and ``set_img_size`` move a trained model to another window or image size
(``companion.transfer``).

Parameter and buffer names, shapes and the layout (patch merging at the *start* of stages 1, 2, ...)
follow ``timm.models.swin_transformer.SwinTransformer`` of timm 1.0, so with ``pos="rel"``
``model.load_state_dict(timm_model.state_dict())`` works and gives the same logits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import Tensor, nn

from companion import absolute, transfer
from companion._checks import (
    check_bool,
    check_choice,
    check_fraction,
    check_positive_int,
    check_stage_ints,
    to_pair,
)
from companion.attention import REL_BIAS_OFFSETS, AttnImpl, RelBiasOffsets, WindowAttention
from companion.convert import convert_official_state_dict as convert_official_state_dict
from companion.init import trunc_normal_
from companion.layers import DropPath, Mlp
from companion.merging import PATCH_MERGING_CHOICES, PatchMerging, PatchMergingKind, PoolMerging
from companion.merging import merge_groups as merge_groups
from companion.relative import WindowSize
from companion.rope import RopeKind
from companion.swin_configs import CONFIGS
from companion.swin_configs import VARIANTS as VARIANTS  # re-exported: the trainer and tests
from companion.swin_configs import variant_overrides as variant_overrides
from companion.swin_summary import format_stage_summary as format_stage_summary
from companion.swin_summary import stage_summary as stage_summary
from companion.window import (
    cyclic_shift,
    pad_to_windows,
    shifted_window_mask,
    window_partition,
    window_reverse,
)

Pos = Literal["none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed"]
#: Every ``pos`` value; the trainer and the ablation derive their choices from this tuple.
POS_CHOICES: tuple[str, ...] = ("none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed")
#: The ``pos`` a torus can hide the border from (a window spanning a map wraps its offsets);
#: a continuous bias or a rotary embedding measures offsets along a line.
TORUS_POS: tuple[str, ...] = ("none", "abs", "rel", "abs+rel")


def fit_window(
    resolution: tuple[int, int], window_size: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The window and shift a block uses on a ``resolution = (H, W)`` feature map.

    Returns ``((Wh, Ww), (sh, sw))``. On an axis where the map is no larger than the window, the
    window is clamped to the map (one window covers the axis) and the shift is 0: shifting a single
    window would only move tokens around inside it. Otherwise the shift is half the window.
    """
    window = tuple(min(r, w) for r, w in zip(resolution, window_size, strict=True))
    shift = tuple(0 if r <= w else w // 2 for r, w in zip(resolution, window_size, strict=True))
    return window, shift  # type: ignore[return-value]


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
    timm 1.0 uses (so its weights give the same outputs).

    ``torus=True`` is a controlled variant that hides the map's border: the map is a torus whose
    opposite borders touch. The rolled map is attended *without* the mask, and where one window
    spans a whole axis its offsets are taken around that axis (``WindowAttention``'s ``wrap``).
    Every token then attends within a full window and sees the same offsets wherever it is (up
    to its place inside the window grid), whereas with the mask tokens within half a window of
    any border attend within smaller regions, and a window that spans the map has edges at the
    border. It needs ``H`` and ``W`` to be multiples of the window (padding would bring a border
    back). ``rel_bias_offsets`` is passed to ``WindowAttention``.
    """

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
        rel_pos_bias: bool = True,
        attn_impl: AttnImpl = "sdpa",
        rel_bias_offsets: RelBiasOffsets = "signed",
        torus: bool = False,
        cpb: bool = False,
        rope: RopeKind | None = None,
    ) -> None:
        super().__init__()
        self.shifted = shifted
        self.input_resolution = tuple(input_resolution)
        self.window_size, shift = fit_window(self.input_resolution, window_size)
        self.shift_size = shift if shifted else (0, 0)
        self.torus = check_bool("torus", torus)
        if torus and any(
            r % w for r, w in zip(self.input_resolution, self.window_size, strict=True)
        ):
            raise ValueError(
                f"torus=True needs input_resolution to be a multiple of window_size, got "
                f"input_resolution={self.input_resolution} and window_size={self.window_size}"
            )
        # On a torus, a window that spans a whole axis has no ends on it: its offsets wrap.
        wrap = tuple(
            torus and r == w for r, w in zip(self.input_resolution, self.window_size, strict=True)
        )
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(
            dim,
            self.window_size,
            num_heads,
            qkv_bias=qkv_bias,
            rel_pos_bias=rel_pos_bias,
            attn_impl=attn_impl,
            rel_bias_offsets=rel_bias_offsets,
            wrap=wrap,
            cpb=cpb,
            rope=rope,
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
        return shifted_window_mask(*padded, self.window_size, self.shift_size, device=device)

    def set_input_size(
        self,
        input_resolution: tuple[int, int],
        window_size: tuple[int, int],
        method: transfer.ResizeMethod = "geometric",
    ) -> None:
        """Run on another map size and/or window: window and shift are fitted again, the mask
        rebuilt and the attention's position code resized (``WindowAttention.set_window_size``)."""
        self.input_resolution = tuple(input_resolution)
        self.window_size, shift = fit_window(self.input_resolution, window_size)
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
        if x.dim() != 4 or tuple(x.shape[1:3]) != self.input_resolution:
            raise ValueError(
                f"x must have shape (B, {self.input_resolution[0]}, {self.input_resolution[1]}, C)"
                f" for this block, got {tuple(x.shape)}"
            )
        x = x + self.drop_path1(self.window_attention(self.norm1(x)))
        return x + self.drop_path2(self.mlp(self.norm2(x)))

    def extra_repr(self) -> str:
        return (
            f"input_resolution={self.input_resolution}, window_size={self.window_size}, "
            f"shift_size={self.shift_size}" + (", torus=True" if self.torus else "")
        )


class SwinStage(nn.Module):
    """An optional ``PatchMerging`` (``downsample``) followed by ``depth`` Swin blocks.

    Blocks alternate regular windows (even index) and shifted windows (odd index);
    ``shifted_windows=False`` (a controlled variant) makes every block use regular windows.
    ``input_resolution`` is the stage's input; with ``downsample`` the blocks see half of it,
    merged by ``PatchMerging`` (``patch_merging="concat"``) or ``PoolMerging`` (``"avgpool"``).
    ``rel_bias_offsets`` and ``torus`` are passed to every block.
    """

    def __init__(
        self,
        dim: int,
        input_resolution: tuple[int, int],
        depth: int,
        num_heads: int,
        window_size: tuple[int, int],
        downsample: bool,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_path: Sequence[float] = (),
        rel_pos_bias: bool = True,
        attn_impl: AttnImpl = "sdpa",
        shifted_windows: bool = True,
        patch_merging: PatchMergingKind = "concat",
        rel_bias_offsets: RelBiasOffsets = "signed",
        torus: bool = False,
        cpb: bool = False,
        rope: RopeKind | None = None,
    ) -> None:
        super().__init__()
        check_bool("shifted_windows", shifted_windows)
        check_choice("patch_merging", patch_merging, PATCH_MERGING_CHOICES)
        if downsample:
            merge = PatchMerging if patch_merging == "concat" else PoolMerging
            self.downsample: nn.Module = merge(dim // 2)
            resolution = tuple((r + 1) // 2 for r in input_resolution)
        else:
            self.downsample = nn.Identity()
            resolution = tuple(input_resolution)
        self.output_resolution: tuple[int, int] = resolution  # type: ignore[assignment]
        self.blocks = nn.Sequential(
            *(
                SwinBlock(
                    dim,
                    self.output_resolution,
                    num_heads,
                    window_size,
                    shifted=shifted_windows and i % 2 == 1,
                    mlp_ratio=mlp_ratio,
                    qkv_bias=qkv_bias,
                    drop_path=drop_path[i] if drop_path else 0.0,
                    rel_pos_bias=rel_pos_bias,
                    attn_impl=attn_impl,
                    rel_bias_offsets=rel_bias_offsets,
                    torus=torus,
                    cpb=cpb,
                    rope=rope,
                )
                for i in range(depth)
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
    """Swin Transformer for image classification.

    Args:
        img_size: input ``H`` or ``(H, W)``, a multiple of ``patch_size`` on each axis.
        patch_size: side ``p`` (or ``(ph, pw)``) of the square patches of the patch embedding.
        in_chans: image channels.
        num_classes: classifier outputs.
        embed_dim: channels ``C`` of stage 0; stage ``i`` has ``C * 2**i``.
        depths: blocks per stage.
        num_heads: attention heads per stage; stage ``i``'s channels must divide by them.
        window_size: ``M`` or ``(Wh, Ww)``; clamped per stage to the feature map (see
            ``fit_window``).
        mlp_ratio: MLP hidden channels / channels.
        qkv_bias: learn a bias in the query/key/value projections.
        drop_path_rate: stochastic depth of the last block; it grows linearly from 0 over blocks.
        pos: one of ``POS_CHOICES`` (see the module docstring).
        attn_impl: ``"sdpa"`` (fused kernels) or ``"eager"`` (the formula spelled out).

    Controlled variants, for measuring where a model's position information comes from (the
    defaults are Swin as published):

        shifted_windows: ``False``: every block uses regular windows (no shift, no mask).
        patch_merging: ``"concat"`` (Swin's ``PatchMerging``, whose concatenation order tells
            where in each 2 x 2 group a feature was) or ``"avgpool"`` (``PoolMerging``: order-free).
        rel_bias_offsets: ``"signed"`` (a bias per offset ``(dy, dx)``) or ``"magnitude"`` (per
            ``(|dy|, |dx|)``: left/right and above/below look alike); used with ``pos`` ``"rel"``
            or ``"abs+rel"``.
        torus: ``True``: every feature map is a torus (shifted windows wrap around without the
            mask, a window spanning a whole axis measures offsets around it), so no attention
            region or offset reveals the map's border; every stage's map must then be a
            multiple of its window (see ``SwinBlock``), and ``pos`` one of ``TORUS_POS``.

    ``forward``: ``(B, in_chans, H, W)`` -> logits ``(B, num_classes)``.
    """

    def __init__(
        self,
        img_size: WindowSize,
        patch_size: WindowSize = 4,
        in_chans: int = 3,
        num_classes: int = 1000,
        embed_dim: int = 96,
        depths: Sequence[int] = (2, 2, 6, 2),
        num_heads: Sequence[int] = (3, 6, 12, 24),
        window_size: WindowSize = 7,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_path_rate: float = 0.0,
        pos: Pos = "rel",
        attn_impl: AttnImpl = "sdpa",
        shifted_windows: bool = True,
        patch_merging: PatchMergingKind = "concat",
        rel_bias_offsets: RelBiasOffsets = "signed",
        torus: bool = False,
    ) -> None:
        super().__init__()
        self.img_size = to_pair("img_size", img_size)
        self.patch_size = to_pair("patch_size", patch_size)
        self.in_chans = check_positive_int("in_chans", in_chans)
        self.num_classes = check_positive_int("num_classes", num_classes)
        self.embed_dim = check_positive_int("embed_dim", embed_dim)
        self.depths = check_stage_ints("depths", depths)
        self.num_heads = check_stage_ints("num_heads", num_heads)
        if len(self.depths) != len(self.num_heads):
            raise ValueError(
                f"depths and num_heads must have one entry per stage (the same length), got "
                f"depths={self.depths} and num_heads={self.num_heads}"
            )
        dims = [embed_dim * 2**i for i in range(len(self.depths))]
        for i, (dim, heads) in enumerate(zip(dims, self.num_heads, strict=True)):
            if dim % heads:
                raise ValueError(
                    f"embed_dim * 2**i must be divisible by num_heads[i] in every stage i, got "
                    f"embed_dim={embed_dim}: stage {i} has {dim} channels, num_heads[{i}]={heads}"
                )
        self.window_size = to_pair("window_size", window_size)
        if isinstance(mlp_ratio, bool) or not isinstance(mlp_ratio, (int, float)):
            raise TypeError(f"mlp_ratio must be a positive number, got {mlp_ratio!r}")
        if int(embed_dim * mlp_ratio) < 1:
            raise ValueError(
                f"mlp_ratio must give at least 1 hidden channel, got mlp_ratio={mlp_ratio!r}"
            )
        self.mlp_ratio = float(mlp_ratio)
        drop_path_rate = check_fraction("drop_path_rate", drop_path_rate)
        self.pos: Pos = check_choice("pos", pos, POS_CHOICES)  # type: ignore[assignment]
        self.attn_impl: AttnImpl = check_choice("attn_impl", attn_impl, ("sdpa", "eager"))  # type: ignore[assignment]
        self.shifted_windows = check_bool("shifted_windows", shifted_windows)
        self.patch_merging = check_choice("patch_merging", patch_merging, PATCH_MERGING_CHOICES)
        self.rel_bias_offsets = check_choice("rel_bias_offsets", rel_bias_offsets, REL_BIAS_OFFSETS)
        self.torus = check_bool("torus", torus)
        if torus and pos not in TORUS_POS:
            raise ValueError(
                f"torus=True wraps offsets around the map, which only a bias table can do: use it "
                f"with pos in {list(TORUS_POS)}, got pos={pos!r}"
            )
        use_rel = pos in ("rel", "abs+rel")
        rope: RopeKind | None = pos.removeprefix("rope-") if pos.startswith("rope-") else None  # type: ignore[assignment]

        self.patch_embed = PatchEmbed(self.img_size, self.patch_size, in_chans, embed_dim)
        self.grid_size = self.patch_embed.grid_size
        if pos in ("abs", "abs+rel"):
            # One learnable vector per patch position, added once before the first stage; kept
            # as a (1, h, w, C) grid (timm's layout) rather than chapter 1's (1, N, C) sequence.
            self.absolute_pos_embed = nn.Parameter(torch.zeros(1, *self.grid_size, embed_dim))
            absolute.init_embedding_(self.absolute_pos_embed)

        # Stochastic depth grows linearly with the block's depth in the whole network.
        rates = torch.linspace(0.0, drop_path_rate, sum(self.depths)).tolist()
        stages = []
        resolution = self.grid_size
        for i, depth in enumerate(self.depths):
            start = sum(self.depths[:i])
            stage = SwinStage(
                dims[i],
                resolution,
                depth,
                self.num_heads[i],
                self.window_size,
                downsample=i > 0,
                mlp_ratio=mlp_ratio,
                qkv_bias=qkv_bias,
                drop_path=rates[start : start + depth],
                rel_pos_bias=use_rel,
                attn_impl=attn_impl,
                shifted_windows=shifted_windows,
                patch_merging=patch_merging,
                rel_bias_offsets=rel_bias_offsets,
                torus=torus,
                cpb=pos == "cpb",
                rope=rope,
            )
            stages.append(stage)
            resolution = stage.output_resolution
        self.layers = nn.Sequential(*stages)
        self.num_features = dims[-1]
        self.norm = nn.LayerNorm(self.num_features)
        self.head = PoolingHead(self.num_features, num_classes)
        self.apply(_init_linear)

    def forward_features(self, x: Tensor) -> Tensor:
        """``(B, in_chans, H, W)`` -> normalised last-stage features ``(B, h, w, num_features)``."""
        if x.dim() != 4 or tuple(x.shape[1:]) != (self.in_chans, *self.img_size):
            raise ValueError(
                f"x must have shape (B, {self.in_chans}, {self.img_size[0]}, {self.img_size[1]}), "
                f"got {tuple(x.shape)}"
            )
        x = self.patch_embed(x)
        if self.pos in ("abs", "abs+rel"):
            x = x + self.absolute_pos_embed
        return self.norm(self.layers(x))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, in_chans, H, W)`` -> logits ``(B, num_classes)``."""
        return self.head(self.forward_features(x))

    def no_weight_decay(self) -> set[str]:
        """Names of parameters that an optimiser should not decay: the position tables, the
        continuous bias's MLP and the rotary frequencies (as Swin V2 and RoPE-ViT do)."""
        kept = ("relative_position_bias_table", "absolute_pos_embed", "rope.freqs")
        return {
            name
            for name, _ in self.named_parameters()
            if name.endswith(kept) or ".cpb.cpb_mlp." in name
        }

    def set_window_size(
        self, window_size: WindowSize, method: transfer.ResizeMethod = "geometric"
    ) -> None:
        """Use another window in every stage (clamped to each map as at construction); bias
        tables are resized with ``method`` (``companion.transfer.resize_bias_table``)."""
        transfer.set_input_size(self, window_size=window_size, method=method)

    def set_img_size(
        self, img_size: WindowSize, method: transfer.ResizeMethod = "geometric"
    ) -> None:
        """Accept images of ``img_size`` (a multiple of the patch size), keeping the window: the
        token grid grows, an absolute embedding is resampled and each stage's window, shift,
        padding and mask follow (a window clamped before may now be resized with ``method``)."""
        transfer.set_input_size(self, img_size=img_size, method=method)


def _init_linear(module: nn.Module) -> None:
    # The ViT/Swin recipe: small truncated-normal weights, zero biases; LayerNorm keeps (1, 0).
    if isinstance(module, nn.Linear):
        trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def swin_from_config(name: str, **overrides: Any) -> SwinTransformer:
    """Build the ``SwinTransformer`` of ``CONFIGS[name]``; keyword ``overrides`` replace entries.

    >>> swin_from_config("tiny-cpu", pos="abs").pos
    'abs'
    """
    if name not in CONFIGS:
        raise ValueError(f"name must be one of {sorted(CONFIGS)}, got {name!r}")
    return SwinTransformer(**{**CONFIGS[name], **overrides})
