"""Chapter 5's reading of an ablation, split by split, with intervals honest to the data.

Everything here reads a results file whose runs keep every test split image by image
(:mod:`companion.experiments.evaluation`). Accuracies and gaps come with the two-stage bootstrap
of :mod:`companion.experiments.bootstrap` (seeds *and* test images), "learned nothing" is the
constant answer measured on the same images, and a cell whose seeds split into solved and
unsolved is reported as a count (solved k of n, exact interval on the rate), its mean never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval, gap_interval, lift_gap_interval
from companion.experiments.predictions import correct_by_seed, solved_seeds, test_labels
from companion.experiments.stats import binomial_interval, format_p, holm_bounds


def cells_of(results: dict[str, Any], dataset: str, variants: bool = True) -> list[str]:
    """The cells of ``dataset`` as ``"dataset:pos[:variant]"``: the main grid, then (unless
    ``variants`` is False) the controlled variants."""
    found = []
    for r in results["runs"]:
        if r["dataset"] == dataset:
            variant = r.get("variant", "swin")
            suffix = "" if variant == "swin" else f":{variant}"
            found.append(f"{dataset}:{r['pos']}{suffix}")
    unique = list(dict.fromkeys(found))
    main = [c for c in unique if c.count(":") == 1]
    return main + [c for c in unique if c.count(":") == 2] if variants else main


def variant_pairs(results: dict[str, Any], dataset: str) -> list[tuple[str, str]]:
    """``(variant cell, the Swin cell it changes)`` for every controlled variant of ``dataset``."""
    return [(c, c.rsplit(":", 1)[0]) for c in cells_of(results, dataset) if c.count(":") == 2]


def beside_their_swin(results: dict[str, Any], dataset: str) -> list[str]:
    """The cells with a controlled variant, each Swin cell followed by its variants."""
    order: dict[str, list[str]] = {}
    for variant, swin in variant_pairs(results, dataset):
        order.setdefault(swin, []).append(variant)
    return [c for swin, variants in order.items() for c in (swin, *variants)]


def _label(cell: str) -> str:
    return cell.split(":", 1)[1]


def _matrix(results: dict[str, Any], cell: str, split: str) -> tuple[list[int], np.ndarray]:
    by_seed = correct_by_seed(results, cell, split)
    seeds = sorted(by_seed)
    return seeds, np.stack([by_seed[s] for s in seeds])


def constant_answer(results: dict[str, Any], dataset: str, split: str) -> float:
    """The constant answer's accuracy on the split's own images."""
    return float(results["test_sets"][dataset][split]["constant_answer"])


def solved(results: dict[str, Any], cell: str, rule: dict[str, Any]) -> tuple[int, int]:
    """``(k, n)``: seeds of ``cell`` whose accuracy on ``rule["split"]`` reaches
    ``rule["threshold"]``."""
    _, correct = _matrix(results, cell, rule["split"])
    return int((correct.mean(1) >= rule["threshold"]).sum()), len(correct)


def is_split_cell(results: dict[str, Any], cell: str, rule: dict[str, Any]) -> bool:
    """Whether some seeds solved and some did not."""
    k, n = solved(results, cell, rule)
    return 0 < k < n


def split_rows(
    results: dict[str, Any], dataset: str, split: str, cells: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows for :func:`companion.figures.training.plot_seed_dots`: each cell's accuracy per seed
    on ``split`` (``values``), with the bootstrap interval of the mean (``low``, ``high``)."""
    rows = []
    for cell in cells or cells_of(results, dataset):
        seeds, correct = _matrix(results, cell, split)
        interval = gap_interval(correct)
        _, pos, *variant = cell.split(":")
        rows.append(
            {
                "dataset": dataset, "pos": pos, "variant": variant[0] if variant else "swin",
                "split": split, "seeds": seeds, "values": correct.mean(1).tolist(),
                "n": len(seeds), "mean": interval.estimate, "low": interval.low,
                "high": interval.high,
            }
        )  # fmt: skip
    return rows


def accuracy_table(
    results: dict[str, Any],
    dataset: str,
    splits: Sequence[str],
    rule: dict[str, Any],
    cells: Sequence[str] | None = None,
) -> str:
    """Markdown: per cell, the mean accuracy on each split with its 95 % bootstrap interval
    (seeds and test images), then solved k of n by ``rule`` with the exact interval on the rate.
    A split cell's mean is marked "split": read its count, not its mean."""
    head = " | ".join(f"`{s}` (constant answer {100 * constant_answer(results, dataset, s):.1f})"
                      for s in splits)  # fmt: skip
    lines = [f"| cell | {head} | solved (`{rule['split']}` ≥ {100 * rule['threshold']:g} %) |"]
    lines.append("|---" * (len(splits) + 2) + "|")
    for cell in cells or cells_of(results, dataset):
        split_cell = is_split_cell(results, cell, rule)
        entries = []
        for s in splits:
            _, correct = _matrix(results, cell, s)
            i = gap_interval(correct)
            mark = " (split)" if split_cell else ""
            entries.append(f"{100 * i.estimate:.1f} [{100 * i.low:.1f}, {100 * i.high:.1f}]{mark}")
        k, n = solved(results, cell, rule)
        low, high = binomial_interval(k, n)
        count = f"{k} of {n} (rate {low:.2f}–{high:.2f})"
        lines.append(f"| `{_label(cell)}` | " + " | ".join(entries) + f" | {count} |")
    lines.append("")
    lines.append(
        "*Accuracy (%), mean over seeds [95 % bootstrap interval over seeds and test images]; "
        "(split): some seeds solved, some did not, so read the count, not the mean.*"
    )
    return "\n".join(lines) + "\n"


def _gap(results: dict[str, Any], a: str, b: str, split: str) -> Interval:
    dataset = a.split(":")[0]
    if b == "constant":
        _, correct = _matrix(results, a, split)
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
        name = f"{_label(a)} − {'constant answer' if b == 'constant' else _label(b)}"
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
        _, a = _matrix(results, cell, first)
        _, b = _matrix(results, cell, second)
        i = lift_gap_interval(
            a, test_labels(results, dataset, first), b, test_labels(results, dataset, second)
        )
        lines.append(
            f"{_label(cell):12} {100 * (a.mean() - c1):+6.1f}  {100 * (b.mean() - c2):+6.1f}  "
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
    entry is the count and each group's lift instead, ``9/10 solved: +69.9 · 1 other: +45.8``:
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
                seeds, correct = _matrix(results, cell, split)
                lift = 100 * (correct.mean(1) - constant_answer(results, dataset, split))
                flags = solved_seeds(results, cell, {dataset: rule})
                entries.append(glance_entry(lift, np.array([flags[s] for s in seeds])))
            lines.append(f"| `{dataset}` `{split}` | " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(
        "*Lift over the constant answer (points), mean over seeds, each split against the "
        "constant answer on its own images. Where a cell's seeds split, the count solved and "
        "each group's lift (solved: " + "; ".join(rules) + ").*"
    )
    return "\n".join(lines) + "\n"


def glance_entry(lift: np.ndarray, won: np.ndarray) -> str:
    """One entry of a glance table from each seed's lift in points ``(seeds,)`` and whether it
    solved ``(seeds,)`` bool: the mean lift (``"+69.9"``), or where the seeds split, the count
    solved and each group's lift (``"9/10 solved: +69.9 · 1 other: +45.8"``)."""
    if won.all() or not won.any():
        return f"{lift.mean():+.1f}"
    rest = len(won) - int(won.sum())
    return (
        f"{int(won.sum())}/{len(won)} solved: {lift[won].mean():+.1f} · "
        f"{rest} other{'s' if rest > 1 else ''}: {lift[~won].mean():+.1f}"
    )
