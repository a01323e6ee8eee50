"""companion.figures.widgets and .live: the explorers' controls and the output they display.

What the browser draws from that output is tested in tests/browser/test_explorer_frontend.py; here
the Python side: controls, the static figure, and an output that is the same on every run (nbval
compares it) and needs no ipywidgets.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from nbclient import NotebookClient
from nbval.plugin import get_sanitize_patterns

from companion.attention import WindowAttention
from companion.figures.explorers import (
    bias_table,
    embedding_similarities,
    relative_index_figure,
)
from companion.figures.live import colormap_table
from companion.figures.resize_explorer import HEADS, resize_explorer
from companion.figures.widgets import (
    Control,
    Explorer,
    bias_explorer,
    embedding_explorer,
    figure_png,
    relative_index_explorer,
    show_explorer,
)
from companion.resize import RESIZE_METHODS

ROOT = Path(__file__).resolve().parent.parent
SANITIZE = get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text())


def _spec(html: str) -> dict:
    """The JSON an explorer's HTML hands to its script."""
    match = re.search(r'<script type="application/json" class="cx-data">([^<]*)</script>', html)
    assert match, "no explorer data in the HTML"
    return json.loads(match[1])


def _float32s(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def _sanitized(html: str) -> str:
    for regex, replace in SANITIZE:
        html = re.sub(regex, replace, html)
    return html


# ----- without widgets --------------------------------------------------------------------------


def test_update_clamps_the_query_into_a_shrinking_window() -> None:
    explorer = relative_index_explorer((3, 3), (2, 2))
    assert explorer.update(wh=2) == {"wh": 2, "ww": 3, "row": 1, "col": 2}
    assert explorer.update(ww=1) == {"wh": 2, "ww": 1, "row": 1, "col": 0}
    assert explorer.high("row") == 1


def test_update_redraws_the_figure_for_the_new_values() -> None:
    explorer = relative_index_explorer()
    before = explorer.png
    explorer.update(wh=3, ww=3, row=1, col=1)
    assert explorer.png != before
    assert explorer.png == figure_png(relative_index_figure((3, 3), (1, 1)))


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"depth": 1}, ValueError, r"control must be one of \['wh', 'ww', 'row', 'col'\]"),
        ({"wh": 8}, ValueError, r"wh must be in \[1, 7\], got 8"),
        ({"row": 2}, ValueError, r"row must be in \[0, 1\], got 2"),  # the window has 2 rows
        ({"wh": 2.0}, TypeError, r"wh must be an int, got 2.0 \(float\)"),
    ],
)
def test_update_rejects_unknown_names_and_values_out_of_range(changes, error, message) -> None:
    explorer = relative_index_explorer()
    with pytest.raises(error, match=message):
        explorer.update(**changes)
    assert explorer.values == {"wh": 2, "ww": 3, "row": 0, "col": 0}


def test_explorers_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match=r"window_size must be at most max_window=7.*\(8, 2\)"):
        relative_index_explorer((8, 2))
    with pytest.raises(ValueError, match=r"query must be a cell.*\(0, 3\)"):
        relative_index_explorer((2, 3), (0, 3))
    with pytest.raises(ValueError, match=r"head must be in \[0, 1\], got 2"):
        bias_explorer(WindowAttention(8, 2, 2), head=2)
    with pytest.raises(ValueError, match=r"embedding must have shape \(1, 4, D\)"):
        embedding_explorer(torch.zeros(1, 5, 3), 2)
    with pytest.raises(TypeError, match="explorer must be an Explorer, got Figure"):
        show_explorer(relative_index_figure())


def test_every_explorer_starts_from_the_values_it_was_given() -> None:
    torch.manual_seed(0)
    assert bias_explorer(WindowAttention(16, (2, 3), 4), head=3, query=4).values == {
        "head": 3,
        "row": 1,
        "col": 1,
    }
    table = torch.zeros(9, 2)
    assert bias_explorer(table, window_size=2, query=(1, 0)).values == {
        "head": 0,
        "row": 1,
        "col": 0,
    }
    explorer = embedding_explorer(torch.randn(1, 1 + 6, 4), (2, 3), (1, 2), num_prefix_tokens=1)
    assert explorer.values == {"row": 1, "col": 2}


def test_a_control_can_only_be_bound_by_another_control() -> None:
    with pytest.raises(ValueError, match=r"controls\['row'\].bound_by must be one of \['row'\]"):
        Explorer(
            "t",
            lambda row: relative_index_figure(),
            {"row": Control("row", 0, 1, 0, bound_by="wh")},
            view="relative-index",
            data={},
        )


def test_a_control_with_choices_names_each_of_its_values() -> None:
    control = Control.choice("method", ("bicubic", "geometric"), "geometric")
    assert control == Control("method", 0, 1, 1, choices=("bicubic", "geometric"))
    with pytest.raises(ValueError, match=r"method must be one of \['bicubic', 'geometric'\]"):
        Control.choice("method", ("bicubic", "geometric"), "nearest")
    with pytest.raises(ValueError, match=r"choices must name each value of \[0, 2\], got 2"):
        Control("method", 0, 2, 0, choices=("a", "b"))
    with pytest.raises(ValueError, match="a control with choices cannot be bound"):
        Control("head", 0, 1, 0, bound_by="wh", choices=("a", "b"))


def test_the_resize_explorer_offers_its_method_and_head_by_name() -> None:
    # Categories are toggle buttons in the browser, amounts sliders; values stay numbers.
    explorer = resize_explorer(method="geometric", head=0)
    controls = {c["name"]: c for c in explorer.spec()["controls"]}
    assert controls["method"]["choices"] == list(RESIZE_METHODS)
    assert controls["method"]["value"] == RESIZE_METHODS.index("geometric")
    assert controls["head"]["choices"] == list(HEADS) and controls["head"]["value"] == 0
    assert controls["old"]["choices"] == controls["new"]["choices"] == []
    assert explorer.update(method=0, head=1) == {"old": 4, "new": 8, "method": 0, "head": 1}
    with pytest.raises(ValueError, match=r"head must be in \[0, 1\], got 2"):
        resize_explorer(head=2)


# ----- the displayed output ---------------------------------------------------------------------


def test_the_output_holds_the_live_html_the_static_png_and_a_line_of_text() -> None:
    explorer = relative_index_explorer((2, 3), (1, 2))
    bundle = explorer._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", "image/png"}
    assert bundle["image/png"] == explorer.png
    html = bundle["text/html"]
    # The static figure is inside the HTML too, for readers without JavaScript and for print.
    assert base64.b64encode(explorer.png).decode() in html
    assert html.startswith('<div class="cx-explorer">') and html.endswith("</script>")
    assert "wh=2, ww=3, row=1, col=2" in bundle["text/plain"]


def test_the_html_hands_the_controls_and_their_bounds_to_the_browser() -> None:
    spec = _spec(
        relative_index_explorer((2, 3), (1, 2), max_window=5)._repr_mimebundle_()["text/html"]
    )
    assert spec["view"] == "relative-index"
    assert [
        (c["name"], c["low"], c["high"], c["value"], c["boundBy"]) for c in spec["controls"]
    ] == [
        ("wh", 1, 5, 2, None),
        ("ww", 1, 5, 3, None),
        ("row", 0, 4, 1, "wh"),
        ("col", 0, 4, 2, "ww"),
    ]
    assert spec["data"]["colormaps"]["viridis"] == colormap_table("viridis")


def test_the_html_embeds_the_exact_bias_table_and_similarities() -> None:
    torch.manual_seed(0)
    attn = WindowAttention(dim=16, window_size=3, num_heads=2)
    data = _spec(bias_explorer(attn, head=1)._repr_mimebundle_()["text/html"])["data"]
    table, window = bias_table(attn)
    assert data["window"] == list(window) == [3, 3]
    assert np.array_equal(_float32s(data["table"]), table.numpy().ravel())
    embedding = torch.randn(1, 1 + 6, 8)
    data = _spec(
        embedding_explorer(embedding, (2, 3), num_prefix_tokens=1)._repr_mimebundle_()["text/html"]
    )["data"]
    expected = embedding_similarities(embedding, (2, 3), 1).numpy().ravel()
    assert np.array_equal(_float32s(data["matrix"]), expected)


def test_the_html_is_the_same_on_every_run_and_needs_no_ids() -> None:
    first = relative_index_explorer()._repr_mimebundle_()["text/html"]
    assert relative_index_explorer()._repr_mimebundle_()["text/html"] == first
    assert not re.search(r"\bid=", first)


def test_nbval_sanitizing_keeps_the_controls_and_blanks_only_the_machine_dependent_bits() -> None:
    # The float32 data and the PNG may differ in their last bits across machines; the rest of the
    # HTML (controls, code, colour maps) must still match exactly.
    torch.manual_seed(0)
    one = bias_explorer(WindowAttention(8, 2, 2))._repr_mimebundle_()["text/html"]
    two = bias_explorer(WindowAttention(8, 2, 2))._repr_mimebundle_()["text/html"]
    assert one != two
    assert _sanitized(one) == _sanitized(two)
    other_query = bias_explorer(WindowAttention(8, 2, 2), query=1)._repr_mimebundle_()
    assert _sanitized(other_query["text/html"]) != _sanitized(one)
    assert "FLOAT32" in _sanitized(one) and "base64,PNG" in _sanitized(one)
    assert "document.querySelectorAll" in _sanitized(one)  # the script is compared as is


def test_show_needs_no_ipywidgets(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes `import ipywidgets` fail
    show_explorer(relative_index_explorer())
    out = capsys.readouterr().out
    assert "Relative position index for one query: interactive in a browser" in out


# ----- in a live kernel -------------------------------------------------------------------------


@pytest.mark.slow
def test_in_a_kernel_the_output_is_the_live_html_and_the_same_on_a_rerun() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from companion.figures.widgets import relative_index_explorer, show_explorer\n"
            "show_explorer(relative_index_explorer(window_size=(2, 3), query=(1, 2)))"
        )
    ]
    outputs = []
    for _ in range(2):
        client = NotebookClient(
            nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}}
        )
        client.execute()
        outputs.append(nb.cells[0].outputs)
    (first,), (second,) = outputs
    assert first.output_type == "display_data"
    assert set(first.data) == {"text/plain", "text/html", "image/png"}
    assert first.data["text/html"] == second.data["text/html"]  # nbval compares it as is
    assert "widgets" not in nb.metadata  # no widget state to save: the output is self-contained
