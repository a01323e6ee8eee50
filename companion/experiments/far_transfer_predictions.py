"""Chapter 6's planned comparisons for moving every code from 32 px to 48 px on ``far-relation``.

``results/<name>/predictions.md`` holds one fenced ``json`` block::

    {"size": 48, "solved": {"threshold": 0.9}, "learned": {"threshold": 0.9, "seeds": 4},
     "references": {"world": "<folder>", "scaled": "<folder>"}, "predictions": [...]}

``before`` is the 32-px ablation's results.json, ``rows`` its transfer.json rows, ``references``
``{rendering: results.json}`` of the ablations trained at ``size`` px
(:func:`companion.experiments.transfer_reading.load_references`). A 32-px cell is
``"far-relation:rel"``; a moved cell is ``{"dataset", "pos", "rendering", "condition",
"metric"}`` (``metric`` ``"acc"`` unless given; ``"window-grown"`` reads as the code's own grown
condition, :func:`~companion.experiments.resolution_transfer.grown_condition`). Kinds (``KINDS``):

* ``count``: the 32-px ``cell`` solved (test accuracy ≥ ``solved.threshold``) in ``expect =
  [low, high]`` seeds; ``moved-count``: the same of a moved ``cell``;
* ``lift-change``: a moved ``cell``'s lift over the constant answer minus the same seeds' lift at
  32 px, each on its own images (:func:`~companion.experiments.bootstrap.lift_gap_interval`);
* ``moved-gap``: moved ``cell`` − its reference, paired by seed and image; not readable (held
  ``None``) where fewer than ``learned.seeds`` of the reference's seeds reach
  ``learned.threshold``;
* ``code-gap``: moved ``a`` − moved ``b`` in one rendering; ``window-gain`` is that reading of one
  code under two conditions (window grown − kept), checked to be so.

Gaps ``expect`` ``"above X"``/``"below X"``/``"within X"`` (fractions) and print in points; two
sides with different seeds are read on the seeds both have, and the measured text says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, lift_gap_interval
from companion.experiments.integrity import verified_bytes
from companion.experiments.predictions import (
    PREDICTIONS,
    chosen,
    correct_by_seed,
    meets,
    p_text,
    parse_predictions,
    test_labels,
    threshold_of,
)
from companion.experiments.resolution_transfer import WINDOW_GROWN, grown_condition
from companion.experiments.stats import binomial_interval
from companion.experiments.transfer_gaps import (
    code_gap,
    moved_matrix,
    moved_minus_reference,
    points,
    solved_flags,
)

KINDS = ("count", "moved-count", "lift-change", "moved-gap", "code-gap", "window-gain")
Rows = Sequence[dict[str, Any]]
References = Mapping[str, dict[str, Any]]


def parse_far_transfer_predictions(text: str, where: str | Path = PREDICTIONS) -> dict[str, Any]:
    """The block of a predictions file's ``text``: its kinds among ``KINDS``, its keys there."""
    found = parse_predictions(text, where, kinds=KINDS)
    missing = [k for k in ("size", "solved", "learned", "references") if k not in found]
    if missing:
        raise ValueError(f"{where}: the json block lacks {missing}")
    return found


def load_far_transfer_predictions(folder: str | Path) -> dict[str, Any]:
    """``folder/predictions.md``'s block, checked against the folder's ``SHA256SUMS``."""
    text = verified_bytes(folder, PREDICTIONS).decode("utf-8")
    return parse_far_transfer_predictions(text, Path(folder) / PREDICTIONS)


def moved_cell(cell: Mapping[str, str]) -> dict[str, str]:
    """A moved cell with its metric and its code's own grown condition filled in."""
    found = {"metric": "acc", **cell}
    if found["condition"] == WINDOW_GROWN:
        found["condition"] = grown_condition(found["pos"])
    return found


def _trained(results: dict[str, Any], dataset: str, pos: str) -> np.ndarray:
    """``(seeds, images)`` bool, seeds sorted: a trained cell's test images got right."""
    by_seed = correct_by_seed(results, f"{dataset}:{pos}", "test")
    return np.stack([by_seed[s] for s in sorted(by_seed)])


def _labels(references: References, cell: Mapping[str, str]) -> np.ndarray:
    """``(images,)`` labels of the images a moved cell was tested on: its reference's."""
    if cell["rendering"] not in references:
        raise ValueError(
            f"references hold no {cell['rendering']!r} rendering: {sorted(references)}"
        )
    return test_labels(references[cell["rendering"]], cell["dataset"], "test")


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """``(dataset, pos, rendering, size, condition, variant, seed)`` of a transfer.json row."""
    return (row["dataset"], row["pos"], row.get("rendering", "scaled"), row["size"],
            row["condition"], row.get("variant", "swin"), row["seed"])  # fmt: skip


def _moved_seeds(rows: Rows, cell: Mapping[str, str], size: int) -> list[int]:
    wanted = (cell["dataset"], cell["pos"], cell["rendering"], size, cell["condition"])
    return sorted(r["seed"] for r in rows if _row_key(r)[:5] == wanted)


def _common(a: Iterable[int], b: Iterable[int]) -> tuple[list[int], str]:
    """The seeds both sides have, and the note to print where either side has more."""
    a, b = set(a), set(b)
    common = sorted(a & b)
    return common, f" (on the {len(common)} seeds both have)" if a != b else ""


def _on(records: Rows, seeds: Sequence[int]) -> list[dict[str, Any]]:
    return [r for r in records if r["seed"] in seeds]


def learned_references(
    references: References, dataset: str, codes: Sequence[str], plan: Mapping[str, Any]
) -> dict[str, dict[str, tuple[int, int]]]:
    """``{rendering: {pos: (seeds reaching learned.threshold on test, seeds)}}`` for each code of
    ``codes`` with a reference in that rendering."""
    found: dict[str, dict[str, tuple[int, int]]] = {}
    for rendering, reference in references.items():
        trained = {r["pos"] for r in reference["runs"] if r["dataset"] == dataset}
        flags = {pos: solved_flags(_trained(reference, dataset, pos), plan["learned"]["threshold"])
                 for pos in codes if pos in trained}  # fmt: skip
        found[rendering] = {pos: (int(f.sum()), len(f)) for pos, f in flags.items()}
    return found


def learned_line(
    references: References, dataset: str, codes: Sequence[str], plan: Mapping[str, Any]
) -> str:
    """``"Trained at 48 px, seeds reaching 90 % ...: world abs 4/4, world rel 2/4 (not
    learned)."``: each reference's count, for the chapter's text."""
    need, parts = plan["learned"]["seeds"], []
    for rendering, by_pos in learned_references(references, dataset, codes, plan).items():
        parts += [f"{rendering} {pos} {k}/{n}{' (not learned)' * (k < need)}"
                  for pos, (k, n) in by_pos.items()]  # fmt: skip
    return (f"Trained at {plan['size']} px, seeds reaching {100 * plan['learned']['threshold']:g} "
            f"% test accuracy (learned: at least {need}): {', '.join(parts)}.")  # fmt: skip


def kind_gap(
    before: dict[str, Any], rows: Rows, references: References, kind: str,
    cells: list[dict[str, str]], size: int,
) -> tuple[Interval, str]:  # fmt: skip
    """The interval of a gap of ``kind`` (``lift-change``: ``cells = [cell]``; ``moved-gap``:
    ``[cell]``; ``code-gap``/``window-gain``: ``[a, b]``) and the note on the seeds it was read
    on (those both sides have)."""
    cell = cells[0]
    if kind == "lift-change":
        by_seed = correct_by_seed(before, f"{cell['dataset']}:{cell['pos']}", "test")
        seeds, note = _common(by_seed, _moved_seeds(rows, cell, size))
        labels = _labels(references, cell)
        first = np.stack([by_seed[s] for s in seeds])
        moved = moved_matrix(_on(rows, seeds), cell, size, len(labels))[1]
        before_labels = test_labels(before, cell["dataset"], "test")
        return lift_gap_interval(first, before_labels, moved, labels), note
    if kind == "moved-gap":
        reference = references[cell["rendering"]]
        by_seed = correct_by_seed(reference, f"{cell['dataset']}:{cell['pos']}", "test")
        seeds, note = _common(by_seed, _moved_seeds(rows, cell, size))
        paired = {
            **references,
            cell["rendering"]: {**reference, "runs": _on(reference["runs"], seeds)},
        }
        return moved_minus_reference(_on(rows, seeds), paired, cell, size), note
    a, b = cells
    seeds, note = _common(_moved_seeds(rows, a, size), _moved_seeds(rows, b, size))
    return code_gap(_on(rows, seeds), a, b, size, len(_labels(references, a))), note


def _split_note(
    before: dict[str, Any], cells: Sequence[Mapping[str, str]], threshold: float
) -> str:
    """``" (split cell: rel)"`` naming the codes whose 32-px seeds split into solved and not."""
    flags = {pos: solved_flags(_trained(before, cells[0]["dataset"], pos), threshold)
             for pos in dict.fromkeys(c["pos"] for c in cells)}  # fmt: skip
    split = [pos for pos, f in flags.items() if 0 < f.sum() < len(f)]
    return f" (split cell: {', '.join(split)})" if split else ""


def check_far_transfer_prediction(
    before: dict[str, Any], rows: Rows, references: References,
    prediction: Mapping[str, Any], plan: Mapping[str, Any],
) -> tuple[str, bool | None]:  # fmt: skip
    """``(what was measured, whether the prediction held)``; held is ``None`` (not readable) for
    a ``moved-gap`` whose reference did not learn, and the text names it with its count."""
    kind, size, threshold = prediction["kind"], plan["size"], plan["solved"]["threshold"]
    if kind in ("count", "moved-count"):
        if kind == "count":
            correct = _trained(before, *prediction["cell"].split(":", 1))
        else:
            cell = moved_cell(prediction["cell"])
            correct = moved_matrix(rows, cell, size, len(_labels(references, cell)))[1]
        k, n = int(solved_flags(correct, threshold).sum()), len(correct)
        (low, high), (lo, hi) = binomial_interval(k, n), prediction["expect"]
        return f"solved {k} of {n} (rate {low:.2f}-{high:.2f})", lo <= k <= hi
    cells = [moved_cell(prediction[k]) for k in (("cell",) if "cell" in prediction else ("a", "b"))]
    named = [(c["pos"], c["condition"]) for c in cells]
    if kind == "window-gain" and (named[0][0] != named[1][0] or named[0][1] == named[1][1]):
        raise ValueError(f"prediction {prediction['id']}: a window-gain reads one code under two "
                         f"conditions, got {named}")  # fmt: skip
    if kind == "moved-gap":
        cell, learned = cells[0], plan["learned"]
        reference = references[cell["rendering"]]
        flags = solved_flags(
            _trained(reference, cell["dataset"], cell["pos"]), learned["threshold"]
        )
        if flags.sum() < learned["seeds"]:
            return (f"not readable: {cell['pos']} trained at {size} px in {cell['rendering']} "
                    f"({plan['references'][cell['rendering']]}) learned in {int(flags.sum())} of "
                    f"{len(flags)} seeds, {learned['seeds']} needed"), None  # fmt: skip
    interval, note = kind_gap(before, rows, references, kind, cells, size)
    text = points(interval) + p_text(interval, prediction["expect"]) + note
    return text + _split_note(before, cells, threshold), meets(interval, prediction["expect"])


def _expected(prediction: Mapping[str, Any]) -> str:
    """``"2-4 seeds"``, or a gap's expectation in points (``"above 5 points"``)."""
    expect = prediction["expect"]
    if isinstance(expect, str):
        return f"{expect.split()[0]} {100 * threshold_of(expect):g} points"
    return "{}-{} seeds".format(*expect)


def far_transfer_predictions_table(
    before: dict[str, Any], rows: Rows, references: References,
    predictions: dict[str, Any], ids: Sequence[str] | None = None,
) -> str:  # fmt: skip
    """Markdown: id | prediction | expected | measured | held, for every prediction (or ``ids``):
    gaps in points with their 95 % interval, "not readable" where held is ``None``."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, held = check_far_transfer_prediction(before, rows, references, p, predictions)
        verdict = "not readable" if held is None else "yes" if held else "**no**"
        lines.append(f"| {p['id']} | {p['text']} | {_expected(p)} | {measured} | {verdict} |")
    return "\n".join(lines)


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
    return {"runs": _merge([run for r in results for run in r["runs"]], _run_key),
            "test_sets": test_sets}  # fmt: skip


def _run_key(run: Mapping[str, Any]) -> tuple[Any, ...]:
    return (run["dataset"], run["pos"], run.get("variant", "swin"), run["seed"])


def merge_rows(*transfers: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of several transfer.json records concatenated; a seed of a cell (dataset, pos,
    rendering, size, condition, variant) in two records is refused."""
    return _merge([row for t in transfers for row in t["rows"]], _row_key)
