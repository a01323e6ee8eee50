"""The solutions of chapter 5's exercises."""

import pytest
import torch

from companion.data import make_dataset
from companion.exercises.ch05 import (
    favourite_offsets,
    lr_at_step,
    position_only_baseline,
    position_parameter_count,
)
from companion.relative import bias_table_size, relative_position_index
from companion.swin import swin_from_config
from companion.train import warmup_cosine


@pytest.mark.parametrize("step", [0, 3, 9, 10, 57, 99])
def test_lr_at_step_matches_the_trainers_schedule(step):
    factor = warmup_cosine(total_steps=100, warmup_steps=10)
    assert lr_at_step(step, 100, 10, 2e-3) == pytest.approx(2e-3 * factor(step))


def test_position_parameters_of_tiny_cpu_per_variant():
    counts = {
        p: position_parameter_count(swin_from_config("tiny-cpu", pos=p))
        for p in ("none", "abs", "rel", "abs+rel")
    }
    # abs: one 32-vector per cell of the 8 x 8 patch grid; rel: a 7 x 7 table per head, with
    # 2 heads in each of stage 0's two blocks and 4 in each of stage 1's.
    assert counts == {
        "none": 0,
        "abs": 8 * 8 * 32,
        "rel": 49 * (2 + 2 + 4 + 4),
        "abs+rel": 8 * 8 * 32 + 49 * 12,
    }


def test_position_alone_predicts_grid_cell_perfectly_and_relation_only_partly():
    grid = position_only_baseline(
        make_dataset("grid-cell", "train", 400), make_dataset("grid-cell", "test", 200)
    )
    assert grid == 1.0  # the label *is* the cell
    relation = position_only_baseline(
        make_dataset("relation", "train", 2000), make_dataset("relation", "test", 500)
    )
    assert 0.3 < relation < 0.8  # better than chance (0.25): the frame's borders leak


def test_favourite_offsets_inverts_the_relative_index():
    window = (3, 4)
    index = relative_position_index(window)
    table = torch.zeros(bias_table_size(window), 2)
    # Head 0 likes the key one row above and two columns left of the query: offset (1, 2).
    q, k = 1 * 4 + 2, 0 * 4 + 0  # query cell (1, 2), key cell (0, 0)
    table[index[q, k], 0] = 1.0
    table[index[0, 5], 1] = 1.0  # head 1: query (0, 0), key (1, 1) -> offset (-1, -1)
    assert favourite_offsets(table, window) == [(1, 2), (-1, -1)]
