"""Chapter 6's explorer: resize an illustrative bias table and watch where its values go.

Built on the public ``companion.widgets`` API (``Explorer``, ``Control``, ``show_explorer``).
"""

from __future__ import annotations

from companion.figures.resolution import resize_figure
from companion.transfer import RESIZE_METHODS
from companion.widgets import Control, Explorer

#: Largest window the sliders offer (Swin's fine-tuning windows are 12 and 24; 12 stays legible).
MAX_WINDOW = 12


def resize_explorer(
    old_window: int = 4, new_window: int = 8, method: str = "bicubic", head: int = 1
) -> Explorer:
    """Old window, new window, method and head -> ``companion.figures.resolution.resize_figure``
    of ``bump_table`` (head 0: prefers near keys; head 1: prefers the key two columns left)."""
    methods = tuple((name, i) for i, name in enumerate(RESIZE_METHODS))
    if method not in RESIZE_METHODS:
        raise ValueError(f"method must be one of {list(RESIZE_METHODS)}, got {method!r}")
    controls = {
        "old": Control("old window", 3, MAX_WINDOW, old_window),
        "new": Control("new window", 2, MAX_WINDOW, new_window),
        "method": Control("method", 0, len(methods) - 1, RESIZE_METHODS.index(method), methods),
        "head": Control("head", 0, 1, head, (("head 0: near", 0), ("head 1: bump", 1))),
    }
    return Explorer(
        "Resizing a bias table: where do the values go?",
        lambda old, new, method, head: resize_figure(old, new, RESIZE_METHODS[method], head),
        controls,
    )
