"""What the chapters read, in one place: every name a chapter uses to read a published result.

The chapters import results only from here; each name lives in the module it is imported from
below (where its tests pin it and ``show_source`` finds it):

* ``paper``, ``paper_reading``: the papers' published tables, read by the book's rules;
* ``learned_embedding``: the learned absolute embedding of chapters 1 and 4;
* ``results``, ``predictions``, ``split_reading``: chapter 5's ablation folders, the predictions
  committed before each run, and cells read as counts against the constant answer;
* ``stats``, ``bootstrap``: intervals, Holm's adjustment, nulls and the two-stage bootstrap;
* ``resolution_transfer``, ``transfer_reading``, ``transfer_results``: chapter 6's first
  resolution experiment; ``far_transfer``, ``far_transfer_predictions``: its transfer on
  ``far-relation``; ``pilots``: which of its planned runs came out bit for bit as a pilot run.

The runs that write the results (``companion.experiments.runs``) are never imported by a chapter
(``tests/test_layers.py``).
"""

from companion.experiments.bootstrap import kept_replicates
from companion.experiments.far_transfer import (
    exploratory_family,
    far_glance,
    far_split_readings,
    load_far_transfer,
)
from companion.experiments.far_transfer_predictions import (
    far_transfer_predictions_table,
    learned_line,
)
from companion.experiments.learned_embedding import (
    POSITION_STATISTICS,
    check_similarity_predictions,
    grid_table,
    load_learned_embedding,
    load_vit_embedding,
    neighbour_pairs,
    permutation_p_value,
    permutation_test,
    same_parity_pairs,
    shuffled_null,
    similarity_gap,
    similarity_outcomes_markdown,
    similarity_predictions,
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
from companion.experiments.pilots import find_pilot_twins, twins_table
from companion.experiments.predictions import (
    load_predictions,
    predictions_list,
    predictions_table,
    split_seed_readings,
)
from companion.experiments.resolution_transfer import grown_condition
from companion.experiments.results import (
    describe_run,
    find_results,
    load_bias_tables,
    load_curves,
    load_results,
    paired_gap,
)
from companion.experiments.split_reading import (
    accuracy_table,
    beside_their_swin,
    cells_of,
    constant_answer,
    encoding_glance,
    gaps_lines,
    lift_lines,
    split_rows,
    variant_pairs,
)
from companion.experiments.stats import format_p, holm, ring_null
from companion.experiments.transfer_reading import (
    kept_gap,
    kept_table,
    load_references,
    load_transfer_predictions,
    reference_seeds,
    transfer_predictions_table,
)
from companion.experiments.transfer_results import (
    family_note,
    holm_family,
    load_transfer,
    window_gain_pairs,
    window_gain_table,
)

__all__ = [
    "POSITION_STATISTICS",
    "POS_TO_SWINV2_ROW",
    "POS_TO_TABLE4_ROW",
    "SWINV2_TABLE1",
    "SWINV2_TEXT_LOG_CPB_W24",
    "SWIN_TABLE4",
    "SWIN_TABLE4_SOURCE",
    "TABLE4_GAPS",
    "accuracy_table",
    "beside_their_swin",
    "cells_of",
    "check_similarity_predictions",
    "constant_answer",
    "describe_run",
    "encoding_glance",
    "exploratory_family",
    "family_note",
    "far_glance",
    "far_split_readings",
    "far_transfer_predictions_table",
    "find_pilot_twins",
    "find_results",
    "format_p",
    "gaps_lines",
    "grid_table",
    "grown_condition",
    "holm",
    "holm_family",
    "kept_gap",
    "kept_replicates",
    "kept_table",
    "learned_line",
    "lift_lines",
    "load_bias_tables",
    "load_curves",
    "load_far_transfer",
    "load_learned_embedding",
    "load_predictions",
    "load_references",
    "load_results",
    "load_transfer",
    "load_transfer_predictions",
    "load_vit_embedding",
    "marked_gaps_markdown",
    "neighbour_pairs",
    "paired_gap",
    "permutation_p_value",
    "permutation_test",
    "predictions_list",
    "predictions_table",
    "reference_seeds",
    "ring_null",
    "rope_vit_reading_markdown",
    "rope_vit_swin_markdown",
    "same_parity_pairs",
    "shuffled_null",
    "similarity_gap",
    "similarity_outcomes_markdown",
    "similarity_predictions",
    "split_rows",
    "split_seed_readings",
    "swin_table4_markdown",
    "swinv2_table1_markdown",
    "swinv2_table1_reading_markdown",
    "transfer_predictions_table",
    "twins_table",
    "variant_pairs",
    "vit_table8_gaps_markdown",
    "vit_table8_markdown",
    "window_gain_pairs",
    "window_gain_table",
]
