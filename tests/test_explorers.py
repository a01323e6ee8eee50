"""companion.figures.explorers: the explorers' logic and static figures, without any widget."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from book_figures import assert_fits_the_page
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from companion.attention import WindowAttention
from companion.figures.explorers import (
    bias_bound,
    bias_row,
    bias_row_figure,
    bias_table,
    embedding_similarities,
    embedding_similarity,
    embedding_similarity_figure,
    float_decimals,
    relative_bias,
    relative_index_figure,
    relative_index_view,
    to_cell,
)
from companion.relative import lookup_bias, relative_position_index

SEED_M2_INDEX = [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


# ----- to_cell ----------------------------------------------------------------------------------


def test_to_cell_accepts_a_pair_or_a_row_major_token_number() -> None:
    assert to_cell("query", (1, 2), (2, 3)) == (1, 2)
    assert to_cell("query", [0, 1], (2, 3)) == (0, 1)
    assert to_cell("query", 5, (2, 3)) == (1, 2)
    assert to_cell("query", 0, (1, 1)) == (0, 0)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (
            (2, 0),
            ValueError,
            r"query must be a cell \(row, col\) with row in \[0, 1\].*got \(2, 0\)",
        ),
        ((0, -1), ValueError, r"col in \[0, 2\].*got \(0, -1\)"),
        (6, ValueError, r"query must be a token number in \[0, 5\].*got 6"),
        (-1, ValueError, r"query must be a token number in \[0, 5\].*got -1"),
        ("a", TypeError, r"query must be a \(row, col\) pair of ints or an int.*got 'a' \(str\)"),
        ((1.0, 2), TypeError, r"query must be a \(row, col\) pair.*got \(1.0, 2\)"),
        (True, TypeError, r"query must be.*got True \(bool\)"),
        ((1, 2, 3), TypeError, r"query must be a \(row, col\) pair"),
    ],
)
def test_to_cell_rejects_cells_outside_the_grid(value, error, message) -> None:
    with pytest.raises(error, match=message):
        to_cell("query", value, (2, 3))


# ----- relative index ---------------------------------------------------------------------------


def test_relative_index_view_reproduces_the_seed_example_for_m2() -> None:
    for token, expected in enumerate(SEED_M2_INDEX):
        view = relative_index_view(2, token)
        assert view.index.flatten().tolist() == expected


def test_relative_index_view_steps_for_one_query_of_a_2x3_window() -> None:
    view = relative_index_view((2, 3), (0, 1))
    assert view.window_size == (2, 3)
    assert view.query == (0, 1)
    assert view.token == 1
    # key (i, j): offset (0 - i, 1 - j); shifted by (1, 2); row part times 2*3-1 = 5
    assert view.offsets.tolist() == [[[0, 1], [0, 0], [0, -1]], [[-1, 1], [-1, 0], [-1, -1]]]
    assert view.shifted.tolist() == [[[1, 3], [1, 2], [1, 1]], [[0, 3], [0, 2], [0, 1]]]
    assert view.multiplied.tolist() == [[[5, 3], [5, 2], [5, 1]], [[0, 3], [0, 2], [0, 1]]]
    assert view.index.tolist() == [[8, 7, 6], [3, 2, 1]]


@settings(max_examples=40, deadline=None)
@given(
    wh=st.integers(1, 6),
    ww=st.integers(1, 6),
    data=st.data(),
)
def test_relative_index_view_is_the_querys_row_of_relative_position_index(wh, ww, data) -> None:
    row = data.draw(st.integers(0, wh - 1))
    col = data.draw(st.integers(0, ww - 1))
    view = relative_index_view((wh, ww), (row, col))
    token = row * ww + col
    assert torch.equal(view.index.flatten(), relative_position_index((wh, ww))[token])
    assert torch.equal(view.index, view.multiplied.sum(-1))
    # the query's own cell has offset (0, 0): the centre row of the table
    assert view.offsets[row, col].tolist() == [0, 0]
    assert view.index[row, col].item() == (wh - 1) * (2 * ww - 1) + (ww - 1)


def test_relative_index_view_rejects_a_bad_window_or_query() -> None:
    with pytest.raises(TypeError, match="window_size must be an int >= 1 or a pair"):
        relative_index_view("2", 0)
    with pytest.raises(ValueError, match=r"query must be a token number in \[0, 3\].*got 4"):
        relative_index_view(2, 4)


def test_relative_index_figure_writes_every_steps_values_in_its_grid() -> None:
    fig = relative_index_figure((2, 3), (0, 1))
    assert isinstance(fig, Figure)
    offset_ax, shifted_ax, multiplied_ax, index_ax = fig.axes
    assert _texts(offset_ax) == ["(0,1)", "(0,0)", "(0,-1)", "(-1,1)", "(-1,0)", "(-1,-1)"]
    assert _texts(shifted_ax)[0] == "(1,3)"
    assert _texts(multiplied_ax)[0] == "(5,3)"
    assert _texts(index_ax) == ["8", "7", "6", "3", "2", "1"]
    assert "(0, 1)" in fig._suptitle.get_text()
    assert "token 1" in fig._suptitle.get_text()


def test_relative_index_figure_defaults_to_the_books_2x3_window() -> None:
    fig = relative_index_figure()
    assert _texts(fig.axes[3]) == [str(v) for v in relative_position_index((2, 3))[0].tolist()]


# ----- bias -------------------------------------------------------------------------------------


def test_relative_bias_reads_window_attention_modules() -> None:
    torch.manual_seed(0)
    for attn, window in (
        (WindowAttention(8, (2, 3), 2), (2, 3)),
        (WindowAttention(16, 3, 4), (3, 3)),
    ):
        bias, found = relative_bias(attn)
        assert found == window
        assert torch.equal(bias, attn.relative_position_bias().detach())
        assert not bias.requires_grad


def test_relative_bias_reads_a_bias_table_with_its_window_size() -> None:
    table = torch.arange(15 * 2, dtype=torch.float32).view(15, 2)
    bias, window = relative_bias(table, (2, 3))
    assert window == (2, 3)
    assert torch.equal(bias, lookup_bias(table, relative_position_index((2, 3))))


def test_relative_bias_reads_timms_swin_attention() -> None:
    swin = pytest.importorskip("timm.models.swin_transformer")
    torch.manual_seed(0)
    attn = swin.WindowAttention(dim=8, num_heads=2, window_size=(3, 3))
    bias, window = relative_bias(attn)
    assert window == (3, 3)
    assert torch.equal(bias, attn._get_rel_pos_bias()[0].detach())


@pytest.mark.parametrize(
    ("source", "window_size", "error", "message"),
    [
        (torch.zeros(15, 2), None, ValueError, "window_size must be given when source is a bias"),
        (
            torch.zeros(9, 2),
            (2, 3),
            ValueError,
            r"source must be a bias table of shape.*=15.*\(9, 2\)",
        ),
        (torch.zeros(15), (2, 3), ValueError, r"source must be a bias table.*got shape \(15,\)"),
        ([[0.0]], 1, TypeError, "source must be an nn.Module .* got list"),
    ],
)
def test_relative_bias_rejects_a_bad_source(source, window_size, error, message) -> None:
    with pytest.raises(error, match=message):
        relative_bias(source, window_size)


def test_relative_bias_rejects_a_module_without_bias_or_with_another_window() -> None:
    with pytest.raises(ValueError, match=r"must hold a relative position bias.*position=None"):
        relative_bias(WindowAttention(8, 2, 2, position=None))
    with pytest.raises(
        ValueError, match=r"window_size must match the module's window_size=\(2, 2\)"
    ):
        relative_bias(WindowAttention(4, 2, 1), window_size=3)


def test_bias_table_is_the_modules_table_as_float32_on_the_cpu() -> None:
    torch.manual_seed(0)
    module = WindowAttention(16, (2, 3), 4).double()
    table, window = bias_table(module)
    assert window == (2, 3)
    assert table.dtype == torch.float32 and not table.requires_grad
    assert torch.equal(table, module.code.relative_position_bias_table.detach().float())


def test_bias_table_rejects_a_module_whose_index_is_not_the_standard_one() -> None:
    # The browser rebuilds the index from the window, so only the standard index can be shown.
    module = WindowAttention(4, 2, 1)
    module.code.relative_position_index = module.code.relative_position_index.flip(0)
    with pytest.raises(ValueError, match=r"relative_position_index must be .*\(2, 2\)"):
        bias_table(module)


def test_bias_bound_and_decimals_set_the_scale_of_each_head() -> None:
    bias = torch.tensor([[[0.0, -0.03]], [[0.0, 0.0]], [[4.5, -2.0]]])
    assert [bias_bound(bias, h) for h in range(3)] == pytest.approx([0.03, 1.0, 4.5])
    assert [float_decimals(b) for b in (0.03, 0.2, 1.0, 4.5, 60.0)] == [3, 2, 2, 2, 2]
    assert float_decimals(0.0004) == 4


def test_bias_row_is_one_row_of_b_laid_out_on_the_window() -> None:
    torch.manual_seed(0)
    module = WindowAttention(16, (2, 3), 4)
    bias = module.relative_position_bias().detach()
    row = bias_row(module, (1, 2), head=3)
    assert row.shape == (2, 3)
    assert torch.equal(row.flatten(), bias[3, 5])
    assert torch.equal(bias_row(module, 5, head=3), row)


def test_bias_row_rejects_a_head_outside_the_table() -> None:
    module = WindowAttention(8, 2, 2)
    with pytest.raises(ValueError, match=r"head must be in \[0, 1\], got 2"):
        bias_row(module, 0, head=2)
    with pytest.raises(TypeError, match=r"head must be an int, got 0.5 \(float\)"):
        bias_row(module, 0, head=0.5)
    with pytest.raises(ValueError, match=r"query must be a cell.*got \(2, 0\)"):
        bias_row(module, (2, 0))


def test_bias_row_figure_writes_the_rows_values_on_the_window() -> None:
    table = torch.linspace(-1, 1, 15 * 2).view(15, 2)
    fig = bias_row_figure(table, head=1, query=(1, 1), window_size=(2, 3))
    matrix_ax, window_ax = fig.axes[:2]
    expected = bias_row(table, (1, 1), head=1, window_size=(2, 3)).flatten().tolist()
    assert [float(t) for t in _texts(window_ax)] == pytest.approx(expected, abs=0.006)
    assert "B[head 1]: 6×6" in matrix_ax.get_title()
    assert "head 1" in fig._suptitle.get_text()


# ----- absolute embedding -----------------------------------------------------------------------


def test_embedding_similarity_is_the_cosine_to_the_chosen_patch() -> None:
    torch.manual_seed(0)
    embedding = torch.randn(1, 6, 5)
    similarity = embedding_similarity(embedding, (2, 3), (1, 0))
    expected = F.cosine_similarity(embedding[0], embedding[0, 3:4], dim=-1).view(2, 3)
    assert similarity.shape == (2, 3)
    assert torch.allclose(similarity, expected, atol=1e-6)
    assert similarity[1, 0].item() == pytest.approx(1.0)


def test_embedding_similarities_row_t_is_the_map_of_patch_t() -> None:
    torch.manual_seed(0)
    embedding = torch.randn(1, 1 + 6, 5)
    maps = embedding_similarities(embedding, (2, 3), num_prefix_tokens=1)
    assert maps.shape == (6, 2, 3)
    for t in range(6):
        assert torch.equal(maps[t], embedding_similarity(embedding, (2, 3), t, 1))
    assert torch.allclose(maps.view(6, 6), maps.view(6, 6).T, atol=1e-6)


def test_embedding_similarity_skips_the_class_token_and_accepts_2d_input() -> None:
    torch.manual_seed(0)
    patches = torch.randn(4, 3)
    with_cls = torch.cat([torch.randn(1, 3), patches])[None]
    assert torch.allclose(
        embedding_similarity(with_cls, 2, 3, num_prefix_tokens=1),
        embedding_similarity(patches, 2, (1, 1)),
    )


def test_embedding_similarity_of_a_learnable_parameter_needs_no_grad() -> None:
    param = torch.nn.Parameter(torch.randn(1, 4, 3))
    assert not embedding_similarity(param, 2, 0).requires_grad


@pytest.mark.parametrize(
    ("embedding", "kwargs", "error", "message"),
    [
        ([[1.0]], {}, TypeError, "embedding must be a torch.Tensor, got list"),
        (
            torch.zeros(1, 5, 3),
            {},
            ValueError,
            r"embedding must have shape \(1, 4, D\).*\(1, 5, 3\)",
        ),
        (torch.zeros(2, 4, 3), {}, ValueError, r"embedding must have shape.*got \(2, 4, 3\)"),
        (torch.zeros(4, 3), {"num_prefix_tokens": -1}, ValueError, "num_prefix_tokens must be"),
        (torch.zeros(4, 3), {"num_prefix_tokens": 1.0}, TypeError, "num_prefix_tokens must be"),
        (torch.zeros(4, 3), {"patch": (2, 0)}, ValueError, r"patch must be a cell.*\(2, 0\)"),
    ],
)
def test_embedding_similarity_rejects_bad_input(embedding, kwargs, error, message) -> None:
    kwargs = {"patch": 0, **kwargs}
    with pytest.raises(error, match=message):
        embedding_similarity(embedding, 2, **kwargs)


def test_embedding_similarity_figure_marks_the_patch_and_writes_small_grids() -> None:
    torch.manual_seed(0)
    fig = embedding_similarity_figure(torch.randn(1, 1 + 4, 3), 2, (0, 1), num_prefix_tokens=1)
    ax = fig.axes[0]
    assert "(0, 1)" in ax.get_title()
    assert _texts(ax)[1] == "1.00"
    big = embedding_similarity_figure(torch.randn(14 * 14, 8), 14)
    assert _texts(big.axes[0]) == []  # 196 cells: colours only


# ----- page width -------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [(1, 1), (2, 3), (3, 3), (5, 5), (7, 1), (1, 7), (7, 7)])
def test_every_explorer_figure_fits_the_book_column_with_legible_text(window) -> None:
    torch.manual_seed(0)
    wh, ww = window
    assert_fits_the_page(relative_index_figure(window, (wh - 1, ww - 1)))
    table = torch.randn((2 * wh - 1) * (2 * ww - 1), 2)
    assert_fits_the_page(bias_row_figure(table, 1, (0, 0), window))
    assert_fits_the_page(embedding_similarity_figure(torch.randn(wh * ww, 8), window))
    assert_fits_the_page(embedding_similarity_figure(torch.randn(1, 1 + 14 * 14, 8), 14, 0, 1))


def test_relative_index_figure_writes_pairs_on_two_lines_when_cells_are_narrow() -> None:
    fig = relative_index_figure((7, 7), (3, 3))
    assert _texts(fig.axes[0])[0] == "3\n3"  # offset (3, 3) of key (0, 0)
    assert "one value above the other" in fig._suptitle.get_text()
    assert "above" not in relative_index_figure()._suptitle.get_text()
