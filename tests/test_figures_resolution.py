"""Chapter 6's experiment figure: one line per position code, on the book's column."""

import pytest
from book_figures import assert_fits_the_page

from companion.experiments.transfer_results import transfer_summary
from companion.figures.resolution import plot_renderings, plot_transfer


def _rows():
    rows = []
    for seed in (0, 1):
        for pos, conditions in (
            ("rel", ("window-kept", "window-grown-geometric")),
            ("cpb", ("window-kept", "window-grown")),
        ):
            rows.append({"dataset": "d", "pos": pos, "seed": seed, "size": 32,
                         "condition": "trained", "acc": 0.9})  # fmt: skip
            for size in (48, 64):
                for cond in conditions:
                    rows.append({"dataset": "d", "pos": pos, "seed": seed, "size": size,
                                 "condition": cond, "acc": 0.5 + 0.1 * seed,
                                 "acc_finetuned": 0.8})  # fmt: skip
    return rows


@pytest.mark.parametrize("metric", ["acc", "acc_finetuned"])
def test_transfer_figure_draws_every_code_in_both_columns_and_fits_the_page(metric):
    fig = plot_transfer(transfer_summary(_rows()), ["d"], metric=metric)
    assert_fits_the_page(fig)
    for ax in fig.axes:
        # one error-bar line per code (rel and cpb), each at 32, 48 and 64 px
        assert [list(c.lines[0].get_xdata()) for c in ax.containers] == [[32, 48, 64]] * 2
        assert ax.get_ylim() == (0, 100)


def test_transfer_figure_titles_its_columns_with_the_condition_names_and_reads_old_records():
    old = [{**r, "condition": {"window-kept": "grid", "window-grown": "window",
                               "window-grown-geometric": "window-geometric"}.get(r["condition"],
                                                                                r["condition"])}
           for r in _rows()]  # fmt: skip
    for rows in (_rows(), old):
        fig = plot_transfer(transfer_summary(rows), ["d"])
        assert [ax.get_title() for ax in fig.axes[:2]] == [
            "d: window-kept",
            "d: window-grown (tables: geometric)",
        ]
        assert all(len(ax.containers) == 2 for ax in fig.axes[:2])


def test_renderings_figure_shows_each_task_at_each_size_with_its_label_and_fits_the_page():
    fig = plot_renderings(["grid-cell", "relation"], [32, 48, 64], index=1)
    assert_fits_the_page(fig)
    shapes = [ax.images[0].get_array().shape[:2] for ax in fig.axes]
    assert shapes == [(32, 32), (48, 48), (64, 64)] * 2
    assert fig.axes[0].get_ylabel().startswith("grid-cell\ncell (")
    assert fig.axes[3].get_ylabel().startswith("relation\nA ")
    assert fig.axes[2].get_title() == "64 px: 16x16 patches"
