"""Chapter 6's planned reading: a moved model against a model trained at the new size.

A moved accuracy alone has no scale: 60 % after moving to 48 px is a small loss if training at
48 px reaches 65 %, a large one if it reaches 100 %. So every moved cell is read against its
**reference**, the same code trained at the new size on the same task drawn the same way (an
ordinary ablation run with ``--img-size`` and ``--rendering``), on the same test images:

    kept = (acc_moved - const) / (acc_reference - const)

the share of the reference's lift over the constant answer (``const``, the most frequent label's
share of those images) that the moved model keeps: 1 is as good as training at that size, 0 is
what an input-blind rule scores. Its interval is the two-stage bootstrap of
:mod:`companion.experiments.bootstrap` (:func:`~companion.experiments.bootstrap.kept_replicates`).

``results/<name>/predictions.md`` (committed before the run) holds the planned comparisons, of two
kinds (``KINDS``):

* ``kept``: one cell's kept share, ``expect`` ``"above X"`` / ``"below X"`` / ``"within X"`` read
  from its interval as chapter 5's predictions are (``predictions.meets``);
* ``kept-gap``: cell ``a``'s kept share minus cell ``b``'s (the two cells' images drawn
  independently in each replicate), ``expect`` as for ``kept``;
* ``reference``: the test accuracy of a cell's reference itself (a model trained at the new
  size), ``expect`` as for ``kept``.

A cell is ``{"dataset", "pos", "rendering", "condition", "metric"}`` at the predictions' ``size``;
``metric`` is ``"acc"`` (as moved) or ``"acc_finetuned"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import (
    Interval,
    gap_interval,
    kept_interval,
    kept_replicates,
)
from companion.experiments.evaluation import unpack_bits
from companion.experiments.predictions import (
    chosen,
    correct_by_seed,
    expected_text,
    load_predictions,
    meets,
    p_text,
    test_labels,
)
from companion.experiments.results import load_results

KINDS = ("kept", "kept-gap", "reference")
METRICS = ("acc", "acc_finetuned")


def load_transfer_predictions(folder: str | Path) -> dict[str, Any]:
    """``folder/predictions.md``'s block: ``{"size", "references", "predictions"}``;
    ``references`` maps each rendering to its reference ablation's folder name."""
    return load_predictions(folder, kinds=KINDS)


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


def kept_cell(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    cell: Mapping[str, str],
    size: int,
    seed: int = 0,
) -> tuple[float, np.ndarray]:
    """``(estimate, replicates)`` of a cell's kept share (:func:`kept_replicates`) against the
    reference of its rendering, on the reference's test images."""
    reference = references[cell["rendering"]]
    labels = test_labels(reference, cell["dataset"], "test")
    ref = correct_by_seed(reference, f"{cell['dataset']}:{cell['pos']}", "test")
    moved = moved_correct(
        rows, cell["dataset"], cell["pos"], cell["rendering"], size, cell["condition"],
        cell.get("metric", "acc"),
    )  # fmt: skip
    n = len(labels)
    return kept_replicates(_stack(moved, n), _stack(ref, n), labels, seed=seed)


def kept_share(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    cell: Mapping[str, str],
    size: int,
) -> Interval:
    """A cell's kept share with its 95 % interval."""
    estimate, values = kept_cell(rows, references, cell, size)
    return kept_interval(values, estimate)


def kept_gap(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    a: Mapping[str, str],
    b: Mapping[str, str],
    size: int,
) -> Interval:
    """Cell ``a``'s kept share minus cell ``b``'s, with its 95 % interval. The two are resampled
    independently (bootstrap streams 0 and 2): they are different runs, and in general on
    different images."""
    ea, va = kept_cell(rows, references, a, size, seed=0)
    eb, vb = kept_cell(rows, references, b, size, seed=2)
    both = ~(np.isnan(va) | np.isnan(vb))
    difference = np.where(both, va - vb, np.nan)
    return kept_interval(difference, ea - eb)


def reference_lift(references: Mapping[str, dict[str, Any]], cell: Mapping[str, str]) -> Interval:
    """A cell's reference accuracy minus the constant answer on the same images, with its 95 %
    two-stage bootstrap interval (:func:`~companion.experiments.bootstrap.gap_interval`)."""
    reference = references[cell["rendering"]]
    labels = test_labels(reference, cell["dataset"], "test")
    ref = correct_by_seed(reference, f"{cell['dataset']}:{cell['pos']}", "test")
    return gap_interval(_stack(ref, len(labels)), labels=labels)


def unlearned(references: Mapping[str, dict[str, Any]], cells: Sequence[Mapping[str, str]]) -> str:
    """Why no kept share can be read for ``cells``: each of their references whose lift over the
    constant answer is not above 0 (its interval reaches 0), with that lift (``""`` when every
    reference's lift is)."""
    notes = []
    for cell in cells:
        lift = reference_lift(references, cell)
        if lift.low <= 0:
            notes.append(
                f"{cell['dataset']}:{cell['pos']} ({cell['rendering']}) trained at the new size "
                f"is {100 * lift.estimate:+.1f} [{100 * lift.low:+.1f}, {100 * lift.high:+.1f}] "
                f"points from the constant answer"
            )
    return "; ".join(notes)


def check_transfer_prediction(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    prediction: dict[str, Any],
    size: int,
) -> tuple[str, bool | None]:
    """``(what was measured, whether the prediction held)`` for one planned comparison; held is
    ``None`` (not readable) when a reference it needs did not beat the constant answer: there is
    no lift to keep a share of, and the text says which."""
    if prediction["kind"] == "reference":
        cell = prediction["cell"]
        reference = references[cell["rendering"]]
        ref = correct_by_seed(reference, f"{cell['dataset']}:{cell['pos']}", "test")
        interval = gap_interval(_stack(ref, min(len(c) for c in ref.values())))
        return f"{interval} (accuracy)", meets(interval, prediction["expect"])
    cells = [prediction["cell"]] if prediction["kind"] == "kept" else [prediction[k] for k in "ab"]
    why = unlearned(references, cells)
    if why:
        return f"no reference lift: {why}", None
    try:
        if prediction["kind"] == "kept":
            interval = kept_share(rows, references, prediction["cell"], size)
        else:
            interval = kept_gap(rows, references, prediction["a"], prediction["b"], size)
    except ValueError as exc:  # the lift reaches 0 in too many of the kept share's replicates
        return f"no reference lift: {exc}", None
    return f"{interval}{p_text(interval, prediction['expect'])}", meets(
        interval, prediction["expect"]
    )


def transfer_predictions_table(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    predictions: dict[str, Any],
    ids: Sequence[str] | None = None,
) -> str:
    """A Markdown table: every planned comparison (or those in ``ids``), what it expected, what
    was measured (kept share, or a gap of kept shares, with its 95 % interval), whether it held
    ("not readable" where a reference it needs learned nothing)."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, held = check_transfer_prediction(rows, references, p, predictions["size"])
        verdict = "not readable" if held is None else "yes" if held else "**no**"
        lines.append(f"| {p['id']} | {p['text']} | {expected_text(p)} | {measured} | {verdict} |")
    return "\n".join(lines)


def reference_accuracy(reference: dict[str, Any], dataset: str, pos: str) -> float:
    """Mean test accuracy over the reference's seeds of ``dataset:pos``."""
    return float(
        np.mean([c.mean() for c in correct_by_seed(reference, f"{dataset}:{pos}", "test").values()])
    )


def kept_table(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    dataset: str,
    cells: Sequence[tuple[str, str]],
    size: int,
) -> str:
    """One line per ``(pos, condition)`` and rendering: the accuracy (%) as moved and after the
    fine-tune, the reference's, and the kept share with its 95 % interval, both metrics."""
    lines = [
        f"{dataset} at {size} px: accuracy (%) as moved, fine-tuned, of the reference;",
        "  kept share [95 %] as moved, fine-tuned",
    ]
    width = max(len(f"{p}:{c}") for p, c in cells)
    for rendering, reference in references.items():
        trained = {f"{r['dataset']}:{r['pos']}" for r in reference["runs"]}
        if not any(f"{dataset}:{pos}" in trained for pos, _ in cells):
            continue  # no reference of this rendering for this dataset
        lines.append(f"  {rendering}")
        for pos, condition in cells:
            if f"{dataset}:{pos}" not in trained:
                continue
            cell = {"dataset": dataset, "pos": pos, "rendering": rendering, "condition": condition}
            images = len(test_labels(reference, dataset, "test"))
            accs = [
                _stack(
                    moved_correct(rows, dataset, pos, rendering, size, condition, m), images
                ).mean()
                for m in METRICS
            ]
            ref = reference_accuracy(reference, dataset, pos)
            text = "no reference lift to keep a share of"
            if not unlearned(references, [cell]):  # else its lift's interval reaches 0
                try:
                    shares = [
                        kept_share(rows, references, {**cell, "metric": m}, size) for m in METRICS
                    ]
                    text = "  ".join(
                        f"{s.estimate:5.2f} [{s.low:5.2f}, {s.high:5.2f}]" for s in shares
                    )
                except ValueError:  # ... in too many of the kept share's own replicates
                    pass
            lines.append(
                f"    {pos + ':' + condition:<{width}} {100 * accs[0]:5.1f} {100 * accs[1]:5.1f} "
                f"{100 * ref:5.1f}   {text}"
            )
    return "\n".join(lines)


def reference_seeds(reference: dict[str, Any], dataset: str) -> str:
    """One line per code of a reference ablation on ``dataset``: its test accuracy (%) per seed,
    the numbers a mean hides when some seeds learn and others do not."""
    by_pos: dict[str, list[tuple[int, float]]] = {}
    for r in reference["runs"]:
        if r["dataset"] == dataset:
            by_pos.setdefault(r["pos"], []).append((r["seed"], 100 * r["final"]["test_acc"]))
    return "\n".join(
        f"  {pos:<4} " + "  ".join(f"seed {s}: {acc:5.1f}" for s, acc in sorted(seeds))
        for pos, seeds in by_pos.items()
    )
