"""The interior hold-out read by placements: the unit a claim about positions is drawn from.

Each test split of ``far-relation-interior`` holds 1000 images but only 16 distinct
**placements** (where A and B lie, in patches); every image of a placement asks the same
question. A bootstrap over images treats 1000 draws as independent where there are 16, so its
intervals are too narrow for a claim about positions. Here the two-stage bootstrap resamples
seeds, then placements (each drawn placement with all its images), image-weighted as the planned
reading is. This reading was added after the run, beside the planned one (whose
``predictions.md`` fixed a bootstrap over seeds and images), and its verdicts are not the plan's.

Geometry: :func:`pair_line` names the row or column a placement's pair lies along. In this design
every ``seen`` pair lies along an edge row or column of the shared stage-0 window (rows and
columns 2-5) and every ``unseen`` pair along one through its centre (3 or 4), so the splits
differ in more than whether a position was seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from companion.data.tasks import PATCH
from companion.experiments.bootstrap import Interval
from companion.experiments.evaluation import load_split
from companion.experiments.predictions import (
    constant_answer,
    control_note,
    failed_control,
    in_points,
    meets,
)
from companion.experiments.split_reading import pos_label, seed_matrix

Placement = tuple[tuple[int, int], tuple[int, int]]


def placements(
    dataset: str, split: str, n: int, data_seed: int = 0
) -> tuple[np.ndarray, list[Placement]]:
    """``(ids, keys)``: each test image's placement index ``(n,)`` and the placements, sorted,
    each ``((row, col) of A, (row, col) of B)`` in patches."""
    data = load_split(dataset, split, n, data_seed)
    cells = (data.meta["centres"] // PATCH).long().tolist()  # (n, 2 objects, 2)
    found = [((a[0], a[1]), (b[0], b[1])) for a, b in cells]
    keys = sorted(set(found))
    return np.array([keys.index(f) for f in found]), keys


def pair_line(key: Placement) -> str:
    """``"row 2"`` or ``"column 5"``: the line the pair lies along."""
    (ra, ca), (rb, _) = key
    return f"row {ra}" if ra == rb else f"column {ca}"


def _counts(
    results: dict[str, Any], cell: str, split: str, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds, placements)`` right answers and ``(placements,)`` images of each placement."""
    k = int(ids.max()) + 1
    correct = seed_matrix(results, cell, split)[1].astype(float)
    hits = np.stack([np.bincount(ids, weights=row, minlength=k) for row in correct])
    return hits, np.bincount(ids, minlength=k).astype(float)


def placement_interval(
    results: dict[str, Any],
    terms: Sequence[tuple[float, str, str, np.ndarray]],
    replicates: int = 4000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of ``sum(sign * accuracy(cell, split))`` over ``terms``
    ``(sign, cell, split, placement ids)``, with a 95 % two-stage bootstrap: seeds resampled once
    for every term (paired by seed), then each split's placements resampled once for every term
    that reads it (paired by placement), each drawn placement with all its images."""
    rng = np.random.default_rng(seed)
    read = [(sign, split, *_counts(results, cell, split, ids)) for sign, cell, split, ids in terms]
    n_seeds = {len(hits) for _, _, hits, _ in read}
    if len(n_seeds) != 1:
        raise ValueError(f"terms must share their seeds, got seed counts {sorted(n_seeds)}")
    (n,) = n_seeds

    def value(s: np.ndarray, drawn: dict[str, np.ndarray]) -> float:
        return sum(sign * (hits[s][:, drawn[split]].sum(1) / sizes[drawn[split]].sum()).mean()
                   for sign, split, hits, sizes in read)  # fmt: skip

    every = {split: np.arange(len(sizes)) for _, split, _, sizes in read}
    estimate = value(np.arange(n), every)
    values = np.empty(replicates)
    for r in range(replicates):
        s = rng.integers(0, n, n)
        drawn = {split: rng.integers(0, len(p), len(p)) for split, p in every.items()}
        values[r] = value(s, drawn)
    low, high = np.quantile(values, [0.025, 0.975])
    return float(estimate), float(low), float(high)


def placement_table(
    results: dict[str, Any], cells: Sequence[str], split: str, ids: np.ndarray,
    keys: Sequence[Placement],
) -> str:  # fmt: skip
    """Markdown: per placement of ``split``, its line, its images and each cell's accuracy (%,
    mean over seeds)."""
    lines = [f"| `{split}` placement (A → B) | line | images | "
             + " | ".join(f"`{pos_label(c)}`" for c in cells) + " |",
             "|---" * (3 + len(cells)) + "|"]  # fmt: skip
    sizes = np.bincount(ids, minlength=len(keys))
    by_cell = [100 * np.divide(*_counts(results, c, split, ids)) for c in cells]
    for p, key in enumerate(keys):
        entries = [f"{a[:, p].mean():.1f}" for a in by_cell]
        lines.append(f"| {key[0]} → {key[1]} | {pair_line(key)} | {sizes[p]} | "
                     + " | ".join(entries) + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def placement_readings(
    results: dict[str, Any], predictions: dict[str, Any], ids: dict[str, np.ndarray],
    keys: dict[str, Sequence[Placement]],
) -> str:  # fmt: skip
    """Text: the lines each split's pairs lie along, then every lift-gap prediction's lift
    change (a cell's lift over the constant answer on ``second`` minus on ``first``, each split's
    constant answer fixed at its measured value) read with the placement bootstrap against its
    threshold, or "not readable" where its positive control failed (a correction made after the
    run: the planned verdicts stand as printed). Points."""
    lines = ["Correction made after the run: seeds and placements resampled (95 %), points."]
    for split, found in keys.items():
        along = sorted({pair_line(k) for k in found})
        lines.append(f"  `{split}`: {len(found)} placements, pairs along {', '.join(along)}")
    for p in predictions["predictions"]:
        if p["kind"] != "lift-gap":
            continue
        cell, first, second = p["cell"], p["first"], p["second"]
        dataset = cell.split(":", 1)[0]
        shift = constant_answer(results, dataset, first) - constant_answer(results, dataset, second)
        terms = [(1.0, cell, second, ids[second]), (-1.0, cell, first, ids[first])]
        est, low, high = (v + shift for v in placement_interval(results, terms))
        # A comparison whose positive control failed is not readable, by this reading too.
        control = failed_control(results, predictions, p)
        held = "yes" if meets(Interval(est, low, high, p=1.0), p["expect"]) else "no"
        verdict = control_note(control) if control else f"{in_points(p['expect'])}: {held}"
        lines.append(f"  {p['id']}  {pos_label(cell):8} lift change {100 * est:+.1f} "
                     f"[{100 * low:+.1f}, {100 * high:+.1f}]  {verdict}")  # fmt: skip
    return "\n".join(lines)
