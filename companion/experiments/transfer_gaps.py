"""Chapter 6's paired reading of a resolution-transfer experiment, in points.

A model moved to ``S`` px is read against its **reference** (the same code trained at ``S`` px in
the same rendering, :func:`companion.experiments.transfer_results.check_references`) as a
*difference*, not a ratio: moved accuracy − reference accuracy, in points (100 × accuracy). The
ratio ("the share of the reference's lift kept") has no scale where the
reference learnt little; a difference always has one.

Every gap here is paired: seed ``s`` of one side against seed ``s`` of the other, on the same test
images, in every replicate of the two-stage bootstrap
(:func:`companion.experiments.bootstrap.gap_interval`). A moved cell's test images are its
reference's (drawn by the task's generator from the same data seed at the same size and
rendering), so their labels, and the constant answer, come from the reference.

A cell is ``{"dataset", "pos", "rendering", "condition", "metric"}`` (``metric`` ``"acc"``: as
moved, ``"acc_finetuned"``: after the short fine-tune), at a size passed separately. Intervals are
fractions of accuracy; :func:`points` prints them in points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.predictions import correct_by_seed, test_labels
from companion.experiments.transfer_results import moved_correct

Rows = Sequence[dict[str, Any]]
References = Mapping[str, dict[str, Any]]
BySeed = Mapping[int, np.ndarray]


def moved_labels(references: References, cell: Mapping[str, str]) -> np.ndarray:
    """The ``(images,)`` labels of the test images a moved ``cell`` (its ``dataset`` drawn in its
    ``rendering``) was tested on: its reference's."""
    dataset, rendering = cell["dataset"], cell["rendering"]
    if rendering not in references:
        raise ValueError(f"references hold no reference in the {rendering!r} rendering; they "
                         f"hold {sorted(references)}")  # fmt: skip
    if dataset not in references[rendering]["test_sets"]:
        raise ValueError(f"the {rendering!r} reference has no {dataset!r} test set to read the "
                         f"moved models' labels from")  # fmt: skip
    return test_labels(references[rendering], dataset, "test")


def _moved(rows: Rows, cell: Mapping[str, str], size: int, images: int) -> dict[int, np.ndarray]:
    """``{seed: (images,) bool}``: which of the first ``images`` test images each seed's moved
    model of ``cell`` got right."""
    by_seed = moved_correct(
        rows, cell["dataset"], cell["pos"], cell["rendering"], size, cell["condition"],
        cell.get("metric", "acc"),
    )  # fmt: skip
    short = min(len(bits) for bits in by_seed.values())
    if short < images:
        raise ValueError(
            f"images must be at most the {short} the moved runs were tested on, got {images}"
        )
    return {seed: bits[:images] for seed, bits in by_seed.items()}


def kind_gap(
    before: dict[str, Any], rows: Rows, references: References, kind: str,
    cells: list[dict[str, str]], size: int,
) -> tuple[Interval, str]:  # fmt: skip
    """The interval of a gap of ``kind`` and the note on the seeds it was read on (those both
    sides have, named where either side has more), paired by seed and test image:

    * ``lift-change`` (``cells = [cell]``): the moved cell's lift over the constant answer minus
      the same seeds' lift at 32 px (``before``), each on its own images;
    * ``moved-gap`` (``[cell]``): moved accuracy − its reference's;
    * ``code-gap``/``window-gain`` (``[a, b]``): moved ``a`` − moved ``b``, two cells that share
      dataset and rendering (the same test images)."""
    cell, labels = cells[0], moved_labels(references, cells[0])
    moved = _moved(rows, cell, size, len(labels))
    cell_name = f"{cell['dataset']}:{cell['pos']}"
    if kind == "lift-change":
        other: BySeed = correct_by_seed(before, cell_name, "test")
    elif kind == "moved-gap":
        other = correct_by_seed(references[cell["rendering"]], cell_name, "test")
    else:
        for key in ("dataset", "rendering"):
            if cells[0][key] != cells[1][key]:
                raise ValueError(f"a and b must share the {key} (the same test images), got "
                                 f"{cells[0][key]!r} and {cells[1][key]!r}")  # fmt: skip
        other = _moved(rows, cells[1], size, len(labels))
    seeds = sorted(set(moved) & set(other))
    note = f" (on the {len(seeds)} seeds both have)" if set(moved) != set(other) else ""
    a, b = np.stack([moved[s] for s in seeds]), np.stack([other[s] for s in seeds])
    if kind == "lift-change":
        return lift_gap_interval(b, test_labels(before, cell["dataset"], "test"), a, labels), note
    return gap_interval(a, b), note


def points(interval: Interval) -> str:
    """``"+12.3 [+4.5, +20.1]"``: the estimate and its 95 % interval in points."""
    return f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"


def learned_seeds(
    reference: dict[str, Any], dataset: str, pos: str, threshold: float
) -> tuple[list[int], list[int]]:
    """``(learned, every)``: the seeds of a reference cell reaching ``threshold`` test accuracy,
    and all its seeds, sorted."""
    by_seed = correct_by_seed(reference, f"{dataset}:{pos}", "test")
    return [s for s in sorted(by_seed) if by_seed[s].mean() >= threshold], sorted(by_seed)


def _merge(records: Rows, key: Callable[[Mapping[str, Any]], tuple[Any, ...]]) -> list[dict]:
    """The records in order, refusing a cell and seed (``key(record)``, the seed last) met twice."""
    seen: set[tuple[Any, ...]] = set()
    for r in records:
        if key(r) in seen:
            cell = ":".join(str(v) for v in key(r)[:-1])
            raise ValueError(f"cell {cell} seed {r['seed']} is in more than one record")
        seen.add(key(r))
    return list(records)


def merge_runs(*results: dict[str, Any]) -> dict[str, Any]:
    """One results.json from several of one ablation (extra seeds trained later): ``{"runs",
    "test_sets"}``, the runs concatenated, the test sets the first record's (a later one's must be
    identical on the datasets both hold); a cell's seed in two records is refused."""
    test_sets: dict[str, Any] = {}
    for r in results:
        for dataset, sets in r["test_sets"].items():
            if test_sets.setdefault(dataset, sets) != sets:
                raise ValueError(f"the records' {dataset!r} test sets (labels) differ")
    runs = _merge(
        [run for r in results for run in r["runs"]],
        lambda run: (run["dataset"], run["pos"], run.get("variant", "swin"), run["seed"]),
    )
    return {"runs": runs, "test_sets": test_sets}


def merge_rows(*transfers: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of several transfer.json records concatenated; a seed of a cell (dataset, pos,
    rendering, size, condition, variant) in two records is refused."""
    return _merge(
        [row for t in transfers for row in t["rows"]],
        lambda r: (r["dataset"], r["pos"], r.get("rendering", "scaled"), r["size"],
                   r["condition"], r.get("variant", "swin"), r["seed"]),
    )  # fmt: skip
