"""Real pretrained weights: timm's Swin-T and ViT-B/16, read into the book's own pictures.

Downloading is for readers, never for the book's build: :func:`downloads_allowed` is true only in
Colab or when ``BOOK_DOWNLOAD_WEIGHTS=1`` is set. Everything after the download works on a plain
timm ``state_dict`` (a dict of tensors), so the same code runs on a checkpoint the tests make
offline, in the same format.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from torch import Tensor

from companion._checks import check_non_negative_int

#: Setting this environment variable to ``1`` allows the download outside Colab.
OPT_IN = "BOOK_DOWNLOAD_WEIGHTS"
SWIN_T = "swin_tiny_patch4_window7_224"
VIT_B16 = "vit_base_patch16_224"
BIAS_TABLE = "relative_position_bias_table"


def downloads_allowed() -> bool:
    """True in Colab, or where the reader opted in with ``BOOK_DOWNLOAD_WEIGHTS=1``."""
    return "google.colab" in sys.modules or os.environ.get(OPT_IN) == "1"


def pretrained_state_dict(name: str) -> dict[str, Tensor]:
    """Download (or take from timm's cache) the pretrained weights of a timm model name."""
    import timm  # an optional dependency: the ``timm`` extra

    return timm.create_model(name, pretrained=True).state_dict()


def fetch_pretrained(*names: str) -> list[dict[str, Tensor]] | None:
    """The pretrained ``state_dict`` of each timm model name, or ``None``, said in one line,
    where they cannot be had: outside Colab without the opt-in, or with no route to the hub."""
    if not downloads_allowed():
        print(
            f"These pictures are drawn in Colab (or with {OPT_IN}=1): nothing is downloaded here."
        )
        return None
    try:
        return [pretrained_state_dict(name) for name in names]
    except OSError as exc:  # the hub's and requests' errors are OSErrors (no network, no file)
        print(f"The model hub could not be reached ({type(exc).__name__}): no pictures here.")
        return None


def vit_patch_position_embedding(
    state_dict: dict[str, Tensor], num_prefix_tokens: int = 1
) -> tuple[Tensor, tuple[int, int]]:
    """ViT's ``pos_embed`` ``(1, P + h*w, D)`` -> the patch rows ``(h*w, D)`` and ``(h, w)``.

    The ``P = num_prefix_tokens`` leading rows (the class-token slot) belong to no grid cell and
    are dropped; the grid is taken as square, as in every timm ViT with a 1-D embedding.
    """
    check_non_negative_int("num_prefix_tokens", num_prefix_tokens)
    if "pos_embed" not in state_dict:
        raise ValueError("state_dict has no 'pos_embed': not a ViT with a learned embedding")
    table = state_dict["pos_embed"][0, num_prefix_tokens:].float()
    side = math.isqrt(table.shape[0])
    if side * side != table.shape[0]:
        raise ValueError(
            f"pos_embed has {table.shape[0]} patch rows after {num_prefix_tokens} prefix rows, "
            "not a square grid: check num_prefix_tokens"
        )
    return table, (side, side)


def swin_bias_tables(state_dict: dict[str, Tensor]) -> dict[str, dict[str, Any]]:
    """Every block's bias table of a timm Swin ``state_dict``, by block name.

    Returns ``{name: {"table": ((2M-1)^2, H) tensor, "window_size": [M, M]}}``, the format of
    ``companion.experiments.runs.ablation.bias_tables``, so ``plot_bias_tables`` draws it. Swin's
    windows are square, so ``M`` follows from the number of rows.
    """
    found = {}
    for key, table in state_dict.items():
        if not key.endswith(BIAS_TABLE):
            continue
        side = math.isqrt(table.shape[0])
        if side * side != table.shape[0] or side % 2 == 0:
            raise ValueError(f"{key}: {table.shape[0]} rows is not (2M-1)^2 for a square window")
        name = key[: -len(BIAS_TABLE) - 1].removesuffix(".attn")
        found[name] = {"table": table.float().clone(), "window_size": [(side + 1) // 2] * 2}
    if not found:
        raise ValueError(f"state_dict has no '{BIAS_TABLE}': not a Swin with a relative bias")
    return found
