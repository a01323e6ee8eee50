"""Predictions written before a run: the one parser of their files (``predictions.md``: prose
and one ``json`` block, "solved" rules and predictions), and chapter 5's checks of them.

A cell of an ablation is read split by split (chapters 5 and 6): accuracies with the two-stage
bootstrap (seeds *and* images); a cell whose seeds split into solved and unsolved is read as a
count (solved k of n, exact interval on the rate), its mean never read."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.evaluation import labels_from_text, unpack_bits
from companion.experiments.paper import markdown_table
from companion.experiments.results import read_text
from companion.experiments.stats import binomial_interval, fisher_exact, format_p

KINDS = ("count", "gap", "lift-gap", "count-gap")
TRANSFER_KINDS = ("count", "moved-count", "lift-change", "moved-gap", "code-gap", "window-gain")
PREDICTIONS = "predictions.md"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)
# "the control for I8", "the control for I8 and I9": the ids a count prediction is a control for.
_CONTROL_FOR = re.compile(r"control for ([A-Z]+\d+(?:(?:, | and )[A-Z]+\d+)*)")
#: JSON objects: a ``results.json`` as a chapter reads it, a predictions file's block (``Plan``),
#: and one prediction or one dataset's "solved" rule of it (``Entry``).
Results = dict[str, Any]
Plan = dict[str, Any]
Entry = dict[str, Any]
#: A planned reading's verdict as the predictions' tables print it (None: not readable).
VERDICT = {True: "yes", False: "**no**", None: "not readable"}


def load_predictions(folder: str | Path, kinds: Sequence[str] = KINDS) -> Plan:
    """The block of ``folder/predictions.md``, checked against the folder's ``SHA256SUMS``."""
    return parse_predictions(read_text(folder, PREDICTIONS), Path(folder) / PREDICTIONS, kinds)


def parse_predictions(
    text: str, where: str | Path = PREDICTIONS, kinds: Sequence[str] = KINDS
) -> Plan:
    """The one ``json`` block of a predictions file's ``text`` (``where`` names it in errors)."""
    blocks = _BLOCK.findall(text.replace("\r\n", "\n"))  # a CRLF copy reads the same
    if len(blocks) != 1:
        raise ValueError(f"{where} must hold exactly one ```json block, found {len(blocks)}")
    try:
        found = json.loads(blocks[0])
        entries = [(p["id"], p["kind"]) for p in found["predictions"]]
    except (ValueError, KeyError, TypeError) as exc:
        allowed = "an object whose 'predictions' hold an 'id' and a 'kind'"
        raise ValueError(f"{where}: the json block must be {allowed}, got {exc!r}") from None
    for pid, kind in entries:
        if kind not in kinds:
            raise ValueError(f"prediction {pid}: kind must be one of {tuple(kinds)}, got {kind!r}")
    return found


def parse_far_transfer_predictions(text: str, where: str | Path = PREDICTIONS) -> Plan:
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


def cell_of(run: Entry) -> str:
    """A run's cell: ``"dataset:pos"``, or ``"dataset:pos:variant"`` for a controlled variant."""
    variant = run.get("variant", "swin")
    return f"{run['dataset']}:{run['pos']}" + ("" if variant == "swin" else f":{variant}")


def pos_label(cell: str) -> str:
    """``"grid-cell:abs+rel"`` -> ``"abs+rel"`` (with its variant, if any)."""
    return cell.split(":", 1)[1]


def _runs(results: Results, cell: str) -> list[Entry]:
    runs = [r for r in results["runs"] if cell_of(r) == cell]
    if not runs:
        raise ValueError(f"cell {cell!r} has no runs in these results")
    return runs


def correct_by_seed(results: Results, cell: str, split: str) -> dict[int, np.ndarray]:
    """``{seed: (images,) bool}``: which test images of ``split`` each run of ``cell`` got right."""
    return {r["seed"]: unpack_bits(r["splits"][split]["correct"], r["splits"][split]["n"])
            for r in _runs(results, cell)}  # fmt: skip


def with_counts(results: Results, rows: Iterable[Entry]) -> Results:
    """``results``, each run with ``"table"``: ``{split: correct / total}`` of its row."""
    held = {(r["task"], r["code"], r["variant"], r["seed"], r["split"], r["bits_sha256"]):
            r["correct"] / r["total"] for r in rows}  # fmt: skip
    runs = []
    for run in results["runs"]:
        cell = (run["dataset"], run["pos"], run.get("variant", "swin"), run["seed"])
        found = {s: held.get((*cell, s, hashlib.sha256(bits["correct"].encode()).hexdigest()))
                 for s, bits in run["splits"].items()}  # fmt: skip
        runs.append({**run, "table": found})
    return {**results, "runs": runs}


def test_labels(results: Results, dataset: str, split: str) -> np.ndarray:
    """The labels of a test split, as kept once in the results."""
    return labels_from_text(results["test_sets"][dataset][split]["labels"])


def constant_answer(results: Results, dataset: str, split: str) -> float:
    """The constant answer's accuracy on the split's own images."""
    return float(results["test_sets"][dataset][split]["constant_answer"])


def solved_seeds(results: Results, cell: str, rule: Entry) -> dict[int, bool]:
    """``{seed: accuracy on rule["split"] >= rule["threshold"]}``, the accuracy the record
    table's ``correct / total`` (:func:`with_counts`), never the bits'."""
    found = {r["seed"]: r.get("table", {}).get(rule["split"]) for r in _runs(results, cell)}
    if None in found.values():
        raise ValueError(f"results: {cell!r} has no count from the record table (with_counts)")
    return {seed: bool(accuracy >= rule["threshold"]) for seed, accuracy in found.items()}


def is_split_cell(results: Results, cell: str, rule: Entry) -> bool:
    """Whether some seeds of ``cell`` solved by ``rule`` and some did not."""
    flags = solved_seeds(results, cell, rule).values()
    return 0 < sum(flags) < len(flags)


def meets(interval: Interval, expect: str) -> bool:
    """Whether ``interval`` lies where ``expect`` says: ``"above X"`` (its low end above X),
    ``"below X"`` (its high end below X) or ``"within X"`` (inside ``(-X, X)``)."""
    x, word = threshold_of(expect), expect.split()[0]
    if word == "within":
        return -x < interval.low and interval.high < x
    return interval.low > x if word == "above" else interval.high < x


def threshold_of(expect: str) -> float:
    """The number a gap's ``expect`` names (``"above -0.05"`` -> -0.05)."""
    word, value = expect.split()
    if word not in ("above", "below", "within"):
        raise ValueError(f"expect must be 'above X', 'below X' or 'within X', got {expect!r}")
    return float(value)


def in_points(expect: str) -> str:
    """``"above -0.05"`` -> ``"above -5 points"``."""
    return f"{expect.split()[0]} {100 * threshold_of(expect):g} points"


def points(interval: Interval, width: str | int = "") -> str:
    """``"+12.3 [+4.5, +20.1]"``: the estimate and its 95 % interval in points."""
    values = (100 * interval.estimate, 100 * interval.low, 100 * interval.high)
    return "{:+{w}.1f} [{:+{w}.1f}, {:+{w}.1f}]".format(*values, w=width)


def expected_text(prediction: Entry, as_points: bool = False) -> str:
    """A prediction's ``expect`` as its table prints it (a gap's in points if ``as_points``)."""
    expect = prediction["expect"]
    if isinstance(expect, str):
        return in_points(expect) if as_points else expect
    return "{}-{} seeds".format(*expect)


def p_text(interval: Interval, expect: str) -> str:
    """The bootstrap p-value (for "the gap is 0") beside a gap only where it tests what the
    prediction names, "above 0" or "below 0" (at its floor, as a bound)."""
    if expect.startswith("within") or threshold_of(expect) != 0.0:
        return ""
    return f" (against 0: {format_p(interval.p, interval.floor)})"


def chosen(predictions: Plan, ids: Sequence[str] | None) -> list[Entry]:
    """The predictions named by ``ids`` (all where None), in that order."""
    known = {p["id"]: p for p in predictions["predictions"]}
    unknown = [i for i in ids or () if i not in known]
    if unknown:
        raise ValueError(f"ids: {unknown} are not predictions; allowed: {sorted(known)}")
    return list(predictions["predictions"]) if ids is None else [known[i] for i in ids]


def failed_control(results: Results, predictions: Plan, prediction: Entry) -> Entry | None:
    """The failed positive control ``prediction`` rests on, else None. A comparison rests on a
    count prediction: a ``gap`` against another cell on the count on that cell, any prediction
    on a count whose text names it (``"... (the control for I8)"``). Where that control failed,
    the comparison is not readable, whatever its interval says."""
    against = prediction.get("against") if prediction["kind"] == "gap" else None
    for p in predictions["predictions"]:
        named = _CONTROL_FOR.search(p["text"]) if p["kind"] == "count" else None
        controls = re.findall(r"[A-Z]+\d+", named.group(1)) if named else []
        rests = p["kind"] == "count" and (p["cell"] == against or prediction["id"] in controls)
        if rests and not check_prediction(results, p, predictions["solved"])[1]:
            return p
    return None


def control_note(control: Entry) -> str:
    """``"not readable: abs failed its positive control I5"``."""
    return f"not readable: {pos_label(control['cell'])} failed its positive control {control['id']}"


def check_prediction(
    results: Results, prediction: Entry, solved: Plan, seeds: Sequence[int] | None = None
) -> tuple[str, bool]:
    """``(what was measured, whether it held)``, on every seed or on ``seeds``, by kind:

    * ``count``: ``cell`` solved in ``expect = [low, high]`` of its seeds (inclusive); planned
      over ``N`` seeds, ``k`` of ``n`` seeds read holds where ``k * N / n`` lies in the range;
    * ``gap``: ``cell`` minus ``against`` (another cell, paired on the seeds both have, or
      ``"constant"``: the constant answer on the same images) on ``split``, read with the
      two-stage bootstrap interval against ``expect`` (:func:`meets`);
    * ``lift-gap``: ``cell``'s lift over the constant answer on ``second`` minus on ``first``;
    * ``count-gap``: ``cell`` solved in more seeds than ``against``, Fisher's exact ``p < 0.05``.
    """
    kind, cell = prediction["kind"], prediction["cell"]
    rule = solved[parse_cell(cell)[0]]
    if kind == "count":
        every = solved_seeds(results, cell, rule)
        flags = [ok for seed, ok in every.items() if seeds is None or seed in seeds]
        k, n = sum(flags), len(flags)
        lo, hi = prediction["expect"]
        return f"solved {count_text(k, n)}", lo <= k * len(every) / n <= hi
    results = results if seeds is None else on_seeds(results, seeds)
    if kind == "count-gap":
        flags = list(solved_seeds(results, cell, rule).values())
        other = list(solved_seeds(results, prediction["against"], rule).values())
        ka, na, kb, nb = sum(flags), len(flags), sum(other), len(other)
        p = fisher_exact(ka, na, kb, nb)
        return f"{ka} of {na} against {kb} of {nb}, Fisher p = {p:.2g}", ka > kb and p < 0.05
    interval, expect = prediction_interval(results, prediction), prediction["expect"]
    return f"{interval}{p_text(interval, expect)}", meets(interval, expect)


def cells_read(prediction: Entry) -> list[str]:
    """The cells a prediction reads: its ``cell`` and any ``against`` cell."""
    against = prediction.get("against", "constant")
    return [prediction["cell"]] + ([] if against == "constant" else [against])


def _gap_matrices(
    results: Results, prediction: Entry, seeds: Sequence[int] | None
) -> tuple[list[int], list[np.ndarray], list[str]]:
    """The seeds a gap is read on (its cells' common ones, or ``seeds``), its arrays and splits."""
    if prediction["kind"] == "lift-gap":
        cells, splits = [prediction["cell"]] * 2, [prediction["first"], prediction["second"]]
    else:
        cells = cells_read(prediction)
        splits = [prediction["split"]] * len(cells)
    found = [correct_by_seed(results, c, s) for c, s in zip(cells, splits, strict=True)]
    common = sorted(set.intersection(*(set(f) for f in found)))
    if seeds is not None and (not seeds or set(seeds) - set(common)):
        raise ValueError(f"seeds must be some of {common} (the cells' common seeds), got {seeds}")
    common = common if seeds is None else sorted(seeds)
    return common, [np.stack([f[s] for s in common]) for f in found], splits


def prediction_interval(
    results: Results, prediction: Entry, seeds: Sequence[int] | None = None
) -> Interval:
    """The bootstrap interval of a gap or lift-gap, on its cells' common seeds or on ``seeds``."""
    dataset = parse_cell(prediction["cell"])[0]
    _, arrays, splits = _gap_matrices(results, prediction, seeds)
    labels = [test_labels(results, dataset, s) for s in splits]
    if prediction["kind"] == "lift-gap":
        return lift_gap_interval(arrays[0], labels[0], arrays[1], labels[1])
    if len(arrays) == 1:
        return gap_interval(arrays[0], labels=labels[0])
    return gap_interval(arrays[0], arrays[1])


def per_seed(results: Results, prediction: Entry) -> dict[int, float]:
    """``{seed: the statistic of a gap or lift-gap on that seed alone}`` (a fraction)."""
    dataset = parse_cell(prediction["cell"])[0]
    seeds, arrays, splits = _gap_matrices(results, prediction, None)
    pairs = zip(arrays, splits, strict=True)
    lifts = [a.mean(1) - constant_answer(results, dataset, s) for a, s in pairs]
    if prediction["kind"] == "lift-gap":
        values = lifts[1] - lifts[0]
    else:
        values = lifts[0] if len(arrays) == 1 else arrays[0].mean(1) - arrays[1].mean(1)
    return dict(zip(seeds, (float(v) for v in values), strict=True))


def split_cells(results: Results, prediction: Entry, solved: Plan) -> list[str]:
    """The cells a gap or lift-gap reads whose seeds split into solved and unsolved."""
    if prediction["kind"] not in ("gap", "lift-gap"):
        return []
    rule = solved[parse_cell(prediction["cell"])[0]]
    return [c for c in cells_read(prediction) if is_split_cell(results, c, rule)]


def on_seeds(results: Results, seeds: Sequence[int]) -> Results:
    """``results`` with only the runs of ``seeds``."""
    kept = set(seeds)
    return {**results, "runs": [r for r in results["runs"] if r["seed"] in kept]}


def cells_of(results: Results, dataset: str, variants: bool = True) -> list[str]:
    """The cells of ``dataset``: the main grid, then (if ``variants``) the controlled variants."""
    found = list(dict.fromkeys(cell_of(r) for r in results["runs"] if r["dataset"] == dataset))
    main = [c for c in found if c.count(":") == 1]
    return main + [c for c in found if c.count(":") == 2] if variants else main


def seed_matrix(results: Results, cell: str, split: str) -> tuple[list[int], np.ndarray]:
    """The seeds, sorted, and their ``(seeds, images)`` bool matrix of ``split``'s images."""
    by_seed = correct_by_seed(results, cell, split)
    seeds = sorted(by_seed)
    return seeds, np.stack([by_seed[s] for s in seeds])


def count_text(k: int, n: int, dash: str = "-") -> str:
    """``"3 of 5 (rate 0.15-0.95)"``: a count solved with its exact interval on the rate."""
    low, high = binomial_interval(k, n)
    return f"{k} of {n} (rate {low:.2f}{dash}{high:.2f})"


def accuracy_table(
    results: Results,
    dataset: str,
    splits: Sequence[str],
    rule: Entry,
    cells: Sequence[str] | None = None,
) -> str:
    """Markdown: per cell, its accuracy on each split with its interval, and solved k of n."""
    constants = {s: 100 * constant_answer(results, dataset, s) for s in splits}
    head = ["cell", *(f"`{s}` (constant answer {c:.1f})" for s, c in constants.items())]
    head.append(f"solved (`{rule['split']}` ≥ {100 * rule['threshold']:g} %)")
    rows = []
    for cell in cells or cells_of(results, dataset):
        flags = solved_seeds(results, cell, rule).values()
        k, n = sum(flags), len(flags)
        mark = " (split)" if 0 < k < n else ""
        entries = []
        for s in splits:
            i = gap_interval(seed_matrix(results, cell, s)[1])
            entries.append(f"{100 * i.estimate:.1f} [{100 * i.low:.1f}, {100 * i.high:.1f}]{mark}")
        rows.append((f"`{pos_label(cell)}`", *entries, count_text(k, n, "–")))
    note = (
        "*Accuracy (%), mean over seeds [95 % bootstrap interval over seeds and test images]; "
        "(split): some seeds solved, some did not, so read the count, not the mean.*"
    )
    return markdown_table(head, rows, note, align="l" * len(head)) + "\n"


def glance_entry(lift: np.ndarray, won: np.ndarray) -> str:
    """The mean lift of the seeds, or where they split, the count solved, their mean lift and each
    other seed's (seeds short of the mark need not agree with each other: never averaged)."""
    if won.all() or not won.any():
        return f"{lift.mean():+.1f}"
    solved = f"{int(won.sum())}/{len(won)} solved: {lift[won].mean():+.1f}"
    if len(won) - int(won.sum()) == 1:
        return f"{solved} · 1 other: {lift[~won][0]:+.1f}"
    return f"{solved} · others: " + ", ".join(f"{v:+.1f}" for v in lift[~won])


def seed_rows(
    seeds: Sequence[int], solved: Mapping[str, Collection[int]], values: Sequence[float], head: str
) -> list[str]:
    """A gap seed by seed: a ``seed`` line, whether each seed solved (a line per label of
    ``solved``) and the gap in points; ``head`` formats each line's name (``"  {:14}"``)."""
    rows = {"seed": [f"{s:>7}" for s in seeds]}
    for label, won in solved.items():
        rows[label] = [f"{'yes' if s in won else 'no':>7}" for s in seeds]
    rows["points"] = [f"{100 * v:+7.1f}" for v in values]
    return [head.format(name) + "".join(row) for name, row in rows.items()]
