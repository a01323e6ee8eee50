"""Chapter 6's moved models beside their references: models trained at the new size.

A moved accuracy alone has no scale: 60 % after moving to 48 px is a small loss if training at
48 px reaches 65 %, a large one if it reaches 100 %. So a moved cell is read against its
**reference**, the same code trained at the new size on the same task drawn the same way (an
ordinary ablation run with ``--img-size`` and ``--rendering``), on the same test images. Here:
the references' records (:func:`load_references`) and which test images each moved run got right
(:func:`moved_correct`); the gaps are read in :mod:`companion.experiments.transfer_gaps` and
:mod:`companion.experiments.chapter6`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.evaluation import unpack_bits
from companion.experiments.results import load_results

METRICS = ("acc", "acc_finetuned")


def load_references(results_dir: str | Path, names: Mapping[str, str]) -> dict[str, Any]:
    """``{rendering: results.json}`` of each reference ablation (``names``: rendering -> folder),
    checked to have been trained in that rendering."""
    found = {}
    for rendering, name in names.items():
        results = load_results(Path(results_dir) / name)
        drawn = {r["settings"].get("rendering", "scaled") for r in results["runs"]}
        if drawn != {rendering}:
            raise ValueError(
                f"{name}: its runs were drawn in {sorted(drawn)}, not in {rendering!r}; check "
                f"the predictions' references"
            )
        found[rendering] = results
    return found


def moved_correct(
    rows: Sequence[dict[str, Any]],
    dataset: str,
    pos: str,
    rendering: str,
    size: int,
    condition: str,
    metric: str = "acc",
) -> dict[int, np.ndarray]:
    """``{seed: (bits,) bool}``: which test images each moved run of the cell got right (the
    first ``images`` of the ``bits``, a multiple of 8)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    bits = "correct" + metric[3:]
    wanted = (dataset, pos, rendering, size, condition)
    found = {
        r["seed"]: r
        for r in rows
        if (r["dataset"], r["pos"], r.get("rendering", "scaled"), r["size"], r["condition"])
        == wanted
    }
    if not found:
        raise ValueError(
            f"rows hold no cell {pos}:{condition} on {dataset}/{rendering} at {size} px"
        )
    # The bits are packed in whole bytes (hex): the last byte may carry up to 7 padding bits,
    # which the callers cut off at the test set's length (``_stack``).
    return {seed: unpack_bits(r[bits], 4 * len(r[bits])) for seed, r in sorted(found.items())}


def _stack(by_seed: dict[int, np.ndarray], images: int) -> np.ndarray:
    return np.stack([by_seed[s][:images] for s in sorted(by_seed)])
