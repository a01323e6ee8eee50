"""Chapter 6's explorer: resize an illustrative bias table and watch where its values go.

Built on the public ``companion.figures.widgets`` API (``Explorer``, ``Control``,
``show_explorer``).
"""

from __future__ import annotations

from companion.figures.live import colormaps, float32_base64
from companion.figures.resolution import bump_table, resize_figure
from companion.figures.widgets import Control, Explorer
from companion.transfer import RESIZE_METHODS

#: Largest window the sliders offer (Swin's fine-tuning windows are 12 and 24; 12 stays legible).
MAX_WINDOW = 12


def resize_explorer(
    old_window: int = 4, new_window: int = 8, method: str = "bicubic", head: int = 1
) -> Explorer:
    """Old window, new window, method and head -> ``companion.figures.resolution.resize_figure``
    of ``bump_table`` (head 0: prefers near keys; head 1: prefers the key two columns left)."""
    if method not in RESIZE_METHODS:
        raise ValueError(f"method must be one of {list(RESIZE_METHODS)}, got {method!r}")
    names = ", ".join(f"{i} {name}" for i, name in enumerate(RESIZE_METHODS))
    controls = {
        "old": Control("old window", 3, MAX_WINDOW, old_window),
        "new": Control("new window", 2, MAX_WINDOW, new_window),
        "method": Control(
            f"method ({names})", 0, len(RESIZE_METHODS) - 1, RESIZE_METHODS.index(method)
        ),
        "head": Control("head (0 near, 1 bump)", 0, 1, head),
    }
    return Explorer(
        "Resizing a bias table: where do the values go?",
        lambda old, new, method, head: resize_figure(old, new, RESIZE_METHODS[method], head),
        controls,
        view="resize",  # the browser resizes the table itself (assets/explorer.js, same formulas)
        data={
            "tables": {str(w): float32_base64(bump_table(w)) for w in range(3, MAX_WINDOW + 1)},
            "methods": list(RESIZE_METHODS),
            "colormaps": colormaps(["viridis"]),
        },
    )
