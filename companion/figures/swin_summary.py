"""A Swin's stages at a glance: resolution, channels, heads, blocks, window, shift, parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from companion.swin import SwinBlock, SwinStage, SwinTransformer


def stage_summary(model: SwinTransformer) -> list[dict[str, Any]]:
    """One row per stage: resolution, channels, heads, blocks, window, shift and parameters."""
    rows = []
    for i, stage in enumerate(cast("list[SwinStage]", list(model.layers))):
        blocks = cast("list[SwinBlock]", list(stage.blocks))
        first = blocks[0]
        shifted = [b.shift_size for b in blocks if any(b.shift_size)]
        rows.append(
            {
                "stage": i,
                "resolution": first.input_resolution,
                "channels": first.attn.dim,
                "heads": first.attn.num_heads,
                "blocks": len(blocks),
                "window": first.window_size,
                "shift": shifted[0] if shifted else (0, 0),
                "params": sum(p.numel() for p in stage.parameters()),
            }
        )
    return rows


def format_stage_summary(rows: Sequence[dict[str, Any]]) -> str:
    """``stage_summary`` as an aligned text table."""
    columns = ("stage", "resolution", "channels", "heads", "blocks", "window", "shift", "params")
    cells = [[_format_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _format_cell(value: Any) -> str:
    if isinstance(value, tuple):
        return " x ".join(map(str, value))
    return f"{value:,}" if isinstance(value, int) else str(value)
