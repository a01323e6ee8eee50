"""Chapter 5's reader: its ablations read split by split, and the predictions committed before
each run checked by the rules fixed with them. The chapter imports all it reads from here (names
imported ``as`` themselves are re-exported)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.data.tasks import PATCH
from companion.experiments.bootstrap import Interval, gap_interval
from companion.experiments.evaluation import load_split
from companion.experiments.paper import markdown_table
from companion.experiments.predictions import (
    VERDICT,
    Entry,
    Plan,
    Results,
    cell_of,
    cells_of,
    cells_read,
    check_prediction,
    chosen,
    constant_answer,
    control_note,
    expected_text,
    failed_control,
    glance_entry,
    in_points,
    is_split_cell,
    meets,
    on_seeds,
    parse_cell,
    per_seed,
    points,
    pos_label,
    prediction_interval,
    seed_matrix,
    seed_rows,
    solved_seeds,
    split_cells,
    with_counts,
)
from companion.experiments.predictions import accuracy_table as accuracy_table
from companion.experiments.predictions import load_predictions as load_predictions
from companion.experiments.records import check_against_table, load_table, results_tree
from companion.experiments.results import describe_run as describe_run
from companion.experiments.results import find_results as find_results
from companion.experiments.results import load_bias_tables as load_bias_tables
from companion.experiments.results import load_curves as load_curves
from companion.experiments.results import load_results as results_json
from companion.experiments.stats import format_p, holm_bounds
from companion.experiments.stats import ring_null as ring_null


def load_results(folder: str | Path) -> Results:
    """``folder``'s ``results.json``, verified, with its counts from the record table."""
    results = results_json(folder)
    check_against_table(folder, results)
    return with_counts(results, load_table(results_tree(folder)))


def variant_pairs(results: Results, dataset: str) -> list[tuple[str, str]]:
    """``(variant cell, the Swin cell it changes)`` for every controlled variant of ``dataset``."""
    return [(c, c.rsplit(":", 1)[0]) for c in cells_of(results, dataset) if c.count(":") == 2]


def beside_their_swin(results: Results, dataset: str) -> list[str]:
    """The cells with a controlled variant, each Swin cell followed by its variants."""
    order: dict[str, list[str]] = {}
    for variant, swin in variant_pairs(results, dataset):
        order.setdefault(swin, []).append(variant)
    return [c for swin, variants in order.items() for c in (swin, *variants)]


def split_rows(
    results: Results, dataset: str, split: str, cells: Sequence[str] | None = None
) -> list[Entry]:
    """Rows for ``plot_seed_dots``: each cell's accuracy per seed, and its bootstrap interval."""
    rows = []
    for cell in cells or cells_of(results, dataset):
        seeds, correct = seed_matrix(results, cell, split)
        i = gap_interval(correct)
        _, pos, variant = parse_cell(cell)
        rows.append({"dataset": dataset, "pos": pos, "variant": variant, "split": split,
                     "seeds": seeds, "values": correct.mean(1).tolist(), "n": len(seeds),
                     "mean": i.estimate, "low": i.low, "high": i.high})  # fmt: skip
    return rows


def gaps_lines(results: Results, pairs: Sequence[tuple[str, str]], split: str, rule: Entry) -> str:
    """Per ``(a, b)`` (``b`` a cell or ``"constant"``): the exploratory gap on ``split``, its 95 %
    bootstrap interval and p Holm-adjusted over the intervals printed; a split cell gets none."""
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
        lines.append(f"{name:{width}} {points(interval, 6)}  {shown}{' *' if p < 0.05 else ''}")
    return "\n".join(lines)


def lift_lines(results: Results, dataset: str, first: str, second: str, cells: list[str]) -> str:
    """Per cell: its lift over each split's constant answer, and the change with its interval."""
    lines = [f"lift over the constant answer (points): `{first}`, `{second}`, and the change "
             "[95 % bootstrap interval]"]  # fmt: skip
    constants = {s: constant_answer(results, dataset, s) for s in (first, second)}
    for cell in cells:
        a, b = (100 * (seed_matrix(results, cell, s)[1].mean() - c) for s, c in constants.items())
        lift = {"kind": "lift-gap", "cell": cell, "first": first, "second": second}
        change = points(prediction_interval(results, lift), 6)
        lines.append(f"{pos_label(cell):12} {a:+6.1f}  {b:+6.1f}  change {change}")
    return "\n".join(lines)


def encoding_glance(
    sections: Sequence[tuple[Results, str, Sequence[str], Entry]],
    pos: Sequence[str] = ("none", "abs", "rel", "abs+rel"),
) -> str:
    """Markdown: each encoding's lift over the constant answer on each section's splits."""
    rows, rules = [], []
    for results, dataset, splits, rule in sections:
        rules.append(f"`{dataset}`: `{rule['split']}` ≥ {100 * rule['threshold']:g} %")
        for split in splits:
            entries = []
            for cell in (f"{dataset}:{p}" for p in pos):
                seeds, correct = seed_matrix(results, cell, split)
                lift = 100 * (correct.mean(1) - constant_answer(results, dataset, split))
                flags = solved_seeds(results, cell, rule)
                entries.append(glance_entry(lift, np.array([flags[s] for s in seeds])))
            rows.append((f"`{dataset}` `{split}`", *entries))
    note = (
        "*Lift over the constant answer (points), mean over seeds, each split against the "
        "constant answer on its own images. Where a cell's seeds split, the count solved and "
        "the solved seeds' mean lift and each other seed's (solved: " + "; ".join(rules) + ").*"
    )
    head = ["task, split", *(f"`{p}`" for p in pos)]
    return markdown_table(head, rows, note, align="l" * len(head)) + "\n"


def predictions_list(predictions: Plan, ids: Sequence[str] | None = None) -> str:
    """A Markdown table of the predictions as written (before any result): id, text, expected."""
    rows = [(p["id"], p["text"], expected_text(p)) for p in chosen(predictions, ids)]
    return markdown_table(["id", "prediction", "expected"], rows, align="lll")


def predictions_table(results: Results, predictions: Plan, ids: Sequence[str] | None = None) -> str:
    """Markdown: each prediction (of ``ids``), what it expected, what was measured, if it held."""
    rows = []
    for p in chosen(predictions, ids):
        rows.append((p["id"], p["text"], expected_text(p), *_measured(results, predictions, p)))
    return markdown_table(["id", "prediction", "expected", "measured", "held"], rows, align="lllll")


def _measured(
    results: Results, predictions: Plan, p: Entry, seeds: Sequence[int] | None = None
) -> tuple[str, str]:
    measured, held = check_prediction(results, p, predictions["solved"], seeds)
    results = results if seeds is None else on_seeds(results, seeds)
    split = split_cells(results, p, predictions["solved"])
    if split:
        measured += f" (split cell: {', '.join(map(pos_label, split))})"
    control = failed_control(results, predictions, p)
    if control is not None:
        return f"{control_note(control)}; {measured}", VERDICT[None]
    return measured, VERDICT[held]


@dataclass(frozen=True)
class Known:
    """Seeds ``seeds`` of ``cells``: equal to the runs committed at ``commit``, before the plan."""

    commit: str
    seeds: tuple[int, ...]
    cells: tuple[str, ...]

    def blind(self, results: Results, cells: Sequence[str]) -> list[int]:
        """The seeds every one of ``cells`` ran on and none of them had in the earlier run."""
        ran = [{r["seed"] for r in results["runs"] if cell_of(r) == c} for c in cells]
        known = self.seeds if set(cells) & set(self.cells) else ()
        return sorted(set.intersection(*ran) - set(known))


#: The earlier runs chapter 5's predictions were written after: the 5-seed grid at 59772f9, its
#: four encodings on both tasks and six variants (not the three positive controls, new in the
#: plan). ``tests/test_known_seeds.py`` finds exactly these runs again, from the git history.
KNOWN_BEFORE = {
    "cpu-ablation": Known("59772f9", (0, 1, 2, 3, 4), tuple(
        [f"{d}:{p}" for d in ("grid-cell", "relation") for p in ("none", "abs", "rel", "abs+rel")]
        + [f"grid-cell:{c}" for c in ("none:torus", "rel:torus", "rel:no-shift",
                                      "rel:abs-offset-bias")]
        + ["relation:none:pool-merge", "relation:rel:pool-merge"])),
}  # fmt: skip


def blind_predictions_table(results: Results, predictions: Plan, known: Known) -> str:
    """Markdown: every prediction read on all seeds and, by the same rules, on the seeds its
    cells ran on that the predictions did not know."""
    rows = []
    for p in predictions["predictions"]:
        read = [*_measured(results, predictions, p)]
        blind = known.blind(results, cells_read(p))
        if blind:
            measured, verdict = _measured(results, predictions, p, blind)
            span = ", ".join(map(str, blind))
            if len(blind) > 2 and blind == list(range(blind[0], blind[-1] + 1)):
                span = f"{blind[0]}–{blind[-1]}"
            read += [f"seeds {span}: {measured}", verdict]
        else:
            read += ["none: every seed was known", "—"]
        rows.append((p["id"], expected_text(p), *read))
    head = ["id", "expected", "all seeds", "held", "seeds the predictions did not know", "held"]
    return markdown_table(head, rows, align="l" * len(head))


def split_seed_readings(results: Results, predictions: Plan) -> str:
    """For every gap or lift-gap prediction that reads a split cell: its statistic
    seed by seed (only where the cell it is read against solved: a baseline that did not learn
    is none), the planned reading over every seed ("not readable" where its positive control
    failed), then the same reading on the seeds where every cell it reads solved (exploratory:
    no prediction named it). Points throughout."""
    solved, blocks = predictions["solved"], []
    for p in predictions["predictions"]:
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
        if p["kind"] == "lift-gap":
            statistic = (f"change in lift over the constant answer, `{p['second']}` minus "
                         f"`{p['first']}`")  # fmt: skip
        else:
            other = "the constant answer" if p["against"] == "constant" else pos_label(p["against"])
            statistic = f"{pos_label(p['cell'])} minus {other} on `{p['split']}`"
        lines.append(f"    {statistic}, per seed{where} (points):")
        won = {f"{pos_label(c)} solved": [s for s in f if f[s]] for c, f in flags.items()}
        lines += seed_rows(seeds, won, [values[s] for s in seeds], "    {:18}")
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
            lines.append(f"    {what:42} {points(i, 6)}  {in_points(p['expect'])}: {verdict}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or "no gap prediction here reads a split cell"


Placement = tuple[tuple[int, int], tuple[int, int]]


def placements(dataset: str, split: str, n: int) -> tuple[np.ndarray, list[Placement]]:
    """Each test image's placement index and the placements, sorted, each ``(A, B)`` in patches."""
    data = load_split(dataset, split, n, data_seed=0)  # the test sets every run was read on
    cells = (data.meta["centres"] // PATCH).long().tolist()  # (n, 2 objects, 2)
    found = [((a[0], a[1]), (b[0], b[1])) for a, b in cells]
    keys = sorted(set(found))
    return np.array([keys.index(f) for f in found]), keys


def pair_line(key: Placement) -> str:
    """``"row 2"`` or ``"column 5"``: the line the pair lies along."""
    (ra, ca), (rb, _) = key
    return f"row {ra}" if ra == rb else f"column {ca}"


def _counts(
    results: Results, cell: str, split: str, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds, placements)`` right answers and ``(placements,)`` images of each placement."""
    k = int(ids.max()) + 1
    correct = seed_matrix(results, cell, split)[1].astype(float)
    hits = np.stack([np.bincount(ids, weights=row, minlength=k) for row in correct])
    return hits, np.bincount(ids, minlength=k).astype(float)


def placement_interval(
    results: Results,
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
    n = len(read[0][2])  # the seeds, shared by every term (one cell on two splits)

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
    results: Results, cells: Sequence[str], split: str, ids: np.ndarray, keys: list[Placement]
) -> str:
    """Markdown: per placement, its line, its images and each cell's accuracy (%, seeds' mean)."""
    head = [f"`{split}` placement (A → B)", "line", "images", *(f"`{pos_label(c)}`" for c in cells)]
    sizes = np.bincount(ids, minlength=len(keys))
    by_cell = [100 * np.divide(*_counts(results, c, split, ids)) for c in cells]
    rows = []
    for p, key in enumerate(keys):
        means = [f"{a[:, p].mean():.1f}" for a in by_cell]
        rows.append((f"{key[0]} → {key[1]}", pair_line(key), sizes[p], *means))
    return markdown_table(head, rows, align="l" * len(head)) + "\n"


def placement_readings(
    results: Results,
    predictions: Plan,
    ids: dict[str, np.ndarray],
    keys: dict[str, list[Placement]],
) -> str:
    """Text: the lines each split's pairs lie along, then every lift-gap prediction read by
    placements, points. A test split of ``far-relation-interior`` holds 1000 images but 16
    placements, each asking one question: a bootstrap over images is too narrow for a claim about
    positions, so this resamples seeds, then placements with all their images (image-weighted,
    each split's constant answer fixed at its measured value). A correction made after the run:
    the planned verdicts stand as printed; "not readable" where a positive control failed."""
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
        interval = Interval(est, low, high, p=1.0)
        control = failed_control(results, predictions, p)
        held = "yes" if meets(interval, p["expect"]) else "no"
        verdict = control_note(control) if control else f"{in_points(p['expect'])}: {held}"
        lines.append(f"  {p['id']}  {pos_label(cell):8} lift change {points(interval)}  {verdict}")
    return "\n".join(lines)
