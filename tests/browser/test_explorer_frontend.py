"""The explorers' browser front end draws the numbers companion computes, with no kernel.

Each test renders explorer outputs in headless Chromium (conftest.py's ``chromium``; no book
needed, every request blocked), sets the sliders as a reader would, reads what the figure shows
(each cell's ``data-value``, its written text and its colour) and compares it with
``companion.relative`` / ``companion.figures.explorers`` / ``companion.resize`` for the same
state.
Run alone with ``.venv/bin/python -m pytest tests/browser/test_explorer_frontend.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import matplotlib
import numpy as np
import pytest
import torch
from explorer_browser import clipped_texts, drive, page_html, read, show, texts, values
from matplotlib.colors import Normalize, to_hex

from companion.absolute import sincos_2d_position_embedding
from companion.attention import WindowAttention
from companion.figures.explorers import (
    _float_format,
    bias_bound,
    bias_row,
    embedding_similarity,
    relative_bias,
    relative_index_view,
)
from companion.figures.resize_explorer import HEADS, MAX_WINDOW, resize_explorer
from companion.figures.resolution import bump_table
from companion.figures.widgets import bias_explorer, embedding_explorer, relative_index_explorer
from companion.resize import RESIZE_METHODS, resize_bias_table, table_as_images


def _offline_page(chromium: Any, **context_options: Any) -> Any:
    """A page in which every request fails and every script error is kept in ``page.errors``."""
    context = chromium.new_context(**context_options)
    context.route("**/*", lambda route: route.abort("blockedbyclient"))
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    return page


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    page = _offline_page(chromium, viewport={"width": 1000, "height": 900})
    yield page
    assert page.errors == []
    page.context.close()


def _colour(cmap: str, vmin: float, vmax: float, value: float) -> str:
    """The colour matplotlib paints ``value`` with (the static figure's colour)."""
    return to_hex(matplotlib.colormaps[cmap](Normalize(vmin, vmax)(value)))


def _colours(cmap: str, vmin: float, vmax: float, values: np.ndarray) -> list[list[str]]:
    """``_colour`` of every entry of a 2-d array, at once (``to_hex`` once per distinct colour)."""
    rgba = matplotlib.colormaps[cmap](Normalize(vmin, vmax)(values))
    distinct, which = np.unique(rgba.reshape(-1, 4), axis=0, return_inverse=True)
    hexes = np.array([to_hex(c) for c in distinct])
    return hexes[which.reshape(values.shape)].tolist()


# ----- relative index ---------------------------------------------------------------------------


def test_the_browsers_relative_index_is_companions_for_every_window_and_query(page) -> None:
    (root,) = show(page, relative_index_explorer(max_window=5))
    states = [
        {"wh": wh, "ww": ww, "row": r, "col": c}
        for wh, ww in itertools.product(range(1, 6), repeat=2)
        for r, c in itertools.product(range(wh), range(ww))
    ]
    shown = drive(root, states)
    for state, seen in zip(states, shown, strict=True):
        assert seen["state"] == state
        view = relative_index_view((state["wh"], state["ww"]), (state["row"], state["col"]))
        panels = seen["panels"]
        assert values(panels["offset"]) == view.offsets.tolist(), state
        assert values(panels["shifted"]) == view.shifted.tolist(), state
        assert values(panels["multiplied"]) == view.multiplied.tolist(), state
        assert values(panels["index"]) == view.index.tolist(), state
        assert texts(panels["index"]) == [[str(v) for v in row] for row in view.index.tolist()]
        assert f"(token {view.token})" in seen["caption"]


def test_the_browsers_index_colours_are_the_static_figures(page) -> None:
    (root,) = show(page, relative_index_explorer((3, 4), (2, 1)))
    index = relative_index_view((3, 4), (2, 1)).index.tolist()
    fills = [[cell["fill"] for cell in row] for row in read(root)["panels"]["index"]]
    top = (2 * 3 - 1) * (2 * 4 - 1) - 1
    assert fills == [[_colour("viridis", 0, top, v) for v in row] for row in index]


def test_a_shrinking_window_pulls_the_query_back_in_as_explorer_update_does(page) -> None:
    explorer = relative_index_explorer((4, 4), (3, 3))
    (root,) = show(page, explorer)
    (seen,) = drive(root, [{"wh": 2}])
    assert seen["state"] == explorer.update(wh=2) == {"wh": 2, "ww": 4, "row": 1, "col": 3}
    assert root.eval_on_selector('input[name="row"]', "(i) => i.max") == "1"


# ----- bias -------------------------------------------------------------------------------------


def _bias_source(name: str) -> tuple[torch.nn.Module | torch.Tensor, tuple[int, int] | None]:
    """``(source, window_size)`` as the chapters pass them to ``bias_explorer``."""
    torch.manual_seed(0)
    if name == "window-attention":  # chapter 3: a 7x7 window, 4 heads, at initialisation
        return WindowAttention(dim=32, window_size=7, num_heads=4), None
    return torch.randn(3 * 5, 3) * 4, (2, 3)  # chapter 5: a loaded table, trained-sized values


@pytest.mark.parametrize("name", ["window-attention", "table"])
def test_the_browsers_bias_row_is_companions_for_every_head_and_query(page, name) -> None:
    source, window_size = _bias_source(name)
    bias, (wh, ww) = relative_bias(source, window_size)
    (root,) = show(page, bias_explorer(source, window_size))
    states = [
        {"head": h, "row": r, "col": c}
        for h in range(bias.shape[0])
        for r, c in itertools.product(range(wh), range(ww))
    ]
    for state, seen in zip(states, drive(root, states, ["row"]), strict=True):
        head = state["head"]
        expected = bias_row(source, (state["row"], state["col"]), head, window_size)
        row = seen["panels"]["row"]
        assert values(row) == expected.tolist(), state  # the exact float32 values
        written = _float_format(bias_bound(bias, head))
        assert texts(row) == [[written(v) for v in r] for r in expected.tolist()], state
        bound = bias_bound(bias, head)
        assert row[-1][0]["fill"] == _colour("RdBu_r", -bound, bound, expected[-1, 0].item())
    # The N x N panel is B[head] itself.
    (seen,) = drive(root, [{"head": 1, "row": 0, "col": 0}])
    assert values(seen["panels"]["matrix"]) == bias[1].tolist()


# ----- absolute embedding similarity ------------------------------------------------------------


@pytest.mark.parametrize(
    ("embedding", "grid", "prefix"),
    [
        (sincos_2d_position_embedding((14, 14), 64), (14, 14), 0),  # chapter 1's, smaller D
        (torch.randn(1, 1 + 3 * 4, 16, generator=torch.Generator().manual_seed(0)), (3, 4), 1),
    ],
    ids=["sincos-14x14", "learned-3x4-with-class-token"],
)
def test_the_browsers_similarity_map_is_companions_for_every_patch(
    page, embedding, grid, prefix
) -> None:
    (root,) = show(page, embedding_explorer(embedding, grid, num_prefix_tokens=prefix))
    step = 1 if max(grid) <= 8 else 3  # every patch of small grids, every third row and column
    cells = itertools.product(range(0, grid[0], step), range(0, grid[1], step))
    states = [{"row": r, "col": c} for r, c in cells]
    for state, seen in zip(states, drive(root, states), strict=True):
        expected = embedding_similarity(embedding, grid, (state["row"], state["col"]), prefix)
        panel = seen["panels"]["similarity"]
        assert values(panel) == expected.tolist(), state
        if max(grid) <= 8:
            assert texts(panel) == [[f"{v:.2f}" for v in r] for r in expected.tolist()]
        low = min(expected.min().item(), 0.999)
        assert panel[0][0]["fill"] == _colour("viridis", low, 1.0, expected[0, 0].item())


# ----- resizing a table (chapter 6) ------------------------------------------------------------

#: float32's machine epsilon: companion resizes in float32, the browser in float64.
_EPS32 = float(np.finfo(np.float32).eps)


def _written(value: float) -> str:
    """The explorer's hover text for a value: three decimals, no "-0.000"."""
    text = f"{value:.3f}"
    return text.lstrip("-") if float(text) == 0 else text


def test_the_browsers_resized_table_is_companions_for_every_window_method_and_head(page) -> None:
    (root,) = show(page, resize_explorer())
    # Every state of the sliders: 10 old x 11 new windows x 2 methods x 2 heads = 440, head and
    # method innermost so that most steps move one slider (each move redraws both panels).
    states = [
        {"old": old, "new": new, "method": m, "head": h}
        for old in range(3, MAX_WINDOW + 1)
        for new in range(2, MAX_WINDOW + 1)
        for m in range(len(RESIZE_METHODS))
        for h in range(2)
    ]
    resized = {}  # (old, new, method) -> the resized table, both heads
    for state, seen in zip(states, drive(root, states, ["old", "new"]), strict=True):
        old, new, head = state["old"], state["new"], state["head"]
        method = RESIZE_METHODS[state["method"]]
        assert seen["state"] == state
        assert seen["caption"] == (
            f"Head {head} of the {old}×{old} table resized to {new}×{new} ({method})"
        )
        table = bump_table(old)
        key = (old, new, method)
        if key not in resized:
            resized[key] = resize_bias_table(table, old, new, method)
        # The static figure (resize_figure) colours both panels on the old head's range.
        low, high = table[:, head].min().item(), table[:, head].max().item()
        for name, window, expected in (
            ("old", old, table_as_images(table, old)[head]),
            ("new", new, table_as_images(resized[key], new)[head]),
        ):
            panel = seen["panels"][name]
            drawn = np.array(values(panel))
            if name == "old":  # the embedded float32 table, decoded exactly
                assert drawn.tolist() == expected.tolist(), state
            else:
                # The browser resizes in float64 from the same float32 table; companion rounds
                # each weight, product and sum to float32 (~8 roundings per 4-tap pass, 2 passes)
                # on terms bounded by (sum |w|)^2 max|table| <= 1.9 max|table| (bicubic's sum |w|
                # peaks at 1.375, at t = 0.5), so |JS - companion| <~ 30 eps32 max|table|.
                # Measured over all 440 states: 7.3 (bicubic) and 1.7 (geometric) eps32 max|table|.
                # A relative tolerance would not do: a value near 0 carries the error of its terms.
                scale = table[:, head].abs().max().item()
                np.testing.assert_allclose(
                    drawn, expected.double().numpy(), rtol=0, atol=32 * _EPS32 * scale,
                    err_msg=str(state),
                )  # fmt: skip
            # Each cell's colour is matplotlib's for the value drawn (not companion's: the two
            # agree to the tolerance above, and a value that close to a colour step may fall on
            # either side of it).
            fills = [[cell["fill"] for cell in row] for row in panel]
            assert fills == _colours("viridis", low, high, drawn), state
            offsets = range(-(window - 1), window)
            assert [[cell["hint"] for cell in row] for row in panel] == [
                [f"offset ({dy}, {dx}): {_written(v)}" for dx, v in zip(offsets, row, strict=True)]
                for dy, row in zip(offsets, drawn.tolist(), strict=True)
            ], state
            # Tick labels are offsets (the static figure's axes): label k on cell k + window - 1.
            ticks = seen["ticks"][name]
            assert all(int(label) == at - (window - 1) for _, at, label in ticks), state
            assert {(axis, label) for axis, _, label in ticks} >= {("row", "0"), ("col", "0")}


def test_the_resize_method_and_the_head_are_toggle_buttons_named_by_their_choice(page) -> None:
    # Categories (a method, a head) are offered by name, not as a slider over their index.
    roots = show(page, resize_explorer(), resize_explorer())
    root = roots[0]
    assert [s.get_attribute("name") for s in root.query_selector_all("input[type=range]")] == [
        "old",
        "new",
    ]
    groups = root.eval_on_selector_all(
        ".cx-choices",
        "(gs) => gs.map((g) => [g.getAttribute('aria-label'),"
        " Array.from(g.querySelectorAll('label'), (l) => l.textContent)])",
    )
    assert groups == [["method", list(RESIZE_METHODS)], ["head", list(HEADS)]]
    # A click on a name picks it and redraws; the other explorer on the page keeps its own.
    root.query_selector("label.cx-choice:has(input[name=method][value='1'])").click()
    seen = read(root)
    assert seen["state"]["method"] == 1 and seen["caption"].endswith(f"({RESIZE_METHODS[1]})")
    assert read(roots[1])["state"]["method"] == 0
    # The keyboard moves between the names, as in any radio group.
    root.query_selector("input[name=head]:checked").focus()
    page.keyboard.press("ArrowLeft")
    assert read(root)["state"]["head"] == 0
    assert read(root)["caption"].startswith("Head 0 ")
    # The buttons are finger-sized and lie side by side on a 390 px phone too.
    page.set_viewport_size({"width": 390, "height": 844})
    boxes = [b.bounding_box() for b in root.query_selector_all("label.cx-choice span")]
    assert all(b["height"] >= 30 and b["x"] + b["width"] <= 390 for b in boxes), boxes


@pytest.mark.parametrize("window", [4, 7])
def test_the_bias_matrix_is_drawn_large_enough_to_read(page, window) -> None:
    # Chapter 5's 4x4 window has a 16x16 matrix, chapter 3's 7x7 one a 49x49: both are drawn
    # about 350 px wide (the 16x16 one was 200 px, its cells 12 px).
    torch.manual_seed(0)
    (root,) = show(page, bias_explorer(WindowAttention(dim=8, window_size=window, num_heads=2)))
    box = "(e) => e.getBoundingClientRect().width"
    width = root.eval_on_selector("svg[data-panel=matrix]", box)
    cell = root.eval_on_selector("svg[data-panel=matrix] g.cx-cell rect", box)
    assert width >= 330 and cell >= 7, (width, cell)


# ----- keyboard, touch, no JavaScript, print ----------------------------------------------------


def test_every_slider_is_reached_by_tab_and_moved_by_arrow_keys(page) -> None:
    (root,) = show(page, relative_index_explorer((2, 3), (0, 0)))
    reached = []
    for _ in range(4):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.name"))
    assert reached == ["wh", "ww", "row", "col"]
    before = read(root)
    page.keyboard.press("ArrowRight")  # query column 0 -> 1
    after = read(root)
    assert after["state"] == {"wh": 2, "ww": 3, "row": 0, "col": 1}
    assert values(after["panels"]["index"]) != values(before["panels"]["index"])
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowRight")  # query row 0 -> 1
    assert read(root)["state"] == {"wh": 2, "ww": 3, "row": 1, "col": 1}


def test_on_a_390_px_phone_nothing_overflows_and_touch_moves_the_query(chromium) -> None:
    torch.manual_seed(0)
    page = _offline_page(
        chromium, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    roots = show(
        page,
        relative_index_explorer((7, 7), (3, 3)),
        bias_explorer(WindowAttention(dim=32, window_size=7, num_heads=4), head=2, query=24),
        embedding_explorer(sincos_2d_position_embedding((14, 14), 64), (14, 14), (7, 7)),
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for root in roots:
        for slider in root.query_selector_all("input[type=range]"):
            box = slider.bounding_box()
            assert box["width"] >= 100 and box["height"] >= 24  # a usable touch target
    # A tap at the left end of the query column slider sets it to 0.
    slider = roots[0].query_selector('input[name="col"]')
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    page.touchscreen.tap(box["x"] + 3, box["y"] + box["height"] / 2)
    assert read(roots[0])["state"]["col"] == 0
    # A tap on a cell of the window picks it as the query.
    cell = roots[2].query_selector('g.cx-cell[data-row="2"][data-col="5"]')
    cell.scroll_into_view_if_needed()
    cell.tap()
    assert read(roots[2])["state"] == {"row": 2, "col": 5}
    assert page.errors == []
    page.context.close()


def test_no_title_tick_or_label_reaches_past_its_figure(page) -> None:
    # An SVG cuts off whatever text lies outside its box. Its panels scale as a whole (viewBox),
    # so what is cut at one page width is cut at every width.
    torch.manual_seed(0)
    explorers_and_states = [
        (relative_index_explorer(), [{"wh": 7, "ww": 7, "row": 6, "col": 6}, {"wh": 1, "ww": 7}]),
        (
            bias_explorer(WindowAttention(dim=32, window_size=7, num_heads=4)),
            [{"head": 3, "row": 6, "col": 6}],
        ),
        (
            embedding_explorer(sincos_2d_position_embedding((14, 14), 64), (14, 14)),
            [{"row": 13, "col": 13}],
        ),
        (resize_explorer(), [{"old": 12, "new": 12}, {"old": 3, "new": 2}, {"new": 11}]),
    ]
    roots = show(page, *(explorer for explorer, _ in explorers_and_states))
    for root, (explorer, states) in zip(roots, explorers_and_states, strict=True):
        assert clipped_texts(root) == [], explorer.title
        for state in states:
            drive(root, [state], [])
            assert clipped_texts(root) == [], state


def test_without_javascript_and_in_print_the_static_figure_shows(chromium) -> None:
    explorer = relative_index_explorer()
    html = page_html(explorer)
    visible = """(root) => {
      const shown = (e) => !!e && e.getBoundingClientRect().height > 0;
      const img = root.querySelector(".cx-static img");
      const live = root.querySelector(".cx-figure");
      return {image: shown(img) && img.naturalWidth > 0, live: shown(live)};
    }"""
    page = _offline_page(chromium, java_script_enabled=False)
    page.set_content(html)
    assert page.query_selector(".cx-explorer").evaluate(visible) == {"image": True, "live": False}
    page.context.close()
    page = _offline_page(chromium)
    (root,) = show(page, explorer)
    assert root.evaluate(visible) == {"image": False, "live": True}
    page.emulate_media(media="print")
    assert root.evaluate(visible) == {"image": True, "live": False}
    page.context.close()


def test_two_explorers_on_one_page_and_a_rerun_script_stay_independent(page) -> None:
    torch.manual_seed(0)
    roots = show(page, relative_index_explorer(), bias_explorer(WindowAttention(8, 2, 2)))
    drive(roots[0], [{"col": 2}])
    assert read(roots[1])["state"] == {"head": 0, "row": 0, "col": 0}
    # A front end may run an output's script again (JupyterLab re-rendering): nothing doubles.
    page.evaluate("eval(document.querySelectorAll('body > script, .output > script')[0].text)")
    assert page.eval_on_selector_all(".cx-controls", "(c) => c.length") == 2
    assert read(roots[0])["state"]["col"] == 2


def test_the_explorer_starts_when_a_notebook_front_end_inserts_the_output_later(page) -> None:
    # JupyterLab, Colab and the classic notebook insert an output's HTML into a live page and then
    # run its scripts by re-creating them; the explorer must not depend on being in the page
    # from the start (nor on document.currentScript, which is not the output's own script there).
    html = relative_index_explorer()._repr_mimebundle_()["text/html"]
    page.set_content("<!doctype html><html><body><div id='out'></div></body></html>")
    page.evaluate(
        """(html) => {
          const out = document.getElementById("out");
          out.innerHTML = html;  // scripts inserted this way do not run...
          for (const old of out.querySelectorAll("script")) {  // ...so front ends re-create them
            const script = document.createElement("script");
            for (const a of old.attributes) script.setAttribute(a.name, a.value);
            script.text = old.text;
            old.replaceWith(script);
          }
        }""",
        html,
    )
    root = page.wait_for_selector(".cx-explorer.cx-is-live", timeout=10_000)
    (seen,) = drive(root, [{"col": 2}])
    assert values(seen["panels"]["index"]) == relative_index_view((2, 3), (0, 2)).index.tolist()
