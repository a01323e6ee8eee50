"""Chapter 5's reader: its ablations read split by split, and the predictions committed before
each run checked by the rules fixed with them (:mod:`companion.experiments.predictions`).

The chapter imports everything it reads from here (the names imported ``as`` themselves are
re-exported, each defined once where chapters 5 and 6 share it). A cell whose seeds split into
solved and unsolved is read by its count, never its mean; a planned gap that reads one is also
read seed by seed and on the solved seeds alone (:func:`split_seed_readings`).

**Placements.** Each test split of ``far-relation-interior`` holds 1000 images but only 16
placements (where A and B lie, in patches); every image of a placement asks the same question,
so a bootstrap over images treats 1000 draws as independent where there are 16: too narrow for a
claim about positions. :func:`placement_readings` resamples seeds, then placements (each with all
its images), image-weighted as the planned reading is; it was added after the run, beside the
planned reading (a bootstrap over seeds and images), and its verdicts are not the plan's. Every
``seen`` pair lies along an edge row or column of the shared stage-0 window (rows and columns
2-5), every ``unseen`` pair along one through its centre (3 or 4): the splits differ in more than
whether a position was seen (:func:`pair_line`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from companion.data.tasks import PATCH
from companion.experiments.bootstrap import Interval
from companion.experiments.evaluation import load_split
from companion.experiments.integrity import whole_folders
from companion.experiments.pilots import KNOWN_BEFORE as KNOWN_BEFORE
from companion.experiments.pilots import Known
from companion.experiments.predictions import (
    cells_read,
    check_prediction,
    chosen,
    control_note,
    failed_control,
    in_points,
    is_split_cell,
    meets,
    on_seeds,
    parse_cell,
    per_seed,
    pos_label,
    prediction_interval,
    solved_seeds,
    split_cells,
    with_counts,
)
from companion.experiments.predictions import constant_answer as constant_answer
from companion.experiments.predictions import load_predictions as load_predictions
from companion.experiments.records import check_against_table, load_table, results_tree
from companion.experiments.results import describe_run as describe_run
from companion.experiments.results import find_results as find_results
from companion.experiments.results import load_bias_tables as load_bias_tables
from companion.experiments.results import load_curves as load_curves
from companion.experiments.results import load_results as results_json
from companion.experiments.split_reading import accuracy_table as accuracy_table
from companion.experiments.split_reading import beside_their_swin as beside_their_swin
from companion.experiments.split_reading import cells_of as cells_of
from companion.experiments.split_reading import glance_entry, seed_matrix
from companion.experiments.split_reading import split_rows as split_rows
from companion.experiments.split_reading import variant_pairs as variant_pairs
from companion.experiments.stats import format_p, holm_bounds
from companion.experiments.stats import ring_null as ring_null


@whole_folders
def load_results(folder: str | Path) -> dict[str, Any]:
    """``folder``'s ``results.json``, verified against its ``SHA256SUMS`` and the record table,
    whose counts it carries (:func:`with_counts`): every count and bits' hash read below is its."""
    results = results_json(folder)
    check_against_table(folder, results)
    return with_counts(results, load_table(results_tree(folder)))


def _points(i: Interval) -> str:
    """``"+12.3 [ +8.0,  +16.1]"``: an interval of a fraction, in points."""
    return f"{100 * i.estimate:+6.1f} [{100 * i.low:+6.1f}, {100 * i.high:+6.1f}]"


def gaps_lines(
    results: dict[str, Any], pairs: Sequence[tuple[str, str]], split: str, rule: dict[str, Any]
) -> str:
    """One line per ``(a, b)`` (cells, or ``b = "constant"``): the gap on ``split`` in points with
    its 95 % bootstrap interval and its p-value Holm-adjusted over the pairs printed (these are
    the exploratory comparisons: the planned ones are the predictions'). A gap with a split cell
    gets no interval: the counts say more than a mean of two groups. A p-value resting on
    bootstrap p-values at their floor is printed as the bound it is (``p_Holm < 0.0015``)."""
    several = len({parse_cell(a)[0] for a, _ in pairs}) > 1  # then each line names its dataset
    found: list[tuple[str, Interval | None]] = []
    for a, b in pairs:
        name = f"{pos_label(a)} − {'constant answer' if b == 'constant' else pos_label(b)}"
        name = f"{parse_cell(a)[0]}: {name}" if several else name
        gap = {"kind": "gap", "cell": a, "against": b, "split": split}
        split_cell = any(is_split_cell(results, c, rule) for c in cells_read(gap))
        found.append((name, None if split_cell else prediction_interval(results, gap)))
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
        shown = format_p(p, p if bound else 0.0, "p_Holm")  # a bound prints as "p_Holm < ..."
        lines.append(f"{name:{width}} {_points(interval)}  {shown}{' *' if p < 0.05 else ''}")
    return "\n".join(lines)


def lift_lines(
    results: dict[str, Any], dataset: str, first: str, second: str, cells: Sequence[str]
) -> str:
    """Per cell: its lift over the constant answer on ``first`` and on ``second`` (each split's
    own constant answer) and the change, with its 95 % bootstrap interval."""
    lines = [f"lift over the constant answer (points): `{first}`, `{second}`, and the change "
             "[95 % bootstrap interval]"]  # fmt: skip
    constants = {s: constant_answer(results, dataset, s) for s in (first, second)}
    for cell in cells:
        a, b = (100 * (seed_matrix(results, cell, s)[1].mean() - c) for s, c in constants.items())
        lift = {"kind": "lift-gap", "cell": cell, "first": first, "second": second}
        change = _points(prediction_interval(results, lift))
        lines.append(f"{pos_label(cell):12} {a:+6.1f}  {b:+6.1f}  change {change}")
    return "\n".join(lines)


def encoding_glance(
    sections: Sequence[tuple[dict[str, Any], str, Sequence[str], dict[str, Any]]],
    pos: Sequence[str] = ("none", "abs", "rel", "abs+rel"),
) -> str:
    """Markdown: what each encoding of ``pos`` bought on every task and test split at once.

    ``sections``: ``(results, dataset, splits, rule)`` per task, ``rule`` its "solved" rule. One
    row per task and split, one column per encoding, each entry the lift over the constant
    answer (:func:`~companion.experiments.split_reading.glance_entry`: a split cell's seeds are
    counted, not averaged)."""
    lines = ["| task, split | " + " | ".join(f"`{p}`" for p in pos) + " |"]
    lines.append("|---" * (len(pos) + 1) + "|")
    rules = []
    for results, dataset, splits, rule in sections:
        rules.append(f"`{dataset}`: `{rule['split']}` ≥ {100 * rule['threshold']:g} %")
        for split in splits:
            entries = []
            for cell in (f"{dataset}:{p}" for p in pos):
                seeds, correct = seed_matrix(results, cell, split)
                lift = 100 * (correct.mean(1) - constant_answer(results, dataset, split))
                flags = solved_seeds(results, cell, rule)
                entries.append(glance_entry(lift, np.array([flags[s] for s in seeds])))
            lines.append(f"| `{dataset}` `{split}` | " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(
        "*Lift over the constant answer (points), mean over seeds, each split against the "
        "constant answer on its own images. Where a cell's seeds split, the count solved and "
        "the solved seeds' mean lift and each other seed's (solved: " + "; ".join(rules) + ").*"
    )
    return "\n".join(lines) + "\n"


def _expected(prediction: dict[str, Any]) -> str:
    expect = prediction["expect"]
    return expect if isinstance(expect, str) else "{}-{} seeds".format(*expect)


def predictions_list(predictions: dict[str, Any], ids: Sequence[str] | None = None) -> str:
    """A Markdown table of the predictions as written (before any result): id, text, expected."""
    lines = ["| id | prediction | expected |", "|---|---|---|"]
    lines += [f"| {p['id']} | {p['text']} | {_expected(p)} |" for p in chosen(predictions, ids)]
    return "\n".join(lines)


def predictions_table(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """A Markdown table: every prediction (or those in ``ids``), what it expected, what was
    measured, whether it held ("not readable" where its positive control failed)."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, verdict = _measured(results, predictions, p)
        lines.append(f"| {p['id']} | {p['text']} | {_expected(p)} | {measured} | {verdict} |")
    return "\n".join(lines)


def _measured(
    results: dict[str, Any], predictions: dict[str, Any], p: dict[str, Any],
    seeds: Sequence[int] | None = None,
) -> tuple[str, str]:  # fmt: skip
    """``(what was measured, verdict)`` of one prediction, on ``seeds`` or on all."""
    measured, held = check_prediction(results, p, predictions["solved"], seeds)
    results = results if seeds is None else on_seeds(results, seeds)
    split = split_cells(results, p, predictions["solved"])
    if split:
        measured += f" (split cell: {', '.join(map(pos_label, split))})"
    control = failed_control(results, predictions, p)
    if control is not None:
        return f"{control_note(control)}; {measured}", "not readable"
    return measured, "yes" if held else "**no**"


def blind_predictions_table(
    results: dict[str, Any], predictions: dict[str, Any], known: Known,
    ids: Sequence[str] | None = None,
) -> str:  # fmt: skip
    """Markdown: every prediction (of ``ids``) read on all seeds and on the seeds its cells ran
    on that the predictions did not know (:class:`Known`), by the same rules and thresholds (a
    count on fewer seeds read as the same share)."""
    lines = ["| id | expected | all seeds | held | seeds the predictions did not know | held |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for p in chosen(predictions, ids):
        read = [*_measured(results, predictions, p)]
        blind = known.blind(results, cells_read(p))
        if blind:
            measured, verdict = _measured(results, predictions, p, blind)
            read += [f"seeds {_span(blind)}: {measured}", verdict]
        else:
            read += ["none: every seed was known", "—"]
        lines.append(f"| {p['id']} | {_expected(p)} | " + " | ".join(read) + " |")
    return "\n".join(lines)


def _span(seeds: Sequence[int]) -> str:
    """``[5, 6, 7, 8, 9]`` -> ``"5–9"``; others joined by commas."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _statistic_name(prediction: dict[str, Any]) -> str:
    """What :func:`~companion.experiments.predictions.per_seed` measures, in words."""
    if prediction["kind"] == "lift-gap":
        return (f"change in lift over the constant answer, `{prediction['second']}` minus "
                f"`{prediction['first']}`")  # fmt: skip
    against = prediction["against"]
    other = "the constant answer" if against == "constant" else pos_label(against)
    return f"{pos_label(prediction['cell'])} minus {other} on `{prediction['split']}`"


def split_seed_readings(
    results: dict[str, Any], predictions: dict[str, Any], ids: Sequence[str] | None = None
) -> str:
    """For every gap or lift-gap prediction (of ``ids``) that reads a split cell (its seeds
    split into solved and unsolved by the predictions' rule): its statistic seed by seed (only
    on the seeds where the cell it is read against solved: a baseline that did not learn is
    none), the planned reading over every seed ("not readable" where its positive control
    failed), then the same reading on the seeds where every cell it reads solved the task
    (exploratory: no prediction named it). Points throughout."""
    solved, blocks = predictions["solved"], []
    for p in chosen(predictions, ids):
        split = split_cells(results, p, solved)
        if not split:
            continue
        values = per_seed(results, p)
        rule = solved[parse_cell(p["cell"])[0]]
        flags = {c: solved_seeds(results, c, rule) for c in cells_read(p)}
        baseline = p["against"] if len(flags) == 2 else None
        seeds = [s for s in sorted(values) if baseline is None or flags[baseline][s]]
        kept = [s for s in seeds if all(f[s] for f in flags.values())]
        control = failed_control(results, predictions, p)
        lines = [f"{p['id']}  {p['text']} (expected: {in_points(p['expect'])})"]
        lines += [f"    {control_note(control)}"] if control else []
        for cell in split:
            k, n = sum(flags[cell].values()), len(flags[cell])
            lines.append(f"    {pos_label(cell)} solved `{rule['split']}` in {k} of {n} seeds")
        where = "" if baseline is None else f" where {pos_label(baseline)} solved"
        lines.append(f"    {_statistic_name(p)}, per seed{where} (points):")
        rows = {"seed": [f"{s:>7}" for s in seeds]}
        for cell, f in flags.items():
            rows[f"{pos_label(cell)} solved"] = [f"{'yes' if f[s] else 'no':>7}" for s in seeds]
        rows["points"] = [f"{100 * values[s]:+7.1f}" for s in seeds]
        lines += [f"    {name:18}" + "".join(row) for name, row in rows.items()]
        few = "seed" if len(kept) == 1 else "seeds"
        solved_where = f"solved {few}" if len(flags) == 1 else f"{few} where both solved"
        readings = [(f"all {len(values)} seeds (the planned reading)", None),
                    (f"the {len(kept)} {solved_where} (exploratory)", kept)]  # fmt: skip
        for what, on in readings:
            if on == []:
                lines.append(f"    {what}: none")
                continue
            i = prediction_interval(results, p, on)
            verdict = "yes" if meets(i, p["expect"]) else "no"
            verdict = "not readable" if control and on is None else verdict
            lines.append(f"    {what:42} {_points(i)}  {in_points(p['expect'])}: {verdict}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or "no gap prediction here reads a split cell"


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
