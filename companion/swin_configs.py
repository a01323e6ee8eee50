"""Named Swin settings: model sizes (``CONFIGS``) and controlled variants (``VARIANTS``).

Both are plain keyword arguments of ``companion.swin.SwinTransformer``:
``swin_from_config(name, **variant_overrides(variant))`` builds a size in a variant.
"""

from __future__ import annotations

from typing import Any

from companion._checks import check_choice

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


#: The controlled variants by name: the ``SwinTransformer`` options each one changes.
VARIANTS: dict[str, dict[str, Any]] = {
    "no-shift": {"shifted_windows": False},
    "pool-merge": {"patch_merging": "avgpool"},
    "abs-offset-bias": {"rel_bias_offsets": "magnitude"},
    "torus": {"torus": True},
}


def variant_overrides(variant: str) -> dict[str, Any]:
    """The ``SwinTransformer`` options of ``variant``: ``"swin"`` (none changed), a name of
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
