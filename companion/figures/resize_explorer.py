"""Chapter 6's explorer: resize an illustrative bias table and watch where its values go.

Built on the public ``companion.figures.widgets`` API (``Explorer``, ``Control``,
``show_explorer``).
"""

from __future__ import annotations

from companion._checks import check_choice, check_int_in_range
from companion.figures.live import colormaps, float32_base64
from companion.figures.resolution import bump_table, resize_figure
from companion.figures.widgets import Control, Explorer
from companion.resize import RESIZE_METHODS

#: Largest window the sliders offer (Swin's fine-tuning windows are 12 and 24; 12 stays legible).
MAX_WINDOW = 12
#: The two heads of ``bump_table``, by what they prefer.
HEADS = ("0: near keys", "1: two columns left")


def resize_explorer(
    old_window: int = 4, new_window: int = 8, method: str = "bicubic", head: int = 1
) -> Explorer:
    """Old window, new window, method and head -> ``companion.figures.resolution.resize_figure``
    of ``bump_table`` (head 0: prefers near keys; head 1: prefers the key two columns left)."""
    check_choice("method", method, RESIZE_METHODS)
    head = check_int_in_range("head", head, 0, len(HEADS) - 1)
    # The window sizes are amounts (sliders); the method and the head are categories, offered
    # by name (toggle buttons). Their values stay the index: update(method=1) picks "geometric".
    controls = {
        "old": Control("old window", 3, MAX_WINDOW, old_window),
        "new": Control("new window", 2, MAX_WINDOW, new_window),
        "method": Control.choice("method", RESIZE_METHODS, method),
        "head": Control.choice("head", HEADS, HEADS[head]),
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
