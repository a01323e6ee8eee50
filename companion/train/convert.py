"""Loading checkpoints of the official Swin code (microsoft/Swin-Transformer) into this model.

The official ``SwinTransformer`` saves the same weights under a slightly different layout:

* ``relative_position_index`` and ``attn_mask`` are *persistent* buffers there, so they are in
  the file; here they are recomputed from the configuration, so they are dropped.
* Patch merging belongs to the *end* of stage ``i`` (``layers.i.downsample``) there and to the
  *start* of stage ``i + 1`` here (timm's layout): the same weights, one stage number apart.
* The classifier is ``head`` there and ``head.fc`` here.
* With ``ape=True`` the absolute embedding is a ``(1, N, C)`` sequence there and a ``(1, h, w, C)``
  grid here.

``convert_official_state_dict`` maps one layout to the other and, when the model's window or
patch grid differs from the checkpoint's, resizes the bias tables (``companion.resize``) and
the absolute embedding. ``to_official_state_dict`` writes a model in the official layout (the
tests use it to check the round trip without downloading anything).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torch import Tensor

from companion.absolute import resample_position_embedding
from companion.attention import WindowAttention
from companion.resize import ResizeMethod, check_resize_method, resize_bias_table

if TYPE_CHECKING:
    from companion.swin import SwinTransformer

_TABLE = "relative_position_bias_table"
_BUFFERS = ("relative_position_index", "attn_mask")


def _square_window(rows: int, key: str) -> tuple[int, int]:
    """The square window ``M`` whose table has ``rows = (2M-1)²`` rows."""
    side = math.isqrt(rows)
    if side * side != rows or side % 2 == 0:
        raise ValueError(
            f"state_dict[{key!r}] has {rows} rows, not (2M-1)² for any window M; official "
            f"checkpoints use square windows"
        )
    return ((side + 1) // 2, (side + 1) // 2)


def convert_official_state_dict(
    state_dict: Mapping[str, Any],
    model: SwinTransformer,
    method: ResizeMethod = "bicubic",
) -> dict[str, Tensor]:
    """An official checkpoint's weights, renamed and resized for ``model``.

    Args:
        state_dict: the checkpoint (``torch.load(path)``) or its ``"model"`` entry.
        model: the ``companion.swin.SwinTransformer`` to load into; its window and image size may
            differ from the checkpoint's.
        method: how tables are resized when the windows differ: ``"bicubic"`` (what the official
            code does when fine-tuning at a new window) or ``"geometric"``.

    Returns:
        A dict for ``model.load_state_dict(..., strict=True)``.
    """
    method = check_resize_method(method)
    weights: Mapping[str, Tensor] = state_dict.get("model", state_dict)
    has_ape = "absolute_pos_embed" in weights
    if has_ape != model.config.pos.absolute:
        wanted = "abs+rel" if has_ape else "rel"
        raise ValueError(
            f"state_dict has ape={has_ape} (an absolute embedding or not) but model has "
            f"pos={model.config.pos.name!r}; build the model with pos={wanted!r}"
        )
    out = {}
    for key, value in weights.items():
        if key.endswith(_BUFFERS):
            continue
        key = re.sub(r"^layers\.(\d+)\.downsample\.", _next_stage, key)
        key = re.sub(r"^head\.", "head.fc.", key)
        if key == "absolute_pos_embed":
            value = _grid_embedding(value, model)
        elif key.endswith(_TABLE):
            attn = model.get_submodule(key.removesuffix("." + _TABLE))
            assert isinstance(attn, WindowAttention)
            window = attn.window_size
            old = _square_window(value.shape[0], key)
            value = resize_bias_table(value, old, window, method)
        out[key] = value
    return out


def _next_stage(match: re.Match[str]) -> str:
    return f"layers.{int(match[1]) + 1}.downsample."


def _grid_embedding(embedding: Tensor, model: SwinTransformer) -> Tensor:
    """``(1, N, C)`` -> the model's ``(1, h, w, C)``, resampled if the (square) grid differs."""
    n, grid = embedding.shape[1], model.grid_size
    if n != grid[0] * grid[1]:
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(
                f"absolute_pos_embed has {n} positions, not a square grid; cannot resample it to "
                f"the model's grid {grid}"
            )
        embedding = resample_position_embedding(embedding, side, grid)
    return embedding.reshape(1, *grid, -1)


def to_official_state_dict(model: SwinTransformer) -> dict[str, Tensor]:
    """``model``'s weights in the official layout, buffers included (the inverse mapping).

    The official code needs windows that tile every feature map (it does not pad), so this is
    meant for such configurations (``"tiny-cpu"``, Swin-T at 224 px).
    """
    out = {}
    for key, value in model.state_dict().items():
        if key == "absolute_pos_embed":
            value = value.flatten(1, 2)
        key = re.sub(
            r"^layers\.(\d+)\.downsample\.",
            lambda m: f"layers.{int(m[1]) - 1}.downsample.",
            key,
        )
        out[re.sub(r"^head\.fc\.", "head.", key)] = value
    for name, buffer in model.named_buffers():
        if name.endswith(_BUFFERS) and buffer is not None:
            # The index lives in the attention's bias term (attn.code), the official files keep
            # it on the attention, as the table (companion.position.keep_checkpoint_names).
            out[name.replace(".code.", ".")] = buffer
    return out
