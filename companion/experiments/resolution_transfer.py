"""The resolution-transfer experiment's model side: move a model trained at 32 px to a larger
image, evaluate it, optionally fine-tune it briefly.

Two ways to run a model on ``S``-px images when it was trained at 32 px (chapter 6):

* ``"window-kept"``: keep the window; the token grid grows (``set_img_size``), so each window
  covers a smaller part of the image and a stage may now shift where it did not.
* ``"window-grown"``: grow the window with the image (``set_window_size(M · S / 32)``), so each
  window covers the same part of the image as in training; a bias table is then resized, with
  bicubic or geometric resampling (two conditions, ``"window-grown-bicubic"`` and
  ``"window-grown-geometric"``), while a continuous bias or a rotary embedding just computes its
  coordinates for the larger window.

These names are the ones the records, tables, figures and chapter 6 use. Records written before
they were (``results/cpu-transfer``) call the conditions ``"grid"``, ``"window"``,
``"window-bicubic"`` and ``"window-geometric"``; records are never edited, so
:data:`RECORDED_NAMES` maps those names to today's when a record is read.

Images at the larger size are drawn at that size by the task's own generator
(``companion.data.make_dataset(..., size=S, rendering=R)``) in one of two ways
(``companion.data.RENDERINGS``): ``"scaled"``, the same scenes drawn with more pixels (objects
grow with the image), or ``"world"``, a larger canvas on which every object keeps its 32-px size.
Every label keeps its meaning in both. The short fine-tune after a
move is ``companion.train.train_steps`` (the trainer's own loop).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from companion._checks import check_choice, check_positive_int
from companion.data.dataset import ImageClassificationData
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
#: Condition names in records written before the names above -> today's names.
RECORDED_NAMES: dict[str, str] = {
    "grid": WINDOW_KEPT,
    "window": WINDOW_GROWN,
    "window-bicubic": f"{WINDOW_GROWN}-bicubic",
    "window-geometric": f"{WINDOW_GROWN}-geometric",
}


def condition_name(recorded: str) -> str:
    """Today's name of a condition as a record names it (``"grid"`` -> ``"window-kept"``; today's
    names and ``"trained"`` are returned as they are)."""
    return RECORDED_NAMES.get(recorded, recorded)


@dataclass(frozen=True)
class TransferCondition:
    """How a model is moved to a larger image: keep or grow the window, and the table resize."""

    name: str
    grow_window: bool
    method: ResizeMethod = "geometric"


def transfer_conditions(pos: str | Position) -> tuple[TransferCondition, ...]:
    """The conditions worth running for ``pos``: the window kept, then grown (with both table
    resize methods when the model has tables, once otherwise)."""
    methods = map(check_resize_method, Position.parse(pos).resize_methods)
    grown = (TransferCondition(grown_condition(pos, m), True, m) for m in methods)
    return (TransferCondition(WINDOW_KEPT, False), *grown)


def grown_condition(pos: str | Position, method: str = "geometric") -> str:
    """The name of ``pos``'s window-grown condition (``method`` picks the table resize)."""
    check_choice("method", method, RESIZE_METHODS)
    return f"{WINDOW_GROWN}-{method}" if Position.parse(pos).has_table else WINDOW_GROWN


def moved_model(model: SwinTransformer, size: int, condition: TransferCondition) -> SwinTransformer:
    """A copy of ``model`` for ``size``-px images under ``condition`` (``model`` is unchanged).

    With ``grow_window`` the window scales with the image, ``M · size / 32`` on each axis; it must
    come out whole (``ValueError`` otherwise: 48 px needs an even window at 32 px).
    """
    check_positive_int("size", size)
    moved = copy.deepcopy(model)
    moved.set_img_size(size, method=condition.method)
    if condition.grow_window:
        window = []
        for side in moved.window_size:
            if side * size % TRAIN_SIZE:
                raise ValueError(
                    f"size={size} must scale the window {tuple(moved.window_size)} to whole "
                    f"sides (window * size / {TRAIN_SIZE})"
                )
            window.append(side * size // TRAIN_SIZE)
        moved.set_window_size((window[0], window[1]), method=condition.method)
    return moved


def _check_input_size(model: SwinTransformer, data: ImageClassificationData) -> None:
    """The images must have the size the model was moved to (no silent resizing)."""
    got, wanted = tuple(data.images.shape[-2:]), tuple(model.img_size)
    if got != wanted:
        raise ValueError(
            f"data must hold images of the model's input size {wanted}, got {got}: render the "
            f"task at that size (companion.data.make_dataset(..., size=...)) or move the model"
        )


@torch.no_grad()
def hits(
    model: SwinTransformer, data: ImageClassificationData, batch_size: int = 256
) -> torch.Tensor:
    """``(len(data),)`` bool: which images of ``data`` (of the model's input size) ``model``
    classifies right."""
    _check_input_size(model, data)
    model.eval()
    device = next(model.parameters()).device
    found = []
    for start in range(0, len(data), batch_size):
        images, labels = data[list(range(start, min(start + batch_size, len(data))))]
        logits = model(data.normalize(images.to(device, non_blocking=True)))
        found.append((logits.argmax(-1) == labels.to(device, non_blocking=True)).cpu())
    return torch.cat(found)
