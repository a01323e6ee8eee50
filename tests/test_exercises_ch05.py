"""The solutions of chapter 5's exercises, and the chapter's figures."""

import math
from pathlib import Path

import pytest
import torch
from book_figures import assert_fits_the_page, assert_nothing_sticks_out_or_overlaps

from companion.ablation import find_results, load_bias_tables, load_curves, load_results
from companion.data import RELATION_STEPS, make_dataset
from companion.exercises.ch05 import (
    favourite_offsets,
    lr_at_step,
    position_only_baseline,
    position_only_baselines,
    position_parameter_count,
)
from companion.figures.training import (
    plot_ablation_bars,
    plot_ablation_curves,
    plot_bias_tables,
    plot_examples,
    plot_learning_curves,
    plot_lr_schedule,
)
from companion.paper import POS_TO_TABLE4_ROW, SWIN_TABLE4
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


def test_position_alone_predicts_grid_cell_perfectly():
    grid = position_only_baseline(
        make_dataset("grid-cell", "train", 400), make_dataset("grid-cell", "test", 200)
    )
    assert grid == 1.0  # the label *is* the cell


def exact_position_only_accuracy(obj: str, cells: int) -> float:
    """The Bayes-optimal accuracy of guessing relation's label from one object's cell, computed
    from the task's definition (label uniform, A's patch uniform where B's neighbour fits)."""
    patches, per_cell = 8, 8 // cells
    joint = torch.zeros(cells, cells, 4)  # P(cell, label)
    for label, (sy, sx) in enumerate(RELATION_STEPS):
        starts = [
            (y, x)
            for y in range(patches)
            for x in range(patches)
            if 0 <= y + sy < patches and 0 <= x + sx < patches
        ]
        for y, x in starts:
            if obj == "B":
                y, x = y + sy, x + sx
            joint[y // per_cell, x // per_cell, label] += 1 / (4 * len(starts))
    return joint.max(-1).values.sum().item()


@pytest.mark.parametrize("cells", [4, 8])
@pytest.mark.parametrize("obj", ["A", "B"])
def test_one_objects_position_predicts_relation_at_most_2_in_7(obj, cells):
    assert exact_position_only_accuracy(obj, cells) == pytest.approx(2 / 7)


def test_measured_position_only_baselines_of_relation_stay_below_30_percent():
    baselines = position_only_baselines(
        make_dataset("relation", "train", 8000), make_dataset("relation", "test", 4000)
    )
    assert list(baselines) == [
        "A only, 4x4 cells",
        "A only, 8x8 cells",
        "B only, 4x4 cells",
        "B only, 8x8 cells",
    ]
    assert all(0.25 <= acc <= 0.30 for acc in baselines.values()), baselines


def test_position_only_baseline_rejects_an_unknown_object():
    data = make_dataset("relation", "train", 10)
    with pytest.raises(ValueError, match="obj must be one of"):
        position_only_baseline(data, data, obj="C")


def test_favourite_offsets_inverts_the_relative_index():
    window = (3, 4)
    index = relative_position_index(window)
    table = torch.zeros(bias_table_size(window), 2)
    # Head 0 likes the key one row above and two columns left of the query: offset (1, 2).
    q, k = 1 * 4 + 2, 0 * 4 + 0  # query cell (1, 2), key cell (0, 0)
    table[index[q, k], 0] = 1.0
    table[index[0, 5], 1] = 1.0  # head 1: query (0, 0), key (1, 1) -> offset (-1, -1)
    assert favourite_offsets(table, window) == [(1, 2), (-1, -1)]


# --------------------------------------------------------------------------- figures

POS = ("none", "abs", "rel", "abs+rel")


def committed_results() -> Path:
    """The CPU ablation the chapter shows, from the repository (never downloaded)."""
    return find_results("cpu-tiny", search=[Path(__file__).resolve().parents[1] / "results"])


def made_up_results(datasets: list[str], epochs: int = 6) -> tuple[list, dict, dict]:
    """A summary, chance levels and curves of the shapes ``companion.ablation`` produces."""
    summary = [
        {"dataset": d, "pos": p, "mean": 0.2 + 0.2 * i, "std": 0.05, "n": 3}
        for d in datasets
        for i, p in enumerate(POS)
    ]
    chance = {d: 1 / 16 for d in datasets}
    curves = {
        (d, p, seed): [
            {"epoch": e, "test_acc": 1 - math.exp(-e / (2 + i + seed))} for e in range(1, epochs)
        ]
        for d in datasets
        for i, p in enumerate(POS)
        for seed in range(3)
    }
    return summary, chance, curves


def made_up_bias_tables(heads: tuple[int, ...], window: int) -> dict:
    """``companion.ablation.bias_tables``'s layout: two blocks per stage, ``heads[s]`` each."""
    torch.manual_seed(0)
    return {
        f"layers.{stage}.blocks.{block}.attn": {
            "table": torch.randn(bias_table_size(window), h),
            "window_size": [window, window],
        }
        for stage, h in enumerate(heads)
        for block in range(2)
    }


def _book_figures() -> dict:
    folder = committed_results()
    results = load_results(folder)
    paper = {pos: SWIN_TABLE4[row]["imagenet_top1"] for pos, row in POS_TO_TABLE4_ROW.items()}
    curves = load_curves(folder)
    return {
        "examples grid-cell": lambda: plot_examples(make_dataset("grid-cell", "train", 16), 16),
        "examples relation": lambda: plot_examples(make_dataset("relation", "train", 16), 16),
        "lr schedule": lambda: plot_lr_schedule(2500, 250, 1e-3),
        "learning curves": lambda: plot_learning_curves(
            {"live run": curves["relation", "rel", 0]}, metrics=("train_loss", "test_acc")
        ),
        "ablation bars": lambda: plot_ablation_bars(
            results["summary"], results["chance"], paper=paper, title="final test accuracy"
        ),
        "ablation curves": lambda: plot_ablation_curves(
            curves, results["chance"], title="test accuracy per epoch"
        ),
        "bias tables relation": lambda: plot_bias_tables(
            load_bias_tables(folder, "relation", "rel"), title="relation task, pos=rel"
        ),
        "bias tables grid-cell": lambda: plot_bias_tables(
            load_bias_tables(folder, "grid-cell", "rel"), title="grid-cell task, pos=rel"
        ),
    }


def _other_figures() -> dict:
    one, three = made_up_results(["a"]), made_up_results(["a", "b", "c"])
    return {
        "examples 5": lambda: plot_examples(make_dataset("relation", "train", 5), 5),
        "learning curves, 3 metrics": lambda: plot_learning_curves(
            {"x": three[2]["a", "rel", 0], "y": three[2]["b", "abs", 1]},
            metrics=("test_acc", "test_acc", "test_acc"),
        ),
        "bars, 1 dataset": lambda: plot_ablation_bars(one[0], one[1]),
        "bars, 3 datasets + paper": lambda: plot_ablation_bars(
            three[0], three[1], paper={"none": 80.1, "rel": 81.3}
        ),
        "curves, 3 datasets": lambda: plot_ablation_curves(three[2], three[1]),
        # The GPU ablation's cifar Swin: 3, 6 and 12 heads.
        "bias tables, 12 heads": lambda: plot_bias_tables(made_up_bias_tables((3, 6, 12), 4)),
        "bias tables, window 7": lambda: plot_bias_tables(made_up_bias_tables((2, 4), 7)),
    }


FIGURES = {**_book_figures(), **_other_figures()}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_chapter_5_figure_fits_the_book_column_with_legible_text(name):
    fig = FIGURES[name]()
    assert_fits_the_page(fig)
    assert_nothing_sticks_out_or_overlaps(fig)


def test_line_figures_put_two_panels_in_a_row_and_create_no_spare_axes():
    _, chance, curves = made_up_results(["a", "b", "c"])
    fig = plot_ablation_curves(curves, chance)
    assert len(fig.axes) == 3
    top_left, top_right, bottom = (ax.get_position() for ax in fig.axes)
    assert top_left.y0 == pytest.approx(top_right.y0) and bottom.y1 < top_left.y0
    # The odd panel of the last row is centred.
    assert (bottom.x0 + bottom.x1) / 2 == pytest.approx(0.5, abs=0.05)


def test_ablation_bars_write_each_mean_above_its_error_bar():
    summary, chance, _ = made_up_results(["a"])
    fig = plot_ablation_bars(summary, chance)
    labels = {t.get_text(): t.get_position()[1] for t in fig.axes[0].texts}
    for row in summary:
        assert labels[f"{100 * row['mean']:.1f}"] > 100 * (row["mean"] + row["std"])


def test_bias_tables_wrap_a_block_with_many_heads_onto_more_rows():
    fig = plot_bias_tables(made_up_bias_tables((3, 12), 4))
    heat_maps = [ax for ax in fig.axes if ax.images]
    assert len(heat_maps) == 2 * 3 + 2 * 12
    titles = [ax.get_title() for ax in heat_maps]
    assert titles.count("head 11") == 2 and titles.count("head 6") == 2
    across = {round(ax.get_position().x0, 3) for ax in heat_maps}
    assert len(across) == 6  # HEADS_ACROSS columns
