"""Chapter 6's experiment figures: the two renderings, and every code moved beside its reference."""

import pytest
from book_figures import assert_fits_the_page

from companion.figures.resolution import plot_moved_seeds, plot_renderings


def _rows():
    rows = []
    for seed in (0, 1):
        for pos, grown in (("rel", "window-grown-geometric"), ("cpb", "window-grown")):
            rows.append({"dataset": "d", "pos": pos, "seed": seed, "size": 32,
                         "rendering": "scaled", "condition": "trained", "acc": 0.9})  # fmt: skip
            for rendering in ("scaled", "world"):
                for cond in ("window-kept", grown):
                    rows.append({"dataset": "d", "pos": pos, "seed": seed, "size": 48,
                                 "rendering": rendering, "condition": cond,
                                 "acc": 0.5 + 0.1 * seed, "acc_finetuned": 0.8})  # fmt: skip
    return rows


def _reference(accuracy):
    runs = [{"dataset": "d", "pos": "rel", "seed": s, "final": {"test_acc": accuracy}}
            for s in (0, 1)]  # fmt: skip
    return {"runs": runs}


def test_seed_figure_draws_every_seed_of_every_column_and_the_constant_answer():
    fig = plot_moved_seeds(_rows(), {"world": _reference(0.7)}, "d", ["scaled", "world"], 48,
                           {"scaled": 0.25, "world": 0.3})  # fmt: skip
    assert_fits_the_page(fig)
    scaled, world = fig.axes
    assert world.get_title() == "d, world rendering at 48 px"
    # rel: trained, kept, kept ft, grown, grown ft, reference; two seeds each
    rel = [list(line.get_ydata()) for line in world.lines[:6]]
    assert rel == [[90.0, 90.0], [50.0, 60.0], [80.0, 80.0], [50.0, 60.0], [80.0, 80.0],
                   [70.0, 70.0]]  # fmt: skip
    assert len(scaled.lines[5].get_ydata()) == 0  # no scaled reference
    assert world.lines[-1].get_ydata()[0] == pytest.approx(30.0)  # the constant answer
    assert [t.get_text() for t in scaled.get_xticklabels()] == ["rel", "cpb"]


def test_renderings_figure_shows_each_task_at_32_px_once_then_each_rendering_and_fits_the_page():
    fig = plot_renderings(["grid-cell", "relation"], [32, 48], ["scaled", "world"], index=1)
    assert_fits_the_page(fig)
    shapes = [ax.images[0].get_array().shape[:2] for ax in fig.axes]
    assert shapes == [(32, 32), (48, 48), (48, 48)] * 2
    assert fig.axes[0].get_ylabel().startswith("grid-cell\ncell (")
    assert fig.axes[3].get_ylabel().startswith("relation\nA ")
    assert [ax.get_title() for ax in fig.axes[:3]] == [
        "32 px\n8x8 patches",
        "48 px, scaled\n12x12 patches",
        "48 px, world\n12x12 patches",
    ]
    # The world rendering keeps the object's size: fewer bright pixels than the scaled one.
    scaled, world = (fig.axes[i].images[0].get_array().max(-1) > 150 for i in (1, 2))
    assert 0 < world.sum() < scaled.sum()
