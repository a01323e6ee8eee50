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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.predictions import correct_by_seed, test_labels
from companion.experiments.resolution_transfer import WINDOW_GROWN, grown_condition
from companion.experiments.split_reading import glance_entry, seed_matrix
from companion.experiments.stats import format_p
from companion.experiments.transfer_results import moved_correct

Rows = Sequence[dict[str, Any]]
References = Mapping[str, dict[str, Any]]


def moved_matrix(
    rows: Sequence[dict[str, Any]], cell: Mapping[str, str], size: int, images: int
) -> tuple[list[int], np.ndarray]:
    """The seeds (sorted) and the ``(seeds, images)`` bool matrix of a moved cell: which of the
    first ``images`` test images each seed's moved model got right."""
    by_seed = moved_correct(
        rows, cell["dataset"], cell["pos"], cell["rendering"], size, cell["condition"],
        cell.get("metric", "acc"),
    )  # fmt: skip
    seeds = sorted(by_seed)
    short = min(len(by_seed[s]) for s in seeds)
    if short < images:
        raise ValueError(
            f"images must be at most the {short} the moved runs were tested on, got {images}"
        )
    return seeds, np.stack([by_seed[s][:images] for s in seeds])


def reference_matrix(
    references: Mapping[str, dict[str, Any]], cell: Mapping[str, str]
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The seeds (sorted), the ``(seeds, images)`` bool matrix and the ``(images,)`` test labels
    of the cell's reference (same dataset and pos, trained at the new size in its rendering)."""
    reference = _reference(references, cell["rendering"])
    by_seed = correct_by_seed(reference, f"{cell['dataset']}:{cell['pos']}", "test")
    seeds, labels = sorted(by_seed), test_labels(reference, cell["dataset"], "test")
    return seeds, np.stack([by_seed[s] for s in seeds]), labels


def moved_minus_reference(
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    cell: Mapping[str, str],
    size: int,
) -> Interval:
    """Moved accuracy − reference accuracy, paired by seed and test image."""
    seeds, reference, labels = reference_matrix(references, cell)
    moved_seeds, moved = moved_matrix(rows, cell, size, len(labels))
    _check_seeds("moved", moved_seeds, "reference", seeds)
    return gap_interval(moved, reference)


def code_gap(
    rows: Sequence[dict[str, Any]],
    a: Mapping[str, str],
    b: Mapping[str, str],
    size: int,
    images: int,
) -> Interval:
    """Moved cell ``a``'s accuracy − moved cell ``b``'s (two codes, or two conditions of one code),
    paired by seed and by the first ``images`` test images: the cells must share dataset and
    rendering (the same test images) and seeds."""
    for key in ("dataset", "rendering"):
        if a[key] != b[key]:
            raise ValueError(
                f"a and b must share the {key} (the same test images), got "
                f"{a[key]!r} and {b[key]!r}"
            )
    seeds_a, moved_a = moved_matrix(rows, a, size, images)
    seeds_b, moved_b = moved_matrix(rows, b, size, images)
    _check_seeds("a", seeds_a, "b", seeds_b)
    return gap_interval(moved_a, moved_b)


def points(interval: Interval, p_against_zero: bool = False) -> str:
    """``"+12.3 [+4.5, +20.1]"``: the estimate and its 95 % interval in points; with
    ``p_against_zero``, the bootstrap p-value of "the gap is 0" after it (``" (p = 0.012)"``, or
    the bound ``" (p < 0.00025)"`` at its floor)."""
    text = f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"
    return f"{text} ({format_p(interval.p, interval.floor)})" if p_against_zero else text


def solved_flags(correct: np.ndarray, threshold: float) -> np.ndarray:
    """``(seeds,)`` bool: whether each seed's accuracy on a ``(seeds, images)`` matrix reaches
    ``threshold`` (a fraction)."""
    return np.asarray(correct).mean(1) >= threshold


def learned_seeds(
    reference: dict[str, Any], dataset: str, pos: str, threshold: float
) -> tuple[list[int], list[int]]:
    """``(learned, every)``: the seeds of a reference cell reaching ``threshold`` test accuracy,
    and all its seeds, sorted."""
    by_seed = correct_by_seed(reference, f"{dataset}:{pos}", "test")
    return [s for s in sorted(by_seed) if by_seed[s].mean() >= threshold], sorted(by_seed)


def transfer_glance(
    before: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    references: Mapping[str, dict[str, Any]],
    dataset: str,
    codes: Sequence[str],
    size: int,
    renderings: Sequence[str],
    conditions: Sequence[str],
    threshold: float,
) -> str:
    """Markdown: each code's lift over the constant answer in points (mean over seeds) trained at
    32 px (``before``: the 32-px ablation's results.json), moved to ``size`` px under each of
    ``conditions`` in each rendering, as moved and fine-tuned ("ft"), and trained at ``size`` px
    ("ref", "—" where no reference of the code was trained). ``"window-grown"`` is read as each
    code's own grown condition (:func:`grown_condition`: a bias table resized geometrically).
    Where a cell's seeds split by ``threshold``, the entry is the count solved and each group's
    lift, as :func:`companion.experiments.split_reading.encoding_glance` writes it."""
    head = ["code", "32 px"]
    for rendering in renderings:
        for condition in conditions:
            short = condition.removeprefix("window-")
            head += [f"{rendering}, {short}", f"{rendering}, {short}, ft"]
        head.append(f"{rendering}, ref")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    before_labels = test_labels(before, dataset, "test")
    for pos in codes:
        trained = seed_matrix(before, f"{dataset}:{pos}", "test")[1]
        at_32 = solved_flags(trained, threshold)
        entries = [f"`{pos}`", _entry(trained, before_labels, threshold)]
        for rendering in renderings:
            labels = moved_labels(references, {"dataset": dataset, "rendering": rendering})
            base = {"dataset": dataset, "pos": pos, "rendering": rendering}
            for condition in conditions:
                name = grown_condition(pos) if condition == WINDOW_GROWN else condition
                for metric in ("acc", "acc_finetuned"):
                    cell = {**base, "condition": name, "metric": metric}
                    moved = moved_matrix(rows, cell, size, len(labels))[1]
                    entries.append(_entry(moved, labels, threshold, at_32))
            if (dataset, pos) in {(r["dataset"], r["pos"]) for r in references[rendering]["runs"]}:
                entries.append(_entry(reference_matrix(references, base)[1], labels, threshold))
            else:
                entries.append("—")
        lines.append("| " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(
        f"*`{dataset}`: lift over the constant answer (points), mean over seeds, each column on "
        f"its own test images: trained at 32 px; moved to {size} px with the window kept or grown "
        f"(a bias table resized geometrically), as moved and after the short fine-tune (ft); "
        f"trained at {size} px (ref, — where none was). Where a cell's seeds split, the count "
        f"solved (accuracy ≥ {100 * threshold:g} %), their mean lift and each other seed's; a "
        f"code whose 32-px seeds split is read in two groups, those that solved at 32 px and "
        f"those that did not.*"
    )
    return "\n".join(lines) + "\n"


def _entry(
    correct: np.ndarray, labels: np.ndarray, threshold: float, at_32: np.ndarray | None = None
) -> str:
    """A glance entry: the mean lift in points where the seeds agree; where they split, the count
    solved, the solved seeds' mean and each other seed's lift (seeds short of the mark need not
    agree with each other). ``at_32`` ``(seeds,)`` bool: whether each seed solved at 32 px; where
    it splits, each group is its own entry (a moved model of a seed that never solved had
    nothing to keep)."""
    if at_32 is not None and 0 < at_32.sum() < len(at_32):
        groups = [(at_32, "solved"), (~at_32, "not")]
        parts = [(int(g.sum()), name, _entry(correct[g], labels, threshold)) for g, name in groups]
        return " · ".join(f"{k} {name} at 32 px: " + (f"({e})" if " · " in e else e)
                          for k, name, e in parts)  # fmt: skip
    lift = 100 * (correct.mean(1) - np.bincount(labels).max() / len(labels))
    return glance_entry(lift, solved_flags(correct, threshold))


def _reference(references: Mapping[str, dict[str, Any]], rendering: str) -> dict[str, Any]:
    if rendering not in references:
        raise ValueError(
            f"references hold no reference in the {rendering!r} rendering; they "
            f"hold {sorted(references)}"
        )
    return references[rendering]


def moved_labels(references: References, cell: Mapping[str, str]) -> np.ndarray:
    """The ``(images,)`` labels of the test images a moved ``cell`` (its ``dataset`` drawn in its
    ``rendering``) was tested on: its reference's."""
    dataset, rendering = cell["dataset"], cell["rendering"]
    reference = _reference(references, rendering)
    if dataset not in reference["test_sets"]:
        raise ValueError(
            f"the {rendering!r} reference has no {dataset!r} test set to read the "
            f"moved models' labels from"
        )
    return test_labels(reference, dataset, "test")


def _check_seeds(name_a: str, seeds_a: list[int], name_b: str, seeds_b: list[int]) -> None:
    if seeds_a != seeds_b:
        raise ValueError(
            f"{name_a} and {name_b} must hold the same seeds (paired by seed), got "
            f"{seeds_a} and {seeds_b}"
        )


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
        labels = moved_labels(references, cell)
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
    return code_gap(_on(rows, seeds), a, b, size, len(moved_labels(references, a))), note


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


def split_note(before: dict[str, Any], cells: Sequence[Mapping[str, str]], threshold: float) -> str:
    """``" (split cell: rel)"`` naming the codes whose 32-px seeds split into solved and not."""
    dataset = cells[0]["dataset"]
    flags = {pos: solved_flags(seed_matrix(before, f"{dataset}:{pos}", "test")[1], threshold)
             for pos in dict.fromkeys(c["pos"] for c in cells)}  # fmt: skip
    split = [pos for pos, f in flags.items() if 0 < f.sum() < len(f)]
    return f" (split cell: {', '.join(split)})" if split else ""
