"""Chapter 6's paired gaps of a resolution transfer (a :class:`FarTransfer`), in points.

A model moved to ``S`` px is read against its **reference** (the same code trained at ``S`` px in
the same rendering) as a *difference*, not a ratio: moved accuracy − reference accuracy, in
points (100 × accuracy). The ratio ("the share of the reference's lift kept") has no scale where
the reference learnt little; a difference always has one.

Every gap here is paired by seed and test image (:mod:`companion.experiments.bootstrap`). A moved
cell's test images are its reference's (drawn by the task's generator from the same data seed at
the same size and rendering), so their labels, and the constant answer, come from the reference.

A cell is ``{"dataset", "pos", "rendering", "condition", "metric"}`` (``metric`` ``"acc"``: as
moved, ``"acc_finetuned"``: after the short fine-tune), at the plan's size. Intervals are
fractions of accuracy; :func:`points` prints them in points.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.evaluation import unpack_bits
from companion.experiments.far_transfer import FarTransfer
from companion.experiments.predictions import correct_by_seed, test_labels

#: A moved model's accuracy as moved, and after the short fine-tune.
METRICS = ("acc", "acc_finetuned")


def _moved(far: FarTransfer, cell: Mapping[str, str], images: int) -> dict[int, np.ndarray]:
    """``{seed: (images,) bool}``: which of the first ``images`` test images each moved run of
    ``cell`` got right (as moved, or after the fine-tune: its ``metric``)."""
    metric = cell.get("metric", "acc")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    size = far.plan["size"]
    wanted = (cell["dataset"], cell["pos"], cell["rendering"], size, cell["condition"])
    found = {r["seed"]: r[f"correct{metric[3:]}"] for r in far.rows
             if (r["dataset"], r["pos"], r.get("rendering", "scaled"), r["size"], r["condition"])
             == wanted}  # fmt: skip
    if not found:
        raise ValueError(f"rows hold no cell {cell['pos']}:{cell['condition']} on "
                         f"{cell['dataset']}/{cell['rendering']} at {size} px")  # fmt: skip
    # whole bytes of hex: up to 7 padding bits after the last image, never read
    if (short := 4 * min(len(bits) for bits in found.values())) < images:
        raise ValueError(
            f"images must be at most the {short} the moved runs were tested on, got {images}"
        )
    return {seed: unpack_bits(bits, 4 * len(bits))[:images] for seed, bits in found.items()}


def kind_gap(
    far: FarTransfer, kind: str, cells: list[dict[str, str]], seeds: Collection[int] | None = None
) -> tuple[Interval, str]:
    """The interval of a gap of ``kind`` as moved to the plan's size and the note on the seeds it
    was read on (those both sides have, of ``seeds`` if given; the note names them where either
    side has more), paired by seed and test image:

    * ``lift-change`` (``cells = [cell]``): the moved cell's lift over the constant answer minus
      the same seeds' lift at 32 px, each on its own images;
    * ``moved-gap`` (``[cell]``): moved accuracy − its reference's;
    * ``code-gap``/``window-gain`` (``[a, b]``): moved ``a`` − moved ``b``, two cells that share
      dataset and rendering (the same test images)."""
    cell = cells[0]
    dataset, rendering = cell["dataset"], cell["rendering"]
    if rendering not in far.references:
        raise ValueError(f"references hold no reference in the {rendering!r} rendering; they "
                         f"hold {sorted(far.references)}")  # fmt: skip
    reference = far.references[rendering]  # the moved cell's test images are its reference's
    if dataset not in reference["test_sets"]:
        raise ValueError(f"the {rendering!r} reference has no {dataset!r} test set to read the "
                         f"moved models' labels from")  # fmt: skip
    labels = test_labels(reference, dataset, "test")
    moved = _moved(far, cell, len(labels))
    name = f"{dataset}:{cell['pos']}"
    if kind == "lift-change":
        other: Mapping[int, np.ndarray] = correct_by_seed(far.before, name, "test")
    elif kind == "moved-gap":
        other = correct_by_seed(reference, name, "test")
    else:
        for key in ("dataset", "rendering"):
            if cells[0][key] != cells[1][key]:
                raise ValueError(f"a and b must share the {key} (the same test images), got "
                                 f"{cells[0][key]!r} and {cells[1][key]!r}")  # fmt: skip
        other = _moved(far, cells[1], len(labels))
    both = set(moved) & set(other)
    note = f" (on the {len(both)} seeds both have)" if set(moved) != set(other) else ""
    read = sorted(both if seeds is None else both & set(seeds))
    a, b = np.stack([moved[s] for s in read]), np.stack([other[s] for s in read])
    if kind == "lift-change":
        return lift_gap_interval(b, test_labels(far.before, dataset, "test"), a, labels), note
    return gap_interval(a, b), note


def points(interval: Interval) -> str:
    """``"+12.3 [+4.5, +20.1]"``: the estimate and its 95 % interval in points."""
    return f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"
