"""Swin's configuration: ``SwinConfig``, the validated settings every ``SwinTransformer`` is built
from, with the named sizes (``CONFIGS``) and controlled variants (``VARIANTS``).

``CONFIGS`` and ``VARIANTS`` are plain keyword arguments of ``model_config`` (``SwinConfig``'s
fields, plus ``rel_bias_offsets``): ``swin_from_config(name, **variant_overrides(variant))``
builds a size in a variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from companion._checks import (
    check_bool,
    check_choice,
    check_fraction,
    check_positive_int,
    check_stage_ints,
    to_pair,
)
from companion.attention import ATTN_IMPLS, AttnImpl
from companion.merging import PATCH_MERGING_CHOICES, PatchMergingKind, merged_resolution

# POS_CHOICES is re-exported: the chapters import it from here.
from companion.position import POS_CHOICES as POS_CHOICES
from companion.position import Position
from companion.window import tiles_exactly


@dataclass(frozen=True)
class SwinConfig:
    """Everything a ``SwinTransformer`` is built from, checked once, here.

    Attributes:
        img_size: input ``H`` or ``(H, W)``, a multiple of ``patch_size`` on each axis (stored as
            a pair, as are ``patch_size`` and ``window_size``).
        patch_size: side ``p`` (or ``(ph, pw)``) of the square patches of the patch embedding.
        in_chans: image channels.
        num_classes: classifier outputs.
        embed_dim: channels ``C`` of stage 0; stage ``i`` has ``C * 2**i``.
        depths: blocks per stage.
        num_heads: attention heads per stage; stage ``i``'s channels must divide by them.
        window_size: ``M`` or ``(Wh, Ww)``; clamped per stage to the feature map
            (``companion.swin.fit_window``).
        mlp_ratio: MLP hidden channels / channels.
        qkv_bias: learn a bias in the query/key/value projections.
        drop_path_rate: stochastic depth of the last block; it grows linearly from 0 over blocks.
        pos: the position information, one ``companion.position.Position`` (a name of
            ``POS_CHOICES`` is parsed into one): ``"rel"`` (the paper's default, a relative
            position bias in every window attention), ``"abs"`` (a learnable absolute embedding
            added once after the patch embedding, as in ViT), ``"abs+rel"`` (both), ``"none"``,
            ``"cpb"`` (Swin V2's continuous position bias) or ``"rope-axial"``/``"rope-mixed"``
            (2-D rotary embeddings of q and k).
        attn_impl: ``"sdpa"`` (fused kernels) or ``"eager"`` (the formula spelled out).

    Controlled variants, for measuring where a model's position information comes from (the
    defaults are Swin as published):

        shifted_windows: ``False``: every block uses regular windows (no shift, no mask).
        patch_merging: ``"concat"`` (Swin's ``PatchMerging``, whose concatenation order tells
            where in each 2 x 2 group a feature was) or ``"avgpool"`` (``PoolMerging``: order-free).
        rel_bias_offsets (an option of ``model_config``, kept in ``pos``): ``"signed"`` (a bias
            per offset ``(dy, dx)``) or ``"magnitude"`` (per ``(|dy|, |dx|)``: left/right and
            above/below look alike), the ``offsets`` of a ``BiasTable``.
        torus (an option of ``model_config``, kept in ``pos``: ``Position.torus``, read as
            ``config.torus``): ``True``: every feature map is a torus (shifted windows wrap
            around without the mask, a window spanning a whole axis measures offsets around
            it), so no attention region or offset reveals the map's border; every stage's map
            must then be a multiple of its window (``companion.swin.SwinBlock``), and ``pos``
            one whose window code can wrap (``Position.can_wrap``: a table, or no window code).
    """

    img_size: tuple[int, int]
    patch_size: tuple[int, int] = (4, 4)
    in_chans: int = 3
    num_classes: int = 1000
    embed_dim: int = 96
    depths: tuple[int, ...] = (2, 2, 6, 2)
    num_heads: tuple[int, ...] = (3, 6, 12, 24)
    window_size: tuple[int, int] = (7, 7)
    mlp_ratio: float = 4.0
    qkv_bias: bool = True
    drop_path_rate: float = 0.0
    pos: Position = Position()
    attn_impl: AttnImpl = "sdpa"
    shifted_windows: bool = True
    patch_merging: PatchMergingKind = "concat"

    def __post_init__(self) -> None:
        # Frozen: the normalised values (pairs, tuples, floats) are written with object.__setattr__.
        def keep(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        keep("img_size", to_pair("img_size", self.img_size))
        keep("patch_size", to_pair("patch_size", self.patch_size))
        check_positive_int("in_chans", self.in_chans)
        check_positive_int("num_classes", self.num_classes)
        check_positive_int("embed_dim", self.embed_dim)
        keep("depths", check_stage_ints("depths", self.depths))
        keep("num_heads", check_stage_ints("num_heads", self.num_heads))
        keep("window_size", to_pair("window_size", self.window_size))
        if isinstance(self.mlp_ratio, bool) or not isinstance(self.mlp_ratio, int | float):
            raise TypeError(f"mlp_ratio must be a positive number, got {self.mlp_ratio!r}")
        keep("mlp_ratio", float(self.mlp_ratio))
        keep("drop_path_rate", check_fraction("drop_path_rate", self.drop_path_rate))
        keep("pos", Position.parse(self.pos))
        check_choice("attn_impl", self.attn_impl, ATTN_IMPLS)
        check_bool("shifted_windows", self.shifted_windows)
        check_choice("patch_merging", self.patch_merging, PATCH_MERGING_CHOICES)
        self._check_combinations()

    def _check_combinations(self) -> None:
        (h, w), (ph, pw) = self.img_size, self.patch_size
        if h % ph or w % pw:
            raise ValueError(
                f"img_size must be a multiple of patch_size={self.patch_size} on each axis, "
                f"got img_size={self.img_size}"
            )
        if len(self.depths) != len(self.num_heads):
            raise ValueError(
                f"depths and num_heads must have one entry per stage (the same length), got "
                f"depths={self.depths} and num_heads={self.num_heads}"
            )
        for i, (dim, heads) in enumerate(zip(self.stage_dims, self.num_heads, strict=True)):
            if dim % heads:
                raise ValueError(
                    f"embed_dim * 2**i must be divisible by num_heads[i] in every stage i, got "
                    f"embed_dim={self.embed_dim}: stage {i} has {dim} channels, "
                    f"num_heads[{i}]={heads}"
                )
        if int(self.embed_dim * self.mlp_ratio) < 1:
            raise ValueError(
                f"mlp_ratio must give at least 1 hidden channel, got mlp_ratio={self.mlp_ratio!r}"
            )
        if self.torus:
            for i, (side, window) in enumerate(self.stage_maps()):
                if not tiles_exactly(side, window):
                    raise ValueError(
                        f"torus=True needs every stage's map to be a multiple of its window, got "
                        f"stage {i}: a {side} map in {window} windows (img_size={self.img_size})"
                    )

    @property
    def stage_dims(self) -> list[int]:
        """Channels of each stage: ``embed_dim * 2**i``."""
        return [self.embed_dim * 2**i for i in range(len(self.depths))]

    def stage_maps(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Each stage's feature map ``(H, W)`` with the window ``(Wh, Ww)`` asked for (a block
        clamps it to the map): the patch grid, then halved (rounded up) by each merge."""
        side = (self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1])
        maps = []
        for i in range(len(self.depths)):
            if i > 0:
                side = merged_resolution(side)
            maps.append((side, self.window_size))
        return maps

    @property
    def absolute(self) -> bool:
        """Whether a learnable absolute embedding is added after the patch embedding."""
        return self.pos.absolute

    @property
    def torus(self) -> bool:
        """Whether every feature map is a torus (``Position.torus``)."""
        return self.pos.torus


CONFIGS: dict[str, dict[str, Any]] = {
    # Small enough for CI and the book's live cells: two stages on an 8 x 8 patch grid.
    "tiny-cpu": {
        "img_size": 32,
        "patch_size": 4,
        "num_classes": 10,
        "embed_dim": 32,
        "depths": (2, 2),
        "num_heads": (2, 4),
        "window_size": 4,
    },
    # CIFAR-10 sized: 2 x 2 patches give a 16 x 16 grid, then 8 x 8 and 4 x 4 (window clamped).
    "cifar": {
        "img_size": 32,
        "patch_size": 2,
        "num_classes": 10,
        "embed_dim": 96,
        "depths": (2, 2, 2),
        "num_heads": (3, 6, 12),
        "window_size": 4,
        "drop_path_rate": 0.1,
    },
    # Swin-T of the paper (ImageNet-1K, 224 x 224); drop_path_rate as in the paper's recipe.
    "swin_tiny_patch4_window7_224": {
        "img_size": 224,
        "patch_size": 4,
        "num_classes": 1000,
        "embed_dim": 96,
        "depths": (2, 2, 6, 2),
        "num_heads": (3, 6, 12, 24),
        "window_size": 7,
        "drop_path_rate": 0.2,
    },
}


#: The controlled variants by name: the ``SwinConfig`` options each one changes.
VARIANTS: dict[str, dict[str, Any]] = {
    "no-shift": {"shifted_windows": False},
    "pool-merge": {"patch_merging": "avgpool"},
    "abs-offset-bias": {"rel_bias_offsets": "magnitude"},
    "torus": {"torus": True},
}


def variant_overrides(variant: str) -> dict[str, Any]:
    """The ``SwinConfig`` options of ``variant``: ``"swin"`` (none changed), a name of
    ``VARIANTS``, or several joined by ``"+"`` (``"pool-merge+abs-offset-bias"``).

    >>> variant_overrides("pool-merge+torus")
    {'patch_merging': 'avgpool', 'torus': True}
    """
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, got {variant!r} ({type(variant).__name__})")
    if variant == "swin":
        return {}
    overrides: dict[str, Any] = {}
    for part in variant.split("+"):
        check_choice("variant", part, ("swin", *VARIANTS))
        overrides.update(VARIANTS.get(part, {}))
    return overrides


def canonical_variant(variant: str) -> str:
    """The one name of ``variant``'s model: each change once, in ``VARIANTS``' order (``"swin"``
    for none), so that two names of one model count as one.

    >>> canonical_variant("torus+no-shift+torus")
    'no-shift+torus'
    """
    variant_overrides(variant)  # checked
    parts = set(variant.split("+"))
    return "+".join(name for name in VARIANTS if name in parts) or "swin"


def model_config(name: str, **options: Any) -> SwinConfig:
    """The ``SwinConfig`` of ``CONFIGS[name]`` with ``options`` (any field of ``SwinConfig``)
    replacing its entries. ``pos`` (a ``Position``, or a name of ``POS_CHOICES``),
    ``rel_bias_offsets`` (``"signed"`` or ``"magnitude"``, the option of the
    ``abs-offset-bias`` variant) and ``torus`` (the ``torus`` variant's) make one ``Position``
    (``Position.parse``).

    >>> model_config("tiny-cpu", pos="abs+rel", rel_bias_offsets="magnitude").pos
    Position(absolute=True, window=BiasTable(offsets='magnitude'))
    """
    check_choice("name", name, sorted(CONFIGS))
    offsets, torus = options.pop("rel_bias_offsets", None), options.pop("torus", None)
    pos = Position.parse(options.pop("pos", SwinConfig.pos), offsets, torus)
    return SwinConfig(**{**CONFIGS[name], **options, "pos": pos})
