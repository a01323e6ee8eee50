"""Each planned prediction of chapter 5 checked by the rule fixed with it, and the comparisons a
failed positive control leaves not readable.

The kinds (``count``, ``gap``, ``lift-gap``, ``count-gap``) are described in
:mod:`companion.experiments.chapter5`, which prints these checks. A comparison rests on a
**positive control** when the plan says so: a ``gap`` against another cell rests on the count
prediction on that cell (the comparator solves the task), and any prediction rests on a count
prediction whose text names it (``"... (the control for I8)"``). Where that control failed, the
comparison is not readable, whatever its interval says (:func:`failed_control`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.predictions import (
    correct_by_seed,
    meets,
    p_text,
    parse_cell,
    solved_seeds,
    test_labels,
)
from companion.experiments.split_reading import constant_answer, is_split_cell
from companion.experiments.stats import binomial_interval, fisher_exact

# "the control for I8", "the control for I8 and I9": the ids a count prediction is a control for.
_CONTROL_FOR = re.compile(r"control for ([A-Z]+\d+(?:(?:, | and )[A-Z]+\d+)*)")


def failed_control(
    results: dict[str, Any], predictions: dict[str, Any], prediction: dict[str, Any]
) -> dict[str, Any] | None:
    """The failed positive control ``prediction`` rests on (a count prediction), else None."""
    against = prediction.get("against") if prediction["kind"] == "gap" else None
    for p in predictions["predictions"]:
        if p["kind"] != "count":
            continue
        named = _CONTROL_FOR.search(p["text"])
        controls = re.findall(r"[A-Z]+\d+", named.group(1)) if named else []
        if (p["cell"] == against or prediction["id"] in controls) and not check_prediction(
            results, p, predictions["solved"]
        )[1]:
            return p
    return None


def control_note(control: dict[str, Any]) -> str:
    """``"not readable: abs failed its positive control I5"``."""
    cell = control["cell"].split(":", 1)[1]
    return f"not readable: {cell} failed its positive control {control['id']}"


def check_prediction(
    results: dict[str, Any], prediction: dict[str, Any], solved: dict[str, Any],
    seeds: Sequence[int] | None = None,
) -> tuple[str, bool]:  # fmt: skip
    """``(what was measured, whether the prediction held)`` for one prediction, on every seed or
    on ``seeds`` only. A count planned over a cell's ``N`` seeds is read as the same share of the
    seeds read: ``k`` of ``n`` holds where ``k * N / n`` lies in the planned range (5 of 5 for
    "9-10 of 10", 1-4 of 5 for "2-9 of 10")."""
    kind, cell = prediction["kind"], prediction["cell"]
    rule = solved[parse_cell(cell)[0]]
    if kind == "count":
        every = solved_seeds(results, cell, rule)
        flags = [ok for seed, ok in every.items() if seeds is None or seed in seeds]
        k, n = sum(flags), len(flags)
        low, high = binomial_interval(k, n)
        lo, hi = prediction["expect"]
        return f"solved {k} of {n} (rate {low:.2f}-{high:.2f})", lo <= k * len(every) / n <= hi
    if seeds is not None:
        results = on_seeds(results, seeds)
    if kind == "count-gap":
        flags = list(solved_seeds(results, cell, rule).values())
        other = list(solved_seeds(results, prediction["against"], rule).values())
        ka, na, kb, nb = sum(flags), len(flags), sum(other), len(other)
        p = fisher_exact(ka, na, kb, nb)
        return f"{ka} of {na} against {kb} of {nb}, Fisher p = {p:.2g}", ka > kb and p < 0.05
    interval = prediction_interval(results, prediction)
    expect = prediction["expect"]
    return f"{interval}{p_text(interval, expect)}", meets(interval, expect)


def gap_cells(prediction: dict[str, Any]) -> list[str]:
    """The cells a gap or lift-gap prediction reads (not the constant answer)."""
    cells = [prediction["cell"]]
    if prediction["kind"] == "gap" and prediction["against"] != "constant":
        cells.append(prediction["against"])
    return cells


def _gap_matrices(
    results: dict[str, Any], prediction: dict[str, Any], seeds: Sequence[int] | None
) -> tuple[list[int], list[np.ndarray]]:
    """The seeds a gap or lift-gap prediction is read on (those all its cells have, or the
    given ``seeds``) and its ``(seeds, images)`` arrays: ``[a]`` against the constant answer,
    ``[a, b]`` for two cells, ``[first, second]`` for a lift-gap."""
    cell = prediction["cell"]
    if prediction["kind"] == "lift-gap":
        found = [correct_by_seed(results, cell, prediction[k]) for k in ("first", "second")]
    else:
        found = [correct_by_seed(results, c, prediction["split"]) for c in gap_cells(prediction)]
    common = sorted(set.intersection(*(set(f) for f in found)))
    if seeds is not None:
        if not seeds or set(seeds) - set(common):
            raise ValueError(f"seeds must be some of {common} (the cells' common seeds), got "
                             f"{list(seeds)}")  # fmt: skip
        common = sorted(seeds)
    return common, [np.stack([f[s] for s in common]) for f in found]


def prediction_interval(
    results: dict[str, Any], prediction: dict[str, Any], seeds: Sequence[int] | None = None
) -> Interval:
    """The bootstrap interval a ``gap`` or ``lift-gap`` prediction is read with, on the seeds
    its cells share (the planned reading) or on ``seeds`` only."""
    if prediction["kind"] not in ("gap", "lift-gap"):
        raise ValueError(f"prediction must be a gap or lift-gap, got kind {prediction['kind']!r}")
    dataset = parse_cell(prediction["cell"])[0]
    _, arrays = _gap_matrices(results, prediction, seeds)
    if prediction["kind"] == "lift-gap":
        first, second = prediction["first"], prediction["second"]
        return lift_gap_interval(
            arrays[0], test_labels(results, dataset, first),
            arrays[1], test_labels(results, dataset, second),
        )  # fmt: skip
    if len(arrays) == 1:
        return gap_interval(arrays[0], labels=test_labels(results, dataset, prediction["split"]))
    return gap_interval(arrays[0], arrays[1])


def per_seed(results: dict[str, Any], prediction: dict[str, Any]) -> dict[int, float]:
    """``{seed: the statistic of a gap or lift-gap prediction on that seed alone}`` (a fraction):
    the cell's accuracy minus the constant answer or the other cell's, or for a lift-gap the
    change of the cell's lift over the constant answer from ``first`` to ``second``."""
    dataset = parse_cell(prediction["cell"])[0]
    seeds, arrays = _gap_matrices(results, prediction, None)
    if prediction["kind"] == "lift-gap":
        first, second = (
            constant_answer(results, dataset, prediction[k]) for k in ("first", "second")
        )
        values = (arrays[1].mean(1) - second) - (arrays[0].mean(1) - first)
    elif len(arrays) == 1:
        values = arrays[0].mean(1) - constant_answer(results, dataset, prediction["split"])
    else:
        values = arrays[0].mean(1) - arrays[1].mean(1)
    return dict(zip(seeds, (float(v) for v in values), strict=True))


def split_cells(
    results: dict[str, Any], prediction: dict[str, Any], solved: dict[str, Any]
) -> list[str]:
    """The cells a gap or lift-gap prediction reads whose seeds split into solved and unsolved
    by ``solved``'s rule (a count or count-gap reads its cells as counts: never listed)."""
    if prediction["kind"] not in ("gap", "lift-gap"):
        return []
    rule = solved[parse_cell(prediction["cell"])[0]]
    return [c for c in gap_cells(prediction) if is_split_cell(results, c, rule)]


def on_seeds(results: dict[str, Any], seeds: Sequence[int]) -> dict[str, Any]:
    """``results`` with only the runs of ``seeds``."""
    kept = set(seeds)
    return {**results, "runs": [r for r in results["runs"] if r["seed"] in kept]}
