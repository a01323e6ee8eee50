"""Chapter 6's two ways to run a model trained at 32 px on ``S``-px images.

* ``"window-kept"``: keep the window; the token grid grows (``set_img_size``), so each window
  covers a smaller part of the image and a stage may now shift where it did not.
* ``"window-grown"``: grow the window with the image (``set_window_size(M · S / 32)``), so each
  window covers the same part of the image as in training; a bias table is then resized, with
  bicubic or geometric resampling (``"window-grown-bicubic"``, ``"window-grown-geometric"``),
  while a continuous bias or a rotary embedding just computes its coordinates for the larger
  window.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from companion._checks import check_choice, check_positive_int
from companion.position import Position
from companion.resize import RESIZE_METHODS, ResizeMethod, check_resize_method
from companion.swin import SwinTransformer

TRAIN_SIZE = 32
EVAL_SIZES = (48, 64)
MAX_SIZE = 512  # renders and attention grow with the square of the size; far above the book's

#: The condition that keeps the window (the token grid grows).
WINDOW_KEPT = "window-kept"
#: The condition that grows the window with the image (``-bicubic``/``-geometric`` for a table).
WINDOW_GROWN = "window-grown"
#: Condition names in records written before the names above (mapped where the table is built).
RECORDED_NAMES: dict[str, str] = {
    "grid": WINDOW_KEPT,
    "window": WINDOW_GROWN,
    "window-bicubic": f"{WINDOW_GROWN}-bicubic",
    "window-geometric": f"{WINDOW_GROWN}-geometric",
}


def condition_name(recorded: str) -> str:
    """Today's name of a condition as a record names it (``"grid"`` -> ``"window-kept"``)."""
    return RECORDED_NAMES.get(recorded, recorded)


@dataclass(frozen=True)
class TransferCondition:
    """How a model is moved to a larger image: keep or grow the window, and the table resize."""

    name: str
    grow_window: bool
    method: ResizeMethod = "geometric"


def transfer_conditions(pos: str | Position) -> tuple[TransferCondition, ...]:
    """The window kept, then grown (with both table resize methods when ``pos`` has a table)."""
    methods = map(check_resize_method, Position.parse(pos).resize_methods)
    grown = (TransferCondition(grown_condition(pos, m), True, m) for m in methods)
    return (TransferCondition(WINDOW_KEPT, False), *grown)


def grown_condition(pos: str | Position, method: str = "geometric") -> str:
    """The name of ``pos``'s window-grown condition (``method`` picks the table resize)."""
    check_choice("method", method, RESIZE_METHODS)
    return f"{WINDOW_GROWN}-{method}" if Position.parse(pos).has_table else WINDOW_GROWN


def moved_model(model: SwinTransformer, size: int, condition: TransferCondition) -> SwinTransformer:
    """A copy of ``model`` for ``size``-px images under ``condition``; a grown window must come
    out whole (``M · size / 32``: 48 px needs an even window at 32 px)."""
    check_positive_int("size", size)
    moved = copy.deepcopy(model)
    moved.set_img_size(size, method=condition.method)
    if condition.grow_window:
        if any(side * size % TRAIN_SIZE for side in moved.window_size):
            raise ValueError(
                f"size={size} must scale the window {tuple(moved.window_size)} to whole "
                f"sides (window * size / {TRAIN_SIZE})"
            )
        height, width = (side * size // TRAIN_SIZE for side in moved.window_size)
        moved.set_window_size((height, width), method=condition.method)
    return moved
