"""Chapter 5's reader: its ablations read split by split, and the predictions committed before
each run checked by the rules fixed with them.

``results/<name>/predictions.md`` (one ``json`` block, read by
:func:`companion.experiments.predictions.load_predictions`) says what "solved" means per dataset
(a split and a threshold) and lists predictions, each of one kind:

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
both have (a controlled variant runs on fewer seeds than the Swin it changes). The bootstrap
p-value is for "the gap is 0", so it is printed only beside a prediction whose threshold is 0 (and
then says "against 0"), and at its floor as a bound (:func:`companion.experiments.stats.format_p`).
A gap or lift-gap that reads a cell whose seeds split is also read seed by seed and on the solved
seeds alone (:func:`split_seed_readings`). The exploratory gaps (:func:`gaps_lines`) are
Holm-adjusted over the pairs printed; a split cell is read by its count, never its mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval

# The chapter imports everything it reads from here: the loaders and the cell tables below are
# re-exported (``name as name``), each defined once where chapters 5 and 6 share it.
from companion.experiments.integrity import whole_folders
from companion.experiments.placements import placement_readings as placement_readings
from companion.experiments.placements import placement_table as placement_table
from companion.experiments.placements import placements as placements
from companion.experiments.predictions import (
    chosen,
    correct_by_seed,
    meets,
    p_text,
    parse_cell,
    solved_seeds,
    test_labels,
    threshold_of,
)
from companion.experiments.predictions import load_predictions as load_predictions
from companion.experiments.records import check_against_table
from companion.experiments.results import describe_run as describe_run
from companion.experiments.results import find_results as find_results
from companion.experiments.results import load_bias_tables as load_bias_tables
from companion.experiments.results import load_curves as load_curves
from companion.experiments.results import load_results as results_json
from companion.experiments.split_reading import accuracy_table as accuracy_table
from companion.experiments.split_reading import beside_their_swin as beside_their_swin
from companion.experiments.split_reading import cells_of as cells_of
from companion.experiments.split_reading import constant_answer as constant_answer
from companion.experiments.split_reading import (
    glance_entry,
    is_split_cell,
    pos_label,
    seed_matrix,
)
from companion.experiments.split_reading import split_rows as split_rows
from companion.experiments.split_reading import variant_pairs as variant_pairs
from companion.experiments.stats import binomial_interval, fisher_exact, format_p, holm_bounds
from companion.experiments.stats import ring_null as ring_null


@whole_folders
def load_results(folder: str | Path) -> dict[str, Any]:
    """``folder``'s ``results.json``, verified against its ``SHA256SUMS`` and against the record
    table: every count and per-image bits' hash the readings below use is the table's."""
    results = results_json(folder)
    check_against_table(folder, results)
    return results


def _gap(results: dict[str, Any], a: str, b: str, split: str) -> Interval:
    dataset = a.split(":")[0]
    if b == "constant":
        _, correct = seed_matrix(results, a, split)
        return gap_interval(correct, labels=test_labels(results, dataset, split))
    ma, mb = correct_by_seed(results, a, split), correct_by_seed(results, b, split)
    seeds = sorted(set(ma) & set(mb))
    return gap_interval(np.stack([ma[s] for s in seeds]), np.stack([mb[s] for s in seeds]))


def gaps_lines(
    results: dict[str, Any],
    pairs: Sequence[tuple[str, str]],
    split: str,
    rule: dict[str, Any],
) -> str:
    """One line per ``(a, b)`` (cells, or ``b = "constant"``): the gap on ``split`` in points with
    its 95 % bootstrap interval and its p-value Holm-adjusted over the pairs printed (these are
    the exploratory comparisons: the planned ones are the predictions'). A gap with a split cell
    gets no interval: the counts say more than a mean of two groups. A p-value resting on
    bootstrap p-values at their floor is printed as the bound it is (``p_Holm < 0.0015``)."""
    found: list[tuple[str, Interval | None]] = []
    several = len({a.split(":")[0] for a, _ in pairs}) > 1  # then each line names its dataset
    for a, b in pairs:
        name = f"{pos_label(a)} − {'constant answer' if b == 'constant' else pos_label(b)}"
        name = f"{a.split(':')[0]}: {name}" if several else name
        involved = [a] + ([] if b == "constant" else [b])
        if any(is_split_cell(results, c, rule) for c in involved):
            found.append((name, None))
        else:
            found.append((name, _gap(results, a, b, split)))
    tested = [i for _, i in found if i is not None]
    adjusted = iter(holm_bounds([i.p for i in tested], [i.floor for i in tested]))
    lines = [f"gaps on `{split}` in points [95 % bootstrap interval], p Holm-adjusted over "
             f"the {len(tested)} intervals printed"]  # fmt: skip
    width = max(len(name) for name, _ in found)
    for name, interval in found:
        if interval is None:
            lines.append(f"{name:{width}} a split cell: read the counts")
            continue
        p, bound = next(adjusted)
        mark = " *" if p < 0.05 else ""
        shown = format_p(p, p if bound else 0.0, "p_Holm")  # a bound prints as "p_Holm < ..."
        lines.append(
            f"{name:{width}} {100 * interval.estimate:+6.1f} [{100 * interval.low:+6.1f}, "
            f"{100 * interval.high:+6.1f}]  {shown}{mark}"
        )
    return "\n".join(lines)


def lift_lines(
    results: dict[str, Any], dataset: str, first: str, second: str, cells: Sequence[str]
) -> str:
    """Per cell: its lift over the constant answer on ``first`` and on ``second`` (each split's
    own constant answer) and the change, with its 95 % bootstrap interval."""
    lines = [f"lift over the constant answer (points): `{first}`, `{second}`, and the change "
             "[95 % bootstrap interval]"]  # fmt: skip
    c1, c2 = constant_answer(results, dataset, first), constant_answer(results, dataset, second)
    for cell in cells:
        _, a = seed_matrix(results, cell, first)
        _, b = seed_matrix(results, cell, second)
        i = lift_gap_interval(
            a, test_labels(results, dataset, first), b, test_labels(results, dataset, second)
        )
        lines.append(
            f"{pos_label(cell):12} {100 * (a.mean() - c1):+6.1f}  {100 * (b.mean() - c2):+6.1f}  "
            f"change {100 * i.estimate:+6.1f} [{100 * i.low:+6.1f}, {100 * i.high:+6.1f}]"
        )
    return "\n".join(lines)


def encoding_glance(
    sections: Sequence[tuple[dict[str, Any], str, Sequence[str], dict[str, Any]]],
    pos: Sequence[str] = ("none", "abs", "rel", "abs+rel"),
) -> str:
    """Markdown: what each encoding of ``pos`` bought on every task and test split at once.

    ``sections``: ``(results, dataset, splits, rule)`` per task, ``rule`` its "solved" rule.
    One row per task and split, one column per encoding; each entry is the lift over the
    constant answer in points (mean over seeds, each split against the constant answer on its
    own images). Where the cell's seeds split into solved and unsolved by its task's rule, the
    entry is the count, the solved seeds' mean lift and each other seed's instead,
    ``9/10 solved: +69.9 · 1 other: +45.8``:
    a mean of the two groups would describe neither."""
    lines = ["| task, split | " + " | ".join(f"`{p}`" for p in pos) + " |"]
    lines.append("|---" * (len(pos) + 1) + "|")
    rules = []
    for results, dataset, splits, rule in sections:
        rules.append(f"`{dataset}`: `{rule['split']}` ≥ {100 * rule['threshold']:g} %")
        for split in splits:
            entries = []
            for p in pos:
                cell = f"{dataset}:{p}"
                seeds, correct = seed_matrix(results, cell, split)
                lift = 100 * (correct.mean(1) - constant_answer(results, dataset, split))
                flags = solved_seeds(results, cell, {dataset: rule})
                entries.append(glance_entry(lift, np.array([flags[s] for s in seeds])))
            lines.append(f"| `{dataset}` `{split}` | " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(
        "*Lift over the constant answer (points), mean over seeds, each split against the "
        "constant answer on its own images. Where a cell's seeds split, the count solved and "
        "the solved seeds' mean lift and each other seed's (solved: " + "; ".join(rules) + ").*"
    )
    return "\n".join(lines) + "\n"


def failed_control(
    results: dict[str, Any], predictions: dict[str, Any], prediction: dict[str, Any]
) -> str | None:
    """The id of the failed positive control of a gap's comparator, else None: the count
    prediction on the cell a ``gap`` is read against (that cell solves the task). A gap against
    a comparator whose control failed is not readable, whatever its interval says."""
    against = prediction.get("against")
    if prediction["kind"] != "gap" or against in (None, "constant"):
        return None
    for p in predictions["predictions"]:
        held = p["kind"] == "count" and p["cell"] == against
        if held and not check_prediction(results, p, predictions["solved"])[1]:
            return str(p["id"])
    return None


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
    interval = prediction_interval(results, prediction)
    return f"{interval}{p_text(interval, prediction['expect'])}", meets(
        interval, prediction["expect"]
    )


def _gap_cells(prediction: dict[str, Any]) -> list[str]:
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
        found = [correct_by_seed(results, c, prediction["split"]) for c in _gap_cells(prediction)]
    common = sorted(set.intersection(*(set(f) for f in found)))
    if seeds is not None:
        missing = sorted(set(seeds) - set(common))
        if missing or not seeds:
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

    def constant(split: str) -> float:
        labels = test_labels(results, dataset, split)
        return float(np.bincount(labels).max() / len(labels))

    if prediction["kind"] == "lift-gap":
        first, second = arrays[0].mean(1), arrays[1].mean(1)
        values = (second - constant(prediction["second"])) - (first - constant(prediction["first"]))
    elif len(arrays) == 1:
        values = arrays[0].mean(1) - constant(prediction["split"])
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
    found = []
    for cell in _gap_cells(prediction):
        flags = solved_seeds(results, cell, solved).values()
        if 0 < sum(flags) < len(flags):
            found.append(cell)
    return found


def expected_text(prediction: dict[str, Any]) -> str:
    expect = prediction["expect"]
    return expect if isinstance(expect, str) else "{}-{} seeds".format(*expect)


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
        split = split_cells(results, p, predictions["solved"])
        if split:
            measured += f" (split cell: {', '.join(c.split(':', 1)[1] for c in split)})"
        control = failed_control(results, predictions, p)
        if control is not None:
            comparator = p["against"].split(":", 1)[1]
            measured = (
                f"not readable: {comparator} failed its positive control {control}; {measured}"
            )
        verdict = "not readable" if control is not None else "yes" if held else "**no**"
        lines.append(f"| {p['id']} | {p['text']} | {expected_text(p)} | {measured} | {verdict} |")
    return "\n".join(lines)


def _statistic_name(prediction: dict[str, Any]) -> str:
    """What :func:`per_seed` measures, in words."""
    if prediction["kind"] == "lift-gap":
        first, second = prediction["first"], prediction["second"]
        return f"change in lift over the constant answer, `{second}` minus `{first}`"
    label = prediction["cell"].split(":", 1)[1]
    against = prediction["against"]
    other = "the constant answer" if against == "constant" else against.split(":", 1)[1]
    return f"{label} minus {other} on `{prediction['split']}`"


def _in_points(expect: str) -> str:
    """``"above -0.05"`` -> ``"above -5 points"``."""
    word = expect.split()[0]
    return f"{word} {100 * threshold_of(expect):g} points"


def split_seed_readings(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """For every gap or lift-gap prediction (of ``ids``) that reads a split cell (its seeds
    split into solved and unsolved by the predictions' rule): its statistic seed by seed, the
    planned reading over every seed, and the same reading on the seeds where every cell it
    reads solved the task (exploratory: no prediction named it). Points throughout."""
    solved = predictions["solved"]
    blocks = []
    for p in chosen(predictions, ids):
        split = split_cells(results, p, solved)
        if not split:
            continue
        values = per_seed(results, p)
        seeds = sorted(values)
        flags = {c: solved_seeds(results, c, solved) for c in _gap_cells(p)}
        rule = solved[parse_cell(p["cell"])[0]]
        kept = [s for s in seeds if all(f[s] for f in flags.values())]
        lines = [f"{p['id']}  {p['text']} (expected: {_in_points(p['expect'])})"]
        control = failed_control(results, predictions, p)
        if control is not None:
            comparator = p["against"].split(":", 1)[1]
            lines.append(f"    not readable: {comparator} failed its positive control {control}; "
                         f"only its solved seeds could be a baseline")  # fmt: skip
        for cell in split:
            k, n = sum(flags[cell].values()), len(flags[cell])
            lines.append(
                f"    {cell.split(':', 1)[1]} solved `{rule['split']}` in {k} of {n} seeds"
            )
        lines.append(f"    {_statistic_name(p)}, per seed (points):")
        lines.append("    " + f"{'seed':18}" + "".join(f"{s:>7}" for s in seeds))
        for cell, f in flags.items():
            name = f"{cell.split(':', 1)[1]} solved"
            lines.append("    " + f"{name:18}" + "".join(
                f"{'yes' if f[s] else 'no':>7}" for s in seeds))  # fmt: skip
        lines.append("    " + f"{'points':18}" + "".join(f"{100 * values[s]:+7.1f}" for s in seeds))
        for what, chosen_seeds in (
            (f"all {len(seeds)} seeds (the planned reading)", None),
            (f"the {len(kept)} solved seeds (exploratory)", kept),
        ):
            if chosen_seeds is not None and len(chosen_seeds) == 0:
                lines.append(f"    {what}: none")
                continue
            i = prediction_interval(results, p, chosen_seeds)
            verdict = "yes" if meets(i, p["expect"]) else "no"
            if control is not None and chosen_seeds is None:
                verdict = "not readable"
            lines.append(
                f"    {what:42} {100 * i.estimate:+6.1f} [{100 * i.low:+6.1f}, "
                f"{100 * i.high:+6.1f}]  {_in_points(p['expect'])}: {verdict}"
            )
        blocks.append("\n".join(lines))
    if not blocks:
        return "no gap prediction here reads a split cell"
    return "\n\n".join(blocks)
