"""Predictions written before a run: the one parser of their files, and what every reading of them
shares.

``results/<name>/predictions.md`` is prose for the reader plus one fenced ``json`` block
(:func:`parse_predictions`): chapter 5's kinds are ``KINDS``, chapter 6's ``TRANSFER_KINDS``. A
cell is ``"dataset:pos"`` or ``"dataset:pos:variant"``; a gap expects "above X" (the interval's
low end above X), "below X" (its high end below X) or "within X" (inside ``(-X, X)``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval
from companion.experiments.evaluation import labels_from_text, unpack_bits
from companion.experiments.results import read_text
from companion.experiments.stats import format_p

KINDS = ("count", "gap", "lift-gap", "count-gap")
TRANSFER_KINDS = ("count", "moved-count", "lift-change", "moved-gap", "code-gap", "window-gain")
PREDICTIONS = "predictions.md"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def load_predictions(folder: str | Path, kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    """The block of ``folder/predictions.md`` (``{"solved", "predictions"}``), the file checked
    against the folder's ``SHA256SUMS``."""
    path = Path(folder) / PREDICTIONS
    return parse_predictions(read_text(folder, PREDICTIONS), path, kinds)


def parse_predictions(
    text: str, where: str | Path = PREDICTIONS, kinds: Sequence[str] = KINDS
) -> dict[str, Any]:
    """The one ``json`` block of a predictions file's ``text`` (``where`` names it in errors),
    each prediction's kind one of ``kinds``: also for a file whose run has not been made (its
    folder has no ``SHA256SUMS`` yet)."""
    blocks = _BLOCK.findall(text.replace("\r\n", "\n"))  # a CRLF copy reads the same
    if len(blocks) != 1:
        raise ValueError(f"{where} must hold exactly one ```json block, found {len(blocks)}")
    try:  # a malformed block is one line naming the file, not a bare KeyError
        found = json.loads(blocks[0])
        entries = [(p["id"], p["kind"]) for p in found["predictions"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{where}: the json block must be an object whose 'predictions' list holds objects "
            f"with an 'id' and a 'kind' ({type(exc).__name__}: {exc})"
        ) from None
    for pid, kind in entries:
        if kind not in kinds:
            raise ValueError(f"prediction {pid}: kind must be one of {tuple(kinds)}, got {kind!r}")
    return found


def parse_far_transfer_predictions(text: str, where: str | Path = PREDICTIONS) -> dict[str, Any]:
    """Chapter 6's block: its kinds among ``TRANSFER_KINDS``, its keys there."""
    found = parse_predictions(text, where, kinds=TRANSFER_KINDS)
    missing = [k for k in ("size", "solved", "learned", "references") if k not in found]
    if missing:
        raise ValueError(f"{where}: the json block lacks {missing}")
    return found


def parse_cell(cell: str) -> tuple[str, str, str]:
    """``"grid-cell:rel"`` -> ``("grid-cell", "rel", "swin")``."""
    parts = cell.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"cell must be dataset:pos or dataset:pos:variant, got {cell!r}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else "swin"


def correct_by_seed(results: dict[str, Any], cell: str, split: str) -> dict[int, np.ndarray]:
    """``{seed: (images,) bool}``: which test images of ``split`` each run of ``cell`` got right."""
    dataset, pos, variant = parse_cell(cell)
    runs = [
        r
        for r in results["runs"]
        if (r["dataset"], r["pos"], r.get("variant", "swin")) == (dataset, pos, variant)
    ]
    if not runs:
        raise ValueError(f"cell {cell!r} has no runs in these results")
    return {
        r["seed"]: unpack_bits(r["splits"][split]["correct"], r["splits"][split]["n"]) for r in runs
    }


def test_labels(results: dict[str, Any], dataset: str, split: str) -> np.ndarray:
    """The labels of a test split, as kept once in the results."""
    return labels_from_text(results["test_sets"][dataset][split]["labels"])


def solved_seeds(results: dict[str, Any], cell: str, rule: dict[str, Any]) -> dict[int, bool]:
    """``{seed: solved}``: whether each run of ``cell`` reached ``rule["threshold"]`` accuracy on
    ``rule["split"]`` (the "solved" rule of the cell's dataset)."""
    return {
        seed: bool(c.mean() >= rule["threshold"])
        for seed, c in correct_by_seed(results, cell, rule["split"]).items()
    }


def meets(interval: Interval, expect: str) -> bool:
    """Whether ``interval`` is where ``expect`` (``"above X"``, ``"below X"``, ``"within X"``)
    says."""
    x = threshold_of(expect)
    return {
        "above": interval.low > x,
        "below": interval.high < x,
        "within": -x < interval.low and interval.high < x,
    }[expect.split()[0]]


def threshold_of(expect: str) -> float:
    """The number a gap's ``expect`` names (``"above -0.05"`` -> -0.05)."""
    word, value = expect.split()
    if word not in ("above", "below", "within"):
        raise ValueError(f"expect must be 'above X', 'below X' or 'within X', got {expect!r}")
    return float(value)


def in_points(expect: str) -> str:
    """``"above -0.05"`` -> ``"above -5 points"``."""
    return f"{expect.split()[0]} {100 * threshold_of(expect):g} points"


def p_text(interval: Interval, expect: str) -> str:
    """The bootstrap p-value beside a gap, only where it tests what the prediction names.

    The p-value is for "the gap is 0". Beside "above 0.05" or "within 0.05" it would answer a
    question the prediction did not ask, so it is left out; beside "above 0" or "below 0" it
    tests the prediction's own threshold, and says so."""
    if expect.split()[0] == "within" or threshold_of(expect) != 0.0:
        return ""
    return f" (against 0: {format_p(interval.p, interval.floor)})"


def chosen(predictions: dict[str, Any], ids: Sequence[str] | None) -> list[dict[str, Any]]:
    """The predictions named by ``ids`` (all where None), in that order."""
    if ids is None:
        return list(predictions["predictions"])
    known = {p["id"]: p for p in predictions["predictions"]}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"ids: {unknown} are not predictions; allowed: {sorted(known)}")
    return [known[i] for i in ids]
