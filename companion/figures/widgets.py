"""Interactive explorers: named controls, the static figure, and the live front end of each.

A chapter cell calls, for example, ``show_explorer(relative_index_explorer())``. That displays one
output (``companion.figures.live`` says what it holds and why):
sliders and an SVG figure that the browser
redraws by itself, in Jupyter, in Colab and on the published book's page, with no kernel; and the
static matplotlib figure of ``companion.figures.explorers`` for the starting values, which
readers without
JavaScript, print and the PDF see. ``Explorer.update`` moves the controls from Python (no browser
needed), for tests and for a static figure of any other state.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from torch import Tensor, nn

from companion._checks import check_choice, to_pair
from companion.figures.explorers import (
    SIMILARITY_ANNOTATED,
    Cell,
    bias_bound,
    bias_row_figure,
    bias_table,
    embedding_similarities,
    embedding_similarity_figure,
    float_decimals,
    relative_bias,
    relative_index_figure,
    to_cell,
)
from companion.figures.live import colormaps, explorer_html, float32_base64
from companion.relative import WindowSize

#: Explorer figures are rendered at this resolution and shown at 2/3 of their pixel width, which
#: keeps them sharp on high-density screens.
PNG_DPI = 150
_DISPLAY_SCALE = 100 / PNG_DPI


@dataclass(frozen=True)
class Control:
    """One integer control over ``[low, high]`` starting at ``value``: a slider.

    ``bound_by`` names another control whose value bounds this one: ``high`` is then that value
    minus 1 (a query row stays inside a window of ``wh`` rows).

    ``choices``: names of the values ``low, low + 1, ..., high``, for a control whose values are
    categories (a resize method) rather than amounts: the browser offers one toggle button per
    name instead of a slider, and the value is still the number. Make one with
    :meth:`Control.choice`.
    """

    label: str
    low: int
    high: int
    value: int
    bound_by: str | None = None
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.choices and len(self.choices) != self.high - self.low + 1:
            raise ValueError(
                f"choices must name each value of [{self.low}, {self.high}], "
                f"got {len(self.choices)} names: {list(self.choices)}"
            )
        if self.choices and self.bound_by is not None:
            raise ValueError(
                f"a control with choices cannot be bound, got bound_by={self.bound_by!r}"
            )

    @classmethod
    def choice(cls, label: str, choices: Sequence[str], value: str) -> Control:
        """A control offering ``choices`` by name, starting at ``value`` (one of them); its
        value is the index of the chosen name."""
        names = tuple(choices)
        check_choice(label, value, names)
        return cls(label, 0, len(names) - 1, names.index(value), choices=names)


def figure_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """Render ``fig`` to PNG bytes (tight bounding box)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _png_width(png: bytes) -> int:
    """The width, in CSS pixels, at which the book shows ``png``."""
    pixels = int.from_bytes(png[16:20], "big")  # IHDR: the first chunk holds the pixel width
    return round(pixels * _DISPLAY_SCALE)


class Explorer:
    """Named integer controls, a figure function of them, and the browser's view of them.

    Args:
        title: shown above the controls.
        draw: ``draw(**values) -> Figure``, the static figure for some values.
        controls: name -> ``Control``; the names are ``draw``'s keyword arguments.
        view: the name of the view in ``assets/explorer.js`` that draws the same figure live.
        data: what that view needs besides the controls (JSON-serialisable: a bias table, a
            similarity matrix, colour maps).
    """

    def __init__(
        self,
        title: str,
        draw: Callable[..., Figure],
        controls: Mapping[str, Control],
        *,
        view: str,
        data: Mapping[str, Any],
    ) -> None:
        self.title = title
        self._draw = draw
        self.controls = dict(controls)
        for name, control in self.controls.items():
            if control.bound_by is not None and control.bound_by not in self.controls:
                raise ValueError(
                    f"controls[{name!r}].bound_by must be one of {list(self.controls)}, "
                    f"got {control.bound_by!r}"
                )
        self.view = view
        self.data = dict(data)
        self.values = {name: control.value for name, control in self.controls.items()}
        self._figure = self.figure()  # drawn now, so that bad starting values fail here
        self._png: bytes | None = None

    def high(self, name: str, values: Mapping[str, int] | None = None) -> int:
        """The upper bound of control ``name`` for ``values`` (default: the current ones)."""
        control = self.controls[name]
        values = self.values if values is None else values
        return control.high if control.bound_by is None else values[control.bound_by] - 1

    def update(self, **changes: int) -> dict[str, int]:
        """Set control values, clamp the dependent ones, redraw the static figure.

        Returns the new values. A value set here must lie in its control's range (``ValueError``
        names it otherwise); a value that only depends on another control (a query row when the
        window shrinks) is clamped into its new range, as the browser's sliders do.
        """
        for name, value in changes.items():
            if name not in self.controls:
                raise ValueError(f"control must be one of {list(self.controls)}, got {name!r}")
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
        new = {**self.values, **changes}
        for name, control in self.controls.items():
            high = self.high(name, new)
            if name in changes and not control.low <= new[name] <= high:
                raise ValueError(f"{name} must be in [{control.low}, {high}], got {new[name]}")
            new[name] = min(new[name], high)
        self.values = new
        self._figure, self._png = self.figure(), None
        return dict(self.values)

    def figure(self) -> Figure:
        """A new static figure for the current values."""
        return self._draw(**self.values)

    @property
    def png(self) -> bytes:
        """The current figure as PNG bytes (rendered when first asked for: it is the slow part)."""
        if self._png is None:
            self._png = figure_png(self._figure)
        return self._png

    def spec(self) -> dict[str, Any]:
        """What the browser needs: the view, the title, the controls from the current values."""
        return {
            "view": self.view,
            "title": self.title,
            "controls": [
                {
                    "name": name,
                    "label": c.label,
                    "low": c.low,
                    "high": c.high,
                    "value": self.values[name],
                    "boundBy": c.bound_by,
                    "choices": list(c.choices),
                }
                for name, c in self.controls.items()
            ],
            "data": self.data,
        }

    def _state(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.values.items())

    def __repr__(self) -> str:
        return f"[{self.title}: interactive in a browser; static figure for {self._state()}]"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        alt = f"{self.title}, static figure for {self._state()}"
        return {
            "text/plain": repr(self),
            "text/html": explorer_html(self.spec(), self.png, _png_width(self.png), alt),
            "image/png": self.png,
        }

    def show(self) -> None:
        """Display the explorer (see the module docstring)."""
        from IPython.display import display

        display(self)


def show_explorer(explorer: Explorer) -> None:
    """Display ``explorer``: live sliders and figure in a browser, its static figure elsewhere."""
    if not isinstance(explorer, Explorer):
        raise TypeError(f"explorer must be an Explorer, got {type(explorer).__name__}")
    explorer.show()


def _cell_controls(
    what: str, cell: tuple[int, int], grid: tuple[int, int], bound_by: Iterable[str | None] = ()
) -> dict[str, Control]:
    """Row and column sliders of a cell of ``grid``; ``bound_by`` the controls bounding them."""
    row_bound, col_bound = tuple(bound_by) or (None, None)
    return {
        "row": Control(f"{what} row", 0, grid[0] - 1, cell[0], row_bound),
        "col": Control(f"{what} column", 0, grid[1] - 1, cell[1], col_bound),
    }


def relative_index_explorer(
    window_size: WindowSize = (2, 3), query: Cell = (0, 0), max_window: int = 7
) -> Explorer:
    """Window size ``(Wh, Ww)`` and a query cell ->
    ``companion.figures.explorers.relative_index_figure``.

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
        **_cell_controls("query", (row, col), (max_window, max_window), ("wh", "ww")),
    }
    return Explorer(
        "Relative position index for one query",
        lambda wh, ww, row, col: relative_index_figure((wh, ww), (row, col)),
        controls,
        view="relative-index",
        data={"colormaps": colormaps(["Greys", "viridis"])},
    )


def bias_explorer(
    source: nn.Module | Tensor,
    window_size: WindowSize | None = None,
    head: int = 0,
    query: Cell = (0, 0),
) -> Explorer:
    """A head and a query cell -> ``companion.figures.explorers.bias_row_figure`` of ``source``.

    ``source``: a module with a relative position bias (``WindowAttention``, timm's Swin
    attention) or a bias table ``((2Wh-1)(2Ww-1), H)`` with ``window_size``.
    """
    table, grid = bias_table(source, window_size)
    bias, _ = relative_bias(table, grid)
    num_heads = bias.shape[0]
    controls = {
        "head": Control("head", 0, num_heads - 1, head),
        **_cell_controls("query", to_cell("query", query, grid), grid),
    }
    bounds = [bias_bound(bias, h) for h in range(num_heads)]
    return Explorer(
        "Relative position bias B for one head and one query",
        lambda head, row, col: bias_row_figure(table, head, (row, col), grid),
        controls,
        view="bias",
        data={
            "window": list(grid),
            "table": float32_base64(table),  # (T, H), row-major: the browser looks B up in it
            "bound": bounds,
            "decimals": [float_decimals(b) for b in bounds],
            "colormaps": colormaps(["RdBu_r"]),
        },
    )


def embedding_explorer(
    embedding: Tensor,
    grid_size: WindowSize,
    patch: Cell = (0, 0),
    num_prefix_tokens: int = 0,
) -> Explorer:
    """A patch -> ``companion.figures.explorers.embedding_similarity_figure`` of ``embedding``.

    ``embedding``: ``(1, P + N, D)`` or ``(P + N, D)``; ``num_prefix_tokens`` = ``P`` leading rows
    (a class token) that are not patches.
    """
    grid = to_pair("grid_size", grid_size)
    similarities = embedding_similarities(embedding, grid, num_prefix_tokens)
    return Explorer(
        "Position embedding similarity for one patch",
        lambda row, col: embedding_similarity_figure(
            embedding, grid, (row, col), num_prefix_tokens
        ),
        _cell_controls("patch", to_cell("patch", patch, grid), grid),
        view="similarity",
        data={
            "grid": list(grid),
            "matrix": float32_base64(similarities),  # (N, gh, gw): row t is patch t's map
            "annotate": SIMILARITY_ANNOTATED,
            "colormaps": colormaps(["viridis"]),
        },
    )
