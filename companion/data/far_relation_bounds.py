"""Exact accuracies of rules that see only *where* far-relation's objects are, never the pair.

A rule that sees a feature ``f(A's patch, B's patch)`` of a pair can do no better than answer, for
each value of ``f``, the label most probable given it; its accuracy is then ``sum over values of
max over labels P(value, label)``. :func:`pair_distribution` gives ``P`` exactly (fractions, not
samples) for the same label-first placement that ``companion.data.tasks.place_pair`` samples, so
the bounds below are the bounds of the images the task generates.

The features (for the tiny-cpu Swin: 8 x 8 patches, stage-0 windows of 4 patches shifted by 2):

* ``constant_answer``: nothing at all, the most frequent label;
* ``a_patch_only``: A's patch (what an absolute code at A's token alone could read);
* ``merge_slots_and_shared_windows``: each object's slot in its 2 x 2 merge group (patch
  merging's concatenation order) and whether the two share a regular and a shifted stage-0
  window: what a Swin *without* a position code can see of the pair (results/pilots/README.md);
* ``merge_slots_shared_windows_and_window_sizes``: that, plus whether each object's shifted
  window is a 2-patch border window along each axis (softmax dilution could reveal a window's
  size): the border cue;
* ``both_patches``: both positions, which fix the direction (1.0): ``abs`` can solve the task.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from fractions import Fraction

import torch
from torch import Tensor

from companion._checks import check_choice, check_positive_int
from companion.data.tasks import (
    PATCHES,
    RELATION_STEPS,
    RELATIONS,
    Region,
    a_patch_range,
    in_seen_region,
)

#: The tiny-cpu Swin's stage 0: windows of WINDOW x WINDOW patches, shifted by WINDOW // 2.
WINDOW = 4
Patch = tuple[int, int]
#: ``{(A's patch, label): probability}``.
PairDistribution = dict[tuple[Patch, int], Fraction]


def pair_distribution(
    distance: int, inside: bool | None = None, region: Region = in_seen_region
) -> PairDistribution:
    """The exact distribution of (A's patch, label) at ``distance`` under label-first placement:
    each label 1/4, then A uniform over its :func:`~companion.data.tasks.a_patch_range`. With
    ``inside`` True (False) only pairs inside (reaching out of) ``region`` are kept (by default
    far-relation-heldout's seen region; far-relation-interior's splits name theirs,
    :func:`~companion.data.tasks.split_region`), renormalised: what ``place_pair``'s redrawing
    samples."""
    check_positive_int("distance", distance)
    if distance >= PATCHES:
        raise ValueError(f"distance must be below {PATCHES} (the grid's side), got {distance}")
    check_choice("inside", inside, (None, True, False))
    p: PairDistribution = {}
    for label in range(len(RELATIONS)):
        lo, hi = a_patch_range(label, distance)
        cells = [(y, x) for y in range(lo[0], hi[0]) for x in range(lo[1], hi[1])]
        for a in cells:
            b = b_patch(a, label, distance)
            if inside is None or region(a, b) == inside:
                p[(a, label)] = Fraction(1, len(RELATIONS) * len(cells))
    total = sum(p.values())
    return {k: v / total for k, v in p.items()}


def b_patch(a: Patch, label: int, distance: int) -> Patch:
    """B's patch: ``distance`` steps from A's in the label's direction."""
    dy, dx = RELATION_STEPS[label]
    return a[0] + distance * dy, a[1] + distance * dx


def _windows(c: int) -> tuple[int, int]:
    """The regular and the shifted stage-0 window a patch row or column falls in (the shifted
    grid rolls by WINDOW // 2; its wrapped window is masked into two border windows)."""
    return c // WINDOW, (c + WINDOW // 2) // WINDOW


def _slots_and_shared_windows(a: Patch, b: Patch) -> tuple[object, ...]:
    wa, wb = [tuple(_windows(c) for c in p) for p in (a, b)]
    same_regular = wa[0][0] == wb[0][0] and wa[1][0] == wb[1][0]
    same_shifted = wa[0][1] == wb[0][1] and wa[1][1] == wb[1][1]
    return (a[0] % 2, a[1] % 2, b[0] % 2, b[1] % 2, same_regular, same_shifted)


def _with_window_sizes(a: Patch, b: Patch) -> tuple[object, ...]:
    # A shifted window is 2 patches wide at the border (index 0 or the last), 4 in the middle.
    middle = PATCHES // WINDOW // 2  # the index of a full-size shifted window (1 on 8 patches)
    sizes = tuple(_windows(c)[1] == middle for p in (a, b) for c in p)
    return (*_slots_and_shared_windows(a, b), *sizes)


#: Each rule's feature of a pair ``(A's patch, B's patch)``.
FEATURES: dict[str, Callable[[Patch, Patch], Hashable]] = {
    "constant_answer": lambda a, b: (),
    "a_patch_only": lambda a, b: a,
    "merge_slots_and_shared_windows": _slots_and_shared_windows,
    "merge_slots_shared_windows_and_window_sizes": _with_window_sizes,
    "both_patches": lambda a, b: (a, b),
}


def bayes_accuracy(
    p: PairDistribution, distance: int, feature: Callable[[Patch, Patch], Hashable]
) -> Fraction:
    """The best accuracy of any rule that sees only ``feature(A's patch, B's patch)``."""
    joint: dict[Hashable, list[Fraction]] = defaultdict(lambda: [Fraction(0)] * len(RELATIONS))
    for (a, label), prob in p.items():
        joint[feature(a, b_patch(a, label, distance))][label] += prob
    return sum((max(row) for row in joint.values()), Fraction(0))


def position_only_bounds(
    distance: int = 2, inside: bool | None = None, region: Region = in_seen_region
) -> dict[str, Fraction]:
    """Every rule of ``FEATURES``'s exact accuracy at ``distance`` (default: the test split's),
    on the pairs :func:`pair_distribution` keeps."""
    p = pair_distribution(distance, inside, region)
    return {name: bayes_accuracy(p, distance, f) for name, f in FEATURES.items()}


def constant_answer_accuracy(labels: Tensor, num_classes: int = len(RELATIONS)) -> float:
    """The constant answer's accuracy on a split: its most frequent label's share of ``labels``
    ``(n,)``. Read a model's accuracy on a split against this, measured on the same images."""
    if not isinstance(labels, Tensor) or labels.dim() != 1 or labels.numel() == 0:
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise ValueError(f"labels must be a non-empty 1-D tensor, got {got}")
    return float(torch.bincount(labels, minlength=num_classes).max()) / labels.numel()
