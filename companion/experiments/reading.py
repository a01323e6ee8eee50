"""What the chapters read that is not one experiment of theirs: the papers' published tables, and
the layout statistics chapter 4 reads a pretrained ViT's embedding with.

A chapter with an experiment reads it through its own reader, ``companion.experiments.chapter<N>``
(chapter 1's learned embeddings: ``chapter1``; chapter 5's ablations: ``chapter5``; chapter 6's
transfer: ``chapter6``), and imports the rest from here; each name lives in the module it is
imported from below (where its tests pin it and ``show_source`` finds it):

* ``paper``, ``paper_reading``: the papers' published tables, read by the book's rules;
* ``learned_embedding``: an embedding's layout against its shuffle null (chapter 4);
* ``stats``: the ring null chapter 4 draws.

The runs that write the results (``companion.experiments.runs``) are never imported by a chapter
(``tests/test_layers.py``).
"""

from companion.experiments.learned_embedding import (
    neighbour_pairs,
    permutation_p_value,
    shuffled_null,
    similarity_gap,
)
from companion.experiments.paper import (
    POS_TO_SWINV2_ROW,
    POS_TO_TABLE4_ROW,
    SWIN_TABLE4,
    SWIN_TABLE4_SOURCE,
    SWINV2_TABLE1,
    SWINV2_TEXT_LOG_CPB_W24,
    TABLE4_GAPS,
    rope_vit_swin_markdown,
    swin_table4_markdown,
    swinv2_table1_markdown,
    vit_table8_markdown,
)
from companion.experiments.paper_reading import (
    marked_gaps_markdown,
    rope_vit_reading_markdown,
    swinv2_table1_reading_markdown,
    vit_table8_gaps_markdown,
)
from companion.experiments.stats import ring_null

__all__ = [
    "POS_TO_SWINV2_ROW",
    "POS_TO_TABLE4_ROW",
    "SWINV2_TABLE1",
    "SWINV2_TEXT_LOG_CPB_W24",
    "SWIN_TABLE4",
    "SWIN_TABLE4_SOURCE",
    "TABLE4_GAPS",
    "marked_gaps_markdown",
    "neighbour_pairs",
    "permutation_p_value",
    "ring_null",
    "rope_vit_reading_markdown",
    "rope_vit_swin_markdown",
    "shuffled_null",
    "similarity_gap",
    "swin_table4_markdown",
    "swinv2_table1_markdown",
    "swinv2_table1_reading_markdown",
    "vit_table8_gaps_markdown",
    "vit_table8_markdown",
]
