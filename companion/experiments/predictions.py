"""Predictions written before a run, checked against its results by rules fixed with them.

``results/<name>/predictions.md`` is prose for the reader plus one fenced ``json`` block that
this module reads: what "solved" means per dataset (a split and a threshold), and a list of
predictions, each of one kind:

* ``count``: ``cell`` solved in ``expect = [low, high]`` of its seeds (inclusive);
* ``gap``: ``cell`` minus ``against`` (another cell, or ``"constant"``: the constant answer on the
  same images) on ``split``, read with the two-stage bootstrap interval
  (:mod:`companion.experiments.bootstrap`); ``expect`` is ``"above X"`` (the interval's low end
  above X), ``"below X"`` (its high end below X) or ``"within X"`` (inside ``(-X, X)``);
* ``lift-gap``: how much more ``cell`` scores above the constant answer on split ``second``
  than on split ``first`` (held-out positions against seen ones), ``expect`` as for ``gap``;
* ``count-gap``: ``cell`` solved in more seeds than ``against``, Fisher's exact ``p < 0.05``
  (``expect`` is ``"more"``).

A cell is ``"dataset:pos"`` or ``"dataset:pos:variant"``. Cells compared are paired on the seeds
both have (a controlled variant runs on fewer seeds than the Swin it changes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.evaluation import labels_from_text, unpack_bits
from companion.experiments.integrity import verified_bytes
from companion.experiments.stats import binomial_interval, fisher_exact

KINDS = ("count", "gap", "lift-gap", "count-gap")
PREDICTIONS = "predictions.md"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def load_predictions(folder: str | Path, kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    """The ``json`` block of ``folder/predictions.md``: ``{"solved", "predictions"}`` (chapter
    6's transfer predictions have kinds of their own, ``transfer_reading.KINDS``), checked
    against the folder's ``SHA256SUMS`` (``companion.experiments.integrity``)."""
    path = Path(folder) / PREDICTIONS
    blocks = _BLOCK.findall(verified_bytes(folder, PREDICTIONS).decode("utf-8"))
    if len(blocks) != 1:
        raise ValueError(f"{path} must hold exactly one ```json block, found {len(blocks)}")
    found = json.loads(blocks[0])
    for p in found["predictions"]:
        if p["kind"] not in kinds:
            raise ValueError(
                f"prediction {p['id']}: kind must be one of {tuple(kinds)}, got {p['kind']!r}"
            )
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


def solved_seeds(results: dict[str, Any], cell: str, solved: dict[str, Any]) -> dict[int, bool]:
    """``{seed: solved}`` by the predictions' own rule for the cell's dataset."""
    rule = solved[parse_cell(cell)[0]]
    return {
        seed: bool(c.mean() >= rule["threshold"])
        for seed, c in correct_by_seed(results, cell, rule["split"]).items()
    }


def _paired(a: dict[int, np.ndarray], b: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    seeds = sorted(set(a) & set(b))
    return np.stack([a[s] for s in seeds]), np.stack([b[s] for s in seeds])


def meets(interval: Interval, expect: str) -> bool:
    word, value = expect.split()
    x = float(value)
    if word == "above":
        return interval.low > x
    if word == "below":
        return interval.high < x
    if word == "within":
        return -x < interval.low and interval.high < x
    raise ValueError(f"expect must be 'above X', 'below X' or 'within X', got {expect!r}")


def check_prediction(
    results: dict[str, Any], prediction: dict[str, Any], solved: dict[str, Any]
) -> tuple[str, bool]:
    """``(what was measured, whether the prediction held)`` for one prediction."""
    kind, cell = prediction["kind"], prediction["cell"]
    if kind == "count":
        flags = solved_seeds(results, cell, solved)
        k, n = sum(flags.values()), len(flags)
        low, high = binomial_interval(k, n)
        lo, hi = prediction["expect"]
        return f"solved {k} of {n} (rate {low:.2f}-{high:.2f})", lo <= k <= hi
    if kind == "count-gap":
        flags = solved_seeds(results, cell, solved)
        other = solved_seeds(results, prediction["against"], solved)
        ka, na = sum(flags.values()), len(flags)
        kb, nb = sum(other.values()), len(other)
        p = fisher_exact(ka, na, kb, nb)
        return f"{ka} of {na} against {kb} of {nb}, Fisher p = {p:.2g}", ka > kb and p < 0.05
    dataset = parse_cell(cell)[0]
    if kind == "gap":
        split = prediction["split"]
        mine = correct_by_seed(results, cell, split)
        if prediction["against"] == "constant":
            seeds = sorted(mine)
            a = np.stack([mine[s] for s in seeds])
            interval = gap_interval(a, labels=test_labels(results, dataset, split))
        else:
            a, b = _paired(mine, correct_by_seed(results, prediction["against"], split))
            interval = gap_interval(a, b)
    else:  # lift-gap
        first, second = prediction["first"], prediction["second"]
        a, b = _paired(
            correct_by_seed(results, cell, first), correct_by_seed(results, cell, second)
        )
        interval = lift_gap_interval(
            a, test_labels(results, dataset, first), b, test_labels(results, dataset, second)
        )
    return f"{interval} (p = {interval.p:.2g})", meets(interval, prediction["expect"])


def expected_text(prediction: dict[str, Any]) -> str:
    expect = prediction["expect"]
    return expect if isinstance(expect, str) else "{}-{} seeds".format(*expect)


def chosen(predictions: dict[str, Any], ids: Sequence[str] | None) -> list[dict[str, Any]]:
    if ids is None:
        return list(predictions["predictions"])
    known = {p["id"]: p for p in predictions["predictions"]}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"ids: {unknown} are not predictions; allowed: {sorted(known)}")
    return [known[i] for i in ids]


def predictions_list(predictions: dict[str, Any], ids: Sequence[str] | None = None) -> str:
    """A Markdown table of the predictions as written (before any result): id, text, expected."""
    lines = ["| id | prediction | expected |", "|---|---|---|"]
    lines += [f"| {p['id']} | {p['text']} | {expected_text(p)} |" for p in chosen(predictions, ids)]
    return "\n".join(lines)


def predictions_table(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """A Markdown table: every prediction (or those in ``ids``), what it expected, what was
    measured, whether it held."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, held = check_prediction(results, p, predictions["solved"])
        lines.append(
            f"| {p['id']} | {p['text']} | {expected_text(p)} | {measured} | "
            f"{'yes' if held else '**no**'} |"
        )
    return "\n".join(lines)
