"""Pictures of real pretrained weights, drawn with the book's own figure functions.

``companion.train.pretrained`` reads the tensors out of a timm ``state_dict``; these functions draw
them as chapters 1 and 3 draw their own: a ViT embedding as the similarity mosaic of the ViT
paper's Figure 7, Swin's tables as pictures of offsets.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from torch import Tensor

from companion.figures.absolute import plot_similarity_mosaic
from companion.figures.training import plot_bias_tables
from companion.train.pretrained import swin_bias_tables, vit_patch_position_embedding

#: Swin-T's first stage (one regular, one shifted block) and the first block of the second.
FIRST_BLOCKS = ("layers.0.blocks.0", "layers.0.blocks.1", "layers.1.blocks.0")


def plot_pretrained_vit_similarity(state_dict: dict[str, Tensor], name: str) -> Figure:
    """The cosine-similarity mosaic of a timm ViT's patch position embedding."""
    table, grid = vit_patch_position_embedding(state_dict)
    return plot_similarity_mosaic({name: table}, grid)


def plot_pretrained_swin_tables(
    state_dict: dict[str, Tensor], blocks: Sequence[str] = FIRST_BLOCKS, title: str = ""
) -> Figure:
    """The bias tables of the named blocks of a timm Swin, one small picture per head."""
    tables = swin_bias_tables(state_dict)
    missing = [b for b in blocks if b not in tables]
    if missing:
        raise ValueError(f"blocks: {missing} not in the state_dict (it has {list(tables)})")
    return plot_bias_tables({b: tables[b] for b in blocks}, title=title)
