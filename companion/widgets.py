"""Interactive explorers: ipywidgets controls wired to the figures of ``companion.explorers``.

A chapter cell calls, for example, ``show_explorer(relative_index_explorer())``. That displays two
outputs: the controls, then the figure for the current values as a plain PNG. The PNG is what
every reader without a kernel sees (the static book, GitHub, a PDF); in a live kernel, moving a
control redraws that same output in place (a display id), so there is only ever one figure.

Only APIs that ipywidgets 7.7 (Colab's) and 8 share are used: ``IntSlider``, ``Dropdown``,
``HTML``, ``HBox``, ``VBox``, ``Layout`` and ``observe(..., names="value")``. ipywidgets is imported
only when controls are built, and without it ``show_explorer`` still shows the figure.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from torch import Tensor, nn

from companion._checks import to_pair
from companion.explorers import (
    Cell,
    bias_row_figure,
    embedding_similarity_figure,
    relative_bias,
    relative_index_figure,
    to_cell,
)
from companion.relative import WindowSize

#: Explorer figures are rendered at this resolution and shown at 2/3 of their pixel width, which
#: keeps them sharp on high-density screens.
PNG_DPI = 150
_DISPLAY_SCALE = 100 / PNG_DPI
_NOTE = (
    "<i>Interactive with a running kernel (Jupyter or Colab): move a control and the figure "
    "below redraws. Without one, the figure shows the default values.</i>"
)


@dataclass(frozen=True)
class Control:
    """One integer control: a slider over ``[low, high]``, or a drop-down of ``options``.

    ``options`` are ``(label, value)`` pairs; when given, ``low``/``high`` are their bounds.
    """

    label: str
    low: int
    high: int
    value: int
    options: tuple[tuple[str, int], ...] | None = None


Limits = Callable[[Mapping[str, int]], dict[str, int]]


def figure_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """Render ``fig`` to PNG bytes (tight bounding box)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _png_image(png: bytes) -> Any:
    from IPython.display import Image

    width = int.from_bytes(png[16:20], "big")  # IHDR: the first chunk holds the pixel width
    return Image(data=png, format="png", width=round(width * _DISPLAY_SCALE))


class Explorer:
    """Named integer controls and a figure function of them; redraws when a control moves.

    Args:
        title: shown above the controls.
        draw: ``draw(**values) -> Figure``.
        controls: name -> ``Control``; the names are ``draw``'s keyword arguments.
        limits: ``limits(values) -> {name: high}`` for controls whose upper bound depends on
            other controls (a query row must stay inside the window); values are clamped to it.
    """

    def __init__(
        self,
        title: str,
        draw: Callable[..., Figure],
        controls: Mapping[str, Control],
        limits: Limits | None = None,
    ) -> None:
        self.title = title
        self._draw = draw
        self.controls = dict(controls)
        self._limits = limits or (lambda values: {})
        self.values = {name: control.value for name, control in self.controls.items()}
        self._figure = self.figure()  # drawn now, so that bad starting values fail here
        self._png: bytes | None = None
        self._widgets: dict[str, Any] = {}
        self._box: Any = None
        self._handle: Any = None
        self._syncing = False

    def high(self, name: str) -> int:
        """The current upper bound of control ``name`` (it may depend on other controls)."""
        return self._limits(self.values).get(name, self.controls[name].high)

    def update(self, **changes: int) -> dict[str, int]:
        """Set control values (no widgets needed), clamp the dependent ones, redraw.

        Returns the new values. A value the reader set must lie in its control's current range
        (``ValueError`` names it otherwise); a value that only depends on another control (a
        query row when the window shrinks) is clamped into its new range.
        """
        for name, value in changes.items():
            if name not in self.controls:
                raise ValueError(f"control must be one of {list(self.controls)}, got {name!r}")
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
        new = {**self.values, **changes}
        for name, control in self.controls.items():
            high = self._limits(new).get(name, control.high)
            if name in changes and not control.low <= new[name] <= high:
                raise ValueError(f"{name} must be in [{control.low}, {high}], got {new[name]}")
            new[name] = min(new[name], high)
        self.values = new
        self._sync_widgets()
        self._figure, self._png = self.figure(), None
        if self._handle is not None:
            self._handle.update(_png_image(self.png))
        return dict(self.values)

    def figure(self) -> Figure:
        """A new figure for the current values."""
        return self._draw(**self.values)

    @property
    def png(self) -> bytes:
        """The current figure as PNG bytes (rendered when first asked for: it is the slow part)."""
        if self._png is None:
            self._png = figure_png(self._figure)
        return self._png

    def widget(self) -> Any:
        """The controls as one ipywidgets ``VBox`` (built once); moving one calls ``update``."""
        if self._box is not None:
            return self._box
        import ipywidgets as widgets

        # One label width for every control, so the sliders line up and keep a usable track.
        style = {"description_width": "130px"}
        for name, control in self.controls.items():
            if control.options is not None:
                box = widgets.Dropdown(
                    options=list(control.options),
                    value=self.values[name],
                    description=control.label,
                    style=style,
                    layout=widgets.Layout(width="340px"),
                )
            else:
                box = widgets.IntSlider(
                    value=self.values[name],
                    min=control.low,
                    max=self.high(name),
                    description=control.label,
                    continuous_update=False,  # one redraw per release, not per pixel dragged
                    style=style,
                    layout=widgets.Layout(width="340px"),
                )
            box.observe(self._on_change(name), names="value")
            self._widgets[name] = box
        self._box = widgets.VBox(
            [
                widgets.HTML(f"<b>{self.title}</b>"),
                widgets.HBox(list(self._widgets.values()), layout=widgets.Layout(flex_flow="wrap")),
                widgets.HTML(_NOTE),
            ]
        )
        return self._box

    def _on_change(self, name: str) -> Callable[[dict[str, Any]], None]:
        def changed(change: dict[str, Any]) -> None:
            if not self._syncing:  # ignore the echoes of our own clamping in _sync_widgets
                self.update(**{name: change["new"]})

        return changed

    def _sync_widgets(self) -> None:
        """Give the sliders the current bounds and values without triggering redraws."""
        self._syncing = True
        try:
            for name, box in self._widgets.items():
                if self.controls[name].options is None:
                    box.max = self.high(name)
                box.value = self.values[name]
        finally:
            self._syncing = False

    def show(self) -> None:
        """Display the controls (when ipywidgets is available), then the figure."""
        from IPython.display import display

        try:
            box = self.widget()
        except ImportError:
            box = None
        if box is not None:
            # The view bundle both ipywidgets 7 and 8 emit, with a readable plain-text fallback
            # for front ends that cannot render widgets (nbconvert, terminals, GitHub).
            display(
                {
                    "text/plain": f"[{self.title}: controls need a running kernel]",
                    "application/vnd.jupyter.widget-view+json": {
                        "version_major": 2,
                        "version_minor": 0,
                        "model_id": box.model_id,
                    },
                },
                raw=True,
            )
        self._handle = display(_png_image(self.png), display_id=True)


def show_explorer(explorer: Explorer) -> None:
    """Display ``explorer``'s controls and its figure (see the module docstring)."""
    if not isinstance(explorer, Explorer):
        raise TypeError(f"explorer must be an Explorer, got {type(explorer).__name__}")
    explorer.show()


def _cell_controls(what: str, cell: tuple[int, int], grid: tuple[int, int]) -> dict[str, Control]:
    return {
        "row": Control(f"{what} row", 0, grid[0] - 1, cell[0]),
        "col": Control(f"{what} column", 0, grid[1] - 1, cell[1]),
    }


def relative_index_explorer(
    window_size: WindowSize = (2, 3), query: Cell = (0, 0), max_window: int = 7
) -> Explorer:
    """Window size ``(Wh, Ww)`` and a query cell -> ``companion.explorers.relative_index_figure``.

    ``max_window`` bounds both sliders (7 is Swin's window).
    """
    wh, ww = to_pair("window_size", window_size)
    if max(wh, ww) > max_window:
        raise ValueError(
            f"window_size must be at most max_window={max_window} on each side, got {(wh, ww)}"
        )
    row, col = to_cell("query", query, (wh, ww))
    controls = {
        "wh": Control("window rows Wh", 1, max_window, wh),
        "ww": Control("window columns Ww", 1, max_window, ww),
        **_cell_controls("query", (row, col), (max_window, max_window)),
    }
    return Explorer(
        "Relative position index for one query",
        lambda wh, ww, row, col: relative_index_figure((wh, ww), (row, col)),
        controls,
        limits=lambda v: {"row": v["wh"] - 1, "col": v["ww"] - 1},
    )


def bias_explorer(
    source: nn.Module | Tensor,
    window_size: WindowSize | None = None,
    head: int = 0,
    query: Cell = (0, 0),
) -> Explorer:
    """A head and a query cell -> ``companion.explorers.bias_row_figure`` of ``source``.

    ``source``: a module with a relative position bias (``WindowAttention``,
    ``RelativePositionBias``) or a bias table ``((2Wh-1)(2Ww-1), H)`` with ``window_size``.
    """
    bias, grid = relative_bias(source, window_size)
    num_heads = bias.shape[0]
    controls = {
        "head": Control(
            "head", 0, num_heads - 1, head, tuple((f"head {h}", h) for h in range(num_heads))
        ),
        **_cell_controls("query", to_cell("query", query, grid), grid),
    }
    return Explorer(
        "Relative position bias B for one head and one query",
        lambda head, row, col: bias_row_figure(source, head, (row, col), window_size),
        controls,
    )


def embedding_explorer(
    embedding: Tensor,
    grid_size: WindowSize,
    patch: Cell = (0, 0),
    num_prefix_tokens: int = 0,
) -> Explorer:
    """A patch -> ``companion.explorers.embedding_similarity_figure`` of ``embedding``.

    ``embedding``: ``(1, P + N, D)`` or ``(P + N, D)``; ``num_prefix_tokens`` = ``P`` leading rows
    (a class token) that are not patches.
    """
    grid = to_pair("grid_size", grid_size)
    return Explorer(
        "Position embedding similarity for one patch",
        lambda row, col: embedding_similarity_figure(
            embedding, grid, (row, col), num_prefix_tokens
        ),
        _cell_controls("patch", to_cell("patch", patch, grid), grid),
    )
