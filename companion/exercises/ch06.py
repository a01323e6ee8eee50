"""Chapter 6 exercises: where a preferred offset goes when a table is resized, how far the
continuous bias must extrapolate, RoPE's logit as a function of the offset alone, and how many
of the world rendering's relation pairs lie where no training pair did."""

from __future__ import annotations

import torch
from torch import Tensor

from companion._checks import check_positive_int
from companion.cpb import NORM_RANGE, log_space
from companion.data import make_dataset
from companion.data.tasks import PATCH, PATCHES
from companion.figures.resolution import bump_table
from companion.resize import ResizeMethod, resize_bias_table, table_as_images
from companion.rope import rotate_pairs

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (an identity to check).
ANSWERS: dict[int, tuple[str, ...]] = {
    # where (0, 3) goes for 7 -> 14, and (0, 2) for 4 -> 8 geometric (section 6.3 shows 7 -> 12)
    1: ("bicubic: peak at (0, 6)", "geometric: peak at (0, 4)", "geometric: peak at (0, 3)"),
    2: ("1.323", "1.383"),  # the largest MLP input at windows 12 and 24
    3: (),  # the same logit from the offset alone
    4: ("0.576", "0.767"),  # the formula's share of new pairs at 48 and 64 px
}


def peak_after_resize(
    old_window: int, new_window: int, method: ResizeMethod, peak: tuple[int, int] = (0, 2)
) -> tuple[int, int]:
    """Exercise 1: the offset ``(dy, dx)`` where a head's favourite offset ends up after resizing.

    The head is ``bump_table``'s head 1, a bump at ``peak``; returns the offset of the largest
    value of the resized table (row and column offsets of the ``argmax``).
    """
    check_positive_int("old_window", old_window)
    check_positive_int("new_window", new_window)
    table = bump_table(old_window, peak)
    image = table_as_images(resize_bias_table(table, old_window, new_window, method), new_window)[1]
    row, col = divmod(int(image.argmax()), image.shape[1])
    return row - (new_window - 1), col - (new_window - 1)


def cpb_reach(train_window: int, new_window: int) -> tuple[float, float]:
    """Exercise 2: the largest MLP input of a continuous bias trained at ``train_window``, at
    training time and at ``new_window`` (normalised by the training window):
    ``log2(1 + 8·(W-1)/(W_train-1)) / 3`` for ``W = train_window`` and ``W = new_window``."""
    train = check_positive_int("train_window", train_window)
    new = check_positive_int("new_window", new_window)
    scale = NORM_RANGE / max(train - 1, 1)
    largest = torch.tensor([(train - 1) * scale, (new - 1) * scale])
    trained, reached = log_space(largest).tolist()
    return trained, reached


def logit_from_offset(q: Tensor, k: Tensor, offset: Tensor, freqs: Tensor) -> Tensor:
    """Exercise 3: RoPE's logit computed from the offset alone, ``<q, R(φ) k>`` with
    ``φ = (t_k - t_q) · f``, without ever knowing the two absolute positions.

    ``q``, ``k``: ``(d,)``; ``offset``: ``(2,)`` key position minus query position (row, col);
    ``freqs``: ``(2, d/2)`` (row and column frequency per pair). Returns a 0-d tensor.
    """
    angles = offset[0] * freqs[0] + offset[1] * freqs[1]  # (d/2,)
    return q @ rotate_pairs(k[None, None, :], angles[None, None, :])[0, 0]


def unseen_pair_share(size: int) -> float:
    """Exercise 4, the prediction: the share of the world rendering's ``relation`` pairs at
    ``size`` px with at least one object outside the 8 x 8 patches of the 32-px training frame.

    A pair is two neighbouring patches of the ``P x P`` grid, ``P = size / 4``; each of the four
    labels puts A uniformly on the ``P (P - 1)`` patches whose neighbour fits, so a pair lies
    inside the training frame with probability ``8 * 7 / (P (P - 1))``."""
    patches = check_positive_int("size", size) // PATCH
    return 1 - PATCHES * (PATCHES - 1) / (patches * (patches - 1))


def measured_unseen_share(size: int, n: int = 1000, seed: int = 0) -> float:
    """Exercise 4, the check: the same share among ``n`` test images of the world rendering at
    ``size`` px, read from the objects' centres (``meta["centres"]``, pixels)."""
    data = make_dataset("relation", "test", n, seed=seed, size=size, rendering="world")
    patches = data.meta["centres"] // PATCH  # (n, 2 objects, 2 coordinates)
    outside = (patches >= PATCHES).flatten(1).any(1)
    return float(outside.float().mean())
