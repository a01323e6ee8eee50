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
from companion.experiments.evaluation import load_split
from companion.experiments.prediction_checks import control_note, failed_control
from companion.experiments.predictions import correct_by_seed, test_labels

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


def _counts(correct: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds, placements)`` right answers and ``(placements,)`` images of each placement."""
    hits = np.stack([np.bincount(ids, weights=row, minlength=k) for row in correct])
    return hits, np.bincount(ids, minlength=k).astype(float)


def _matrix(results: dict[str, Any], cell: str, split: str) -> tuple[list[int], np.ndarray]:
    by_seed = correct_by_seed(results, cell, split)
    seeds = sorted(by_seed)
    return seeds, np.stack([by_seed[s] for s in seeds]).astype(float)


def placement_accuracy(
    results: dict[str, Any], cell: str, split: str, ids: np.ndarray, k: int
) -> np.ndarray:
    """``(seeds, placements)``: each seed's accuracy on each placement's images."""
    hits, sizes = _counts(_matrix(results, cell, split)[1], ids, k)
    return hits / sizes


def _constant(results: dict[str, Any], dataset: str, split: str) -> float:
    labels = test_labels(results, dataset, split)
    return float(np.bincount(labels).max() / len(labels))


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
    read = []
    for sign, cell, split, ids in terms:
        k = int(ids.max()) + 1
        correct = _matrix(results, cell, split)[1]
        read.append((sign, split, *_counts(correct, ids, k)))
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


def lift_change_by_placements(
    results: dict[str, Any], cell: str, first: str, second: str, ids: dict[str, np.ndarray]
) -> tuple[float, float, float]:
    """A cell's lift over the constant answer on ``second`` minus on ``first`` (each split's
    constant answer fixed at its measured value), in the placement bootstrap. Fractions."""
    dataset = cell.split(":", 1)[0]
    shift = _constant(results, dataset, first) - _constant(results, dataset, second)
    est, low, high = placement_interval(
        results, [(1.0, cell, second, ids[second]), (-1.0, cell, first, ids[first])]
    )
    return est + shift, low + shift, high + shift


def placement_table(
    results: dict[str, Any], cells: Sequence[str], split: str, ids: np.ndarray,
    keys: Sequence[Placement],
) -> str:  # fmt: skip
    """Markdown: per placement of ``split``, its line, its images and each cell's accuracy (%,
    mean over seeds)."""
    codes = [c.split(":", 1)[1] for c in cells]
    lines = [f"| `{split}` placement (A → B) | line | images | "
             + " | ".join(f"`{c}`" for c in codes) + " |",
             "|---" * (3 + len(codes)) + "|"]  # fmt: skip
    sizes = np.bincount(ids, minlength=len(keys))
    by_cell = [100 * placement_accuracy(results, c, split, ids, len(keys)) for c in cells]
    for p, key in enumerate(keys):
        entries = [f"{a[:, p].mean():.1f}" for a in by_cell]
        lines.append(f"| {key[0]} → {key[1]} | {pair_line(key)} | {sizes[p]} | "
                     + " | ".join(entries) + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def placement_readings(
    results: dict[str, Any], predictions: dict[str, Any], ids: dict[str, np.ndarray],
    keys: dict[str, Sequence[Placement]],
) -> str:  # fmt: skip
    """Text: the lines each split's pairs lie along, then every lift-gap prediction read with the
    placement bootstrap against its threshold, or "not readable" where its positive control
    failed (a correction made after the run: the planned verdicts stand as printed). Points."""
    lines = ["Correction made after the run: seeds and placements resampled (95 %), points."]
    for split, found in keys.items():
        along = sorted({pair_line(k) for k in found})
        lines.append(f"  `{split}`: {len(found)} placements, pairs along {', '.join(along)}")
    for p in predictions["predictions"]:
        if p["kind"] != "lift-gap":
            continue
        est, low, high = lift_change_by_placements(results, p["cell"], p["first"], p["second"], ids)
        word, x = p["expect"].split()[0], 100 * float(p["expect"].split()[1])
        lo, hi = 100 * low, 100 * high
        inside = {"above": lo > x, "below": hi < x, "within": -x < lo and hi < x}[word]
        # A comparison whose positive control failed is not readable, by this reading too.
        control = failed_control(results, predictions, p)
        verdict = (
            control_note(control)
            if control
            else f"{word} {x:g} points: {'yes' if inside else 'no'}"
        )
        lines.append(
            f"  {p['id']}  {p['cell'].split(':', 1)[1]:8} lift change {100 * est:+.1f} "
            f"[{100 * low:+.1f}, {100 * high:+.1f}]  {verdict}"
        )
    return "\n".join(lines)
