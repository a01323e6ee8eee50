"""Chapter 6's exercise solutions, its figures and its explorer."""

import math

import matplotlib
import pytest
import torch
from book_figures import assert_fits_the_page, assert_nothing_sticks_out_or_overlaps
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg

from companion.cpb import log_spaced_coordinates
from companion.exercises.ch06 import (
    cpb_reach,
    logit_from_offset,
    measured_unseen_share,
    peak_after_resize,
    unseen_pair_share,
)
from companion.figures.resize_explorer import resize_explorer
from companion.figures.resolution import (
    bump_table,
    plot_log_spacing,
    plot_offset_placement,
    plot_resized_tables,
    plot_rope_logits,
    plot_table_image,
    resize_figure,
)
from companion.rope import WindowRoPE, mixed_frequencies, rotate_pairs

matplotlib.use("Agg")


def test_bicubic_moves_a_preferred_offset_outwards_and_geometric_keeps_it():
    assert peak_after_resize(7, 12, "bicubic") == (0, 4)  # 2 * 23/13 = 3.5
    assert peak_after_resize(7, 12, "geometric") == (0, 2)
    assert peak_after_resize(7, 7, "bicubic") == (0, 2)  # same window: unchanged


def test_the_exercise_s_offsets_land_where_its_solution_says():
    assert peak_after_resize(7, 14, "bicubic", (0, 3)) == (0, 6)  # 3 * 27/13 = 6.2
    assert peak_after_resize(7, 14, "geometric", (0, 3)) == (0, 4)  # 1 + q + q^2 = 4.02
    assert peak_after_resize(4, 8, "geometric") == (0, 3)  # q capped at 1.5: offset 2 at 2.5


def test_cpb_reach_matches_the_coordinate_table():
    trained, reached = cpb_reach(7, 12)
    assert trained == pytest.approx(math.log2(9) / 3)
    coords = log_spaced_coordinates(12, pretrained_window_size=7)
    assert reached == pytest.approx(coords.max().item())
    assert cpb_reach(8, 8)[0] == cpb_reach(8, 8)[1]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    query=st.tuples(st.integers(0, 6), st.integers(0, 6)),
    key=st.tuples(st.integers(0, 6), st.integers(0, 6)),
)
def test_logit_from_offset_equals_rotating_query_and_key_at_their_positions(seed, query, key):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(8, generator=g).double()
    freqs = mixed_frequencies(8, 1, generator=g)[:, 0].double()  # (2, 4)

    def rotated(x, at):
        angles = at[0] * freqs[0] + at[1] * freqs[1]
        return rotate_pairs(x[None, None], angles[None, None])[0, 0]

    expected = rotated(q, query) @ rotated(k, key)
    offset = torch.tensor([key[0] - query[0], key[1] - query[1]], dtype=torch.float64)
    torch.testing.assert_close(logit_from_offset(q, k, offset, freqs), expected)


def test_bump_table_has_its_maximum_at_the_peak_and_a_distance_head():
    images = bump_table(4).T.reshape(2, 7, 7)
    assert divmod(int(images[1].argmax()), 7) == (3, 5)  # offset (0, 2)
    assert images[0, 3, 3] == 0 and images[0].max() == 0


FIGURES = {
    "resized": lambda: plot_resized_tables(bump_table(7), 7, 12, title="bump, 7 → 12"),
    "placement": lambda: plot_offset_placement(7, 12),
    "log": lambda: plot_log_spacing(7, 14),
    "table": lambda: plot_table_image(bump_table(4), 4, "two heads"),
    "rope": lambda: plot_rope_logits(
        {"axial": WindowRoPE(7, 16, 2, "axial"), "mixed": WindowRoPE(7, 16, 2, "mixed")}, [24, 0]
    ),
    "explorer": lambda: resize_figure(4, 8, "geometric", 1),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figures_fit_the_page_legibly(name):
    torch.manual_seed(0)
    fig = FIGURES[name]()
    if not hasattr(fig.canvas, "get_renderer"):  # the explorer's bare Figure has no pyplot canvas
        FigureCanvasAgg(fig)
    assert_fits_the_page(fig)
    assert_nothing_sticks_out_or_overlaps(fig)


def test_resize_explorer_redraws_for_every_method_and_rejects_bad_values():
    explorer = resize_explorer()
    assert explorer.update(method=1, new=12)["method"] == 1
    assert explorer.png[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="new must be in"):
        explorer.update(new=40)
    with pytest.raises(ValueError, match="method must be one of"):
        resize_explorer(method="nearest")


def test_rope_vit_table_lists_our_pos_names_and_the_drops():
    from companion.experiments.paper import ROPE_VIT_SWIN_T, rope_vit_swin_markdown
    from companion.swin_configs import POS_CHOICES

    assert set(ROPE_VIT_SWIN_T) <= set(POS_CHOICES)
    text = rope_vit_swin_markdown()
    assert "| `rel` | 81.2 | 78.9 | -2.3 |" in text
    assert "| `rope-mixed` | 81.4 | 79.5 | -1.9 |" in text


def test_the_unseen_pair_share_is_predicted_exactly_and_matches_the_generated_pairs():
    assert unseen_pair_share(32) == 0.0
    assert unseen_pair_share(48) == pytest.approx(1 - 56 / 132)
    for size in (48, 64):
        assert abs(measured_unseen_share(size, n=2000) - unseen_pair_share(size)) < 0.03
