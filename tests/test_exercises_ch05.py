"""The solutions of chapter 5's exercises, and the chapter's figures."""

import math
import statistics
from pathlib import Path

import pytest
import torch
from book_figures import assert_fits_the_page, assert_nothing_sticks_out_or_overlaps
from scipy import stats

from companion.data import make_dataset
from companion.data.tasks import RELATION_STEPS
from companion.exercises.ch05 import (
    favourite_offsets,
    position_only_baseline,
    position_only_baselines,
    position_parameter_count,
    t_interval_by_hand,
)
from companion.experiments.chapter5 import beside_their_swin, split_rows
from companion.experiments.paper import SWIN_TABLE4
from companion.experiments.predictions import constant_answer
from companion.experiments.results import (
    find_results,
    load_bias_tables,
    load_curves,
    load_results,
)
from companion.experiments.stats import paired_interval
from companion.figures.training import (
    plot_ablation_curves,
    plot_bias_tables,
    plot_examples,
    plot_learning_curves,
    plot_lr_schedule,
    plot_seed_dots,
    plot_table4_differences,
)
from companion.relative import bias_table_size, relative_position_index
from companion.swin import swin_from_config


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
    try:
        return find_results(
            "cpu-ablation", search=[Path(__file__).resolve().parents[1] / "results"]
        )
    except FileNotFoundError:
        pytest.skip("results/cpu-ablation is not in this checkout yet")


def made_up_results(datasets: list[str], epochs: int = 6) -> tuple[list, dict, dict]:
    """A summary, chance levels and curves of the shapes the ablation produces."""
    summary = [
        {"dataset": d, "pos": p, "variant": "swin", "mean": 0.2 + 0.2 * i, "std": 0.05, "n": 5,
         "seeds": list(range(5)), "values": [0.15 + 0.2 * i + 0.025 * k for k in range(5)]}
        for d in datasets
        for i, p in enumerate(POS)
    ]  # fmt: skip
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
    """``ablation.bias_tables``'s layout: two blocks per stage, ``heads[s]`` each."""
    torch.manual_seed(0)
    return {
        f"layers.{stage}.blocks.{block}.attn": {
            "table": torch.randn(bias_table_size(window), h),
            "window_size": [window, window],
        }
        for stage, h in enumerate(heads)
        for block in range(2)
    }


def variant_rows(summary: list) -> list:
    """Every ``summary`` row followed by two made-up variants of it (as chapter 5 draws them)."""
    return [{**r, "variant": v} for r in summary for v in ("swin", "torus", "abs-offset-bias")]


TABLE4_METRICS = {"imagenet_top1": "ImageNet-1K top-1", "coco_ap_box": "COCO AP box",
                  "ade20k_miou": "ADE20K mIoU"}  # fmt: skip


def _book_figures() -> dict:
    def committed(draw):
        def make():
            folder = committed_results()
            return draw(folder, load_results(folder))

        return make

    colors = {row: "#1f77b4" for row in SWIN_TABLE4}
    return {
        "examples grid-cell": lambda: plot_examples(make_dataset("grid-cell", "train", 16), 16),
        "examples relation": lambda: plot_examples(make_dataset("relation", "train", 16), 16),
        "seed dots": committed(
            lambda f, r: plot_seed_dots(
                [x for x in r["summary"] if x["variant"] == "swin"], r["chance"], title="t"
            )
        ),
        "seed dots, variants": committed(  # as the chapter draws it: each beside its Swin
            lambda f, r: plot_seed_dots(
                [
                    row
                    for d in ("grid-cell", "relation")
                    for row in split_rows(r, d, "test", beside_their_swin(r, d))
                ],
                {d: constant_answer(r, d, "test") for d in ("grid-cell", "relation")},
                across=1,
                level="constant answer",
                title="t",
            )
        ),
        "ablation curves": committed(
            lambda f, r: plot_ablation_curves(load_curves(f), r["chance"], title="t")
        ),
        "bias tables relation": committed(
            lambda f, r: plot_bias_tables(load_bias_tables(f, "relation", "rel"), title="t")
        ),
        "bias tables grid-cell": committed(
            lambda f, r: plot_bias_tables(load_bias_tables(f, "grid-cell", "rel"), title="t")
        ),
        "table 4 differences": lambda: plot_table4_differences(
            SWIN_TABLE4, "none", TABLE4_METRICS, colors=colors, title="Table 4 minus none"
        ),
    }


def _other_figures() -> dict:
    one, three = made_up_results(["a"]), made_up_results(["a", "b", "c"])
    return {
        "examples 5": lambda: plot_examples(make_dataset("relation", "train", 5), 5),
        "lr schedule": lambda: plot_lr_schedule(2500, 250, 1e-3),
        "learning curves, 3 metrics": lambda: plot_learning_curves(
            {"x": three[2]["a", "rel", 0], "y": three[2]["b", "abs", 1]},
            metrics=("test_acc", "test_acc", "test_acc"),
        ),
        "seed dots, 1 dataset": lambda: plot_seed_dots(one[0], one[1]),
        "curves, 3 datasets": lambda: plot_ablation_curves(three[2], three[1]),
        "seed dots, 3 datasets": lambda: plot_seed_dots(three[0], three[1]),
        "seed dots, 6 cells in a row (as chapter 5)": lambda: plot_seed_dots(
            variant_rows(one[0][:2]), one[1], across=1
        ),
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


def test_bias_tables_wrap_a_block_with_many_heads_onto_more_rows():
    fig = plot_bias_tables(made_up_bias_tables((3, 12), 4))
    heat_maps = [ax for ax in fig.axes if ax.images]
    assert len(heat_maps) == 2 * 3 + 2 * 12
    titles = [ax.get_title() for ax in heat_maps]
    assert titles.count("head 11") == 2 and titles.count("head 6") == 2
    across = {round(ax.get_position().x0, 3) for ax in heat_maps}
    assert len(across) == 6  # HEADS_ACROSS columns


def test_seed_dots_draw_every_seed_and_keep_intervals_inside_0_to_100():
    summary, chance, _ = made_up_results(["a"])
    summary[-1]["values"] = [1.0, 1.0, 1.0, 0.9, 1.0]  # a t interval that reaches past 100 %
    fig = plot_seed_dots(summary, chance)
    ax = fig.axes[0]
    dots = sum(len(c.get_offsets()) for c in ax.collections)
    assert dots == sum(len(r["values"]) for r in summary)
    ys = [y for line in ax.get_lines() for y in line.get_ydata()]
    assert min(ys) >= 0 and max(ys) <= 100
    assert ax.get_ylim()[0] == 0  # distances from 0 read as they are


def test_seed_dots_label_a_variant_under_its_pos():
    summary, chance, _ = made_up_results(["a"])
    fig = plot_seed_dots(variant_rows(summary[:1]), chance, across=1)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["none", "none\ntorus", "none\nabs-\noffset-bias"]  # a long name breaks


def test_table4_differences_start_at_zero_and_match_the_table():
    fig = plot_table4_differences(SWIN_TABLE4, "none", {"imagenet_top1": "top-1"})
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    assert low < 0 < high
    heights = {c.get_label(): [bar.get_height() for bar in c.patches] for c in ax.containers}
    expected = SWIN_TABLE4["absolute"]["imagenet_top1"] - SWIN_TABLE4["none"]["imagenet_top1"]
    assert heights["absolute"] == [pytest.approx(expected)]


def test_t_interval_by_hand_equals_the_paired_interval_of_the_stats_module():
    values = [50.0, 70.0, 40.0, 90.0, 60.0]
    assert t_interval_by_hand(values) == pytest.approx(paired_interval(values))
    sem = statistics.stdev(values) / math.sqrt(len(values))
    by_scipy = stats.t.interval(0.95, len(values) - 1, loc=statistics.fmean(values), scale=sem)
    assert t_interval_by_hand(values)[1:] == pytest.approx(by_scipy, abs=1e-9)
    with pytest.raises(ValueError, match="at least 2 numbers"):
        t_interval_by_hand([1.0])


def test_a_t_interval_over_a_split_cell_breaks_where_the_seeds_cannot_go():
    # Nine seeds solved near 100 %, one stopped at a constant answer of 25 %: two groups.
    values = [99.0, 99.5, 98.0, 99.8, 97.5, 99.0, 98.5, 99.9, 99.2, 25.0]
    mean, low, high = t_interval_by_hand(values)
    assert high > 100.0  # above what any seed can score
    assert 25.0 < low < min(values[:9])  # its low end lies where no seed landed
    assert mean < min(values[:9])  # and the mean describes neither group


def test_the_chapter_s_split_cell_gives_a_t_interval_past_100_percent():
    folder = committed_far_results()
    results = load_results(folder)
    task = "far-relation-heldout"
    row = split_rows(results, task, "seen", [f"{task}:abs+rel"])[0]
    _, low, high = t_interval_by_hand([100 * v for v in row["values"]])
    assert high > 100.0 and 0.0 <= 100 * row["low"] <= 100 * row["high"] <= 100.0
    solved = [100 * v for v in row["values"] if v >= 0.9]
    assert len(solved) == 9 and low < min(solved)


def committed_far_results() -> Path:
    """Chapter 5's far-relation experiment, from the repository."""
    try:
        return find_results(
            "cpu-far-relation", search=[Path(__file__).resolve().parents[1] / "results"]
        )
    except FileNotFoundError:
        pytest.skip("results/cpu-far-relation is not in this checkout yet")
