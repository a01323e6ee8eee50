"""Reading a resolution-transfer record back, and the tables and gaps chapter 6 prints from it.

``results/<name>/transfer.json`` is written by
:mod:`companion.experiments.runs.resolution_experiment` (one row per run x rendering x size x
condition); read here: its mean ± std over seeds (:func:`transfer_summary`,
:func:`transfer_table`), the paired gaps between cells with their intervals (:func:`transfer_gap`,
:func:`window_gain_table`) and Holm's correction over the family of gaps a reader is shown
(:func:`holm_family`). :mod:`companion.experiments.results` reads the ablation's own records.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from companion.experiments.integrity import ResultsError, is_sealed, verified_json
from companion.experiments.resolution_transfer import (
    WINDOW_GROWN,
    WINDOW_KEPT,
    condition_name,
    grown_condition,
)
from companion.experiments.results import (
    DERIVED,
    LINE,
    cell_label,
    load_results,
    mean_std,
    run_sources,
    summarize,
)
from companion.experiments.stats import holm, paired_interval, paired_t_test


def transfer_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std over seeds per dataset x pos x rendering x size x condition (as moved, and
    fine-tuned), by ``companion.experiments.results.summarize`` with ``(pos, size, condition,
    rendering)`` in the place of ``pos`` (a row without a rendering, from a record written before
    there were two, is ``"scaled"``)."""
    out = []
    for metric in ("acc", "acc_finetuned"):
        records = [
            {
                "dataset": r["dataset"],
                "variant": r.get("variant", "swin"),
                "seed": r["seed"],
                "pos": (r["pos"], r["size"], r["condition"], r.get("rendering", "scaled")),
                "final": {metric: r[metric]},
            }
            for r in rows
            if metric in r
        ]
        for s in summarize(records, metric=metric):
            pos, size, condition, rendering = s["pos"]
            out.append({**s, "pos": pos, "size": size, "condition": condition,
                        "rendering": rendering, "metric": metric})  # fmt: skip
    return out


def transfer_table(summary: Sequence[dict[str, Any]]) -> str:
    """``transfer_summary`` as Markdown: one line per dataset x pos x size x condition (named as
    today, ``condition_name``, also when the summary comes from an older record)."""
    lines = [
        "| dataset | pos | rendering | size | condition | accuracy | after fine-tune |",
        "|---" * 7 + "|",
    ]
    cells: dict[tuple, dict[str, str]] = {}
    for s in summary:
        condition = condition_name(s["condition"])
        rendering = s.get("rendering", "scaled")
        key = (s["dataset"], cell_label(s["pos"], s["variant"]), rendering, s["size"], condition)
        cells.setdefault(key, {})[s["metric"]] = f"{mean_std(s)} (n={s['n']})"
    for (dataset, pos, rendering, size, condition), v in cells.items():
        after = v.get("acc_finetuned", "")
        lines.append(
            f"| {dataset} | {pos} | {rendering} | {size} | {condition} | {v['acc']} | {after} |"
        )
    return "\n".join(lines)


def load_transfer(folder: str | Path) -> dict[str, Any]:
    """``transfer.json`` of an ablation folder (written by ``resolution_experiment.run_transfer``),
    checked against the folder's ``SHA256SUMS`` and against the runs of the ``results.json``
    beside it (``sources``), with today's condition names (:func:`with_todays_names`)."""
    results = verified_json(folder, DERIVED[0])
    if "record_sha256" in results and not is_sealed(results):  # sealed since records were
        raise ResultsError(f"{Path(folder) / DERIVED[0]} does not match its record_sha256")
    if results.get("sources") != run_sources(load_results(folder)):
        raise ResultsError(
            f"{Path(folder) / DERIVED[0]} was computed from other runs than the results.json "
            f"beside it holds"
        )
    return with_todays_names(results)


def with_todays_names(results: dict[str, Any]) -> dict[str, Any]:
    """A ``transfer.json``'s rows and summary with today's condition names (``condition_name``),
    in place; the names it had to map are under ``"renamed"`` (recorded name -> today's; empty
    for a record written with today's names)."""
    renamed: dict[str, str] = {}
    for record in (*results["rows"], *results["summary"]):
        name = condition_name(record["condition"])
        if name != record["condition"]:
            renamed[record["condition"]] = record["condition"] = name
    results["renamed"] = renamed
    return results


def transfer_gap(
    rows: Sequence[dict[str, Any]],
    dataset: str,
    size: int,
    a: tuple[str, str],
    b: tuple[str, str],
    metric: str = "acc",
    confidence: float = 0.95,
    rendering: str = "scaled",
) -> dict[str, Any]:
    """Paired difference ``a - b`` in percentage points at ``size`` in ``rendering``, seed by
    seed.

    ``a`` and ``b`` are ``(pos, condition)`` cells of the rows of
    ``resolution_experiment.transfer_rows``; only seeds that both have are paired. Returns
    ``{a, b, seeds, mean, low, high, excludes_zero, p}``, the interval a paired t interval
    (``companion.experiments.stats.paired_interval``) and ``p`` the two-sided p-value of the same
    paired t test (``paired_t_test``), unadjusted.
    """

    def by_seed(cell: tuple[str, str]) -> dict[int, float]:
        wanted = (dataset, *cell, size, rendering)
        return {
            r["seed"]: 100.0 * r[metric]
            for r in rows
            if (r["dataset"], r["pos"], r["condition"], r["size"], r.get("rendering", "scaled"))
            == wanted
        }

    left, right = by_seed(a), by_seed(b)
    seeds = sorted(set(left) & set(right))
    if len(seeds) < 2:
        raise ValueError(
            f"a and b must share at least 2 seeds on {dataset} at {size} px, got a={a} "
            f"({len(left)} seeds) and b={b} ({len(right)} seeds)"
        )
    differences = [left[s] - right[s] for s in seeds]
    mean, low, high = paired_interval(differences, confidence)
    excludes = bool(low > 0 or high < 0)
    return {"a": a, "b": b, "seeds": seeds, "mean": mean, "low": low, "high": high,
            "excludes_zero": excludes, "p": paired_t_test(differences)[1]}  # fmt: skip


#: One gap: ``(dataset, rendering, size, a, b)`` with ``a`` and ``b`` ``(pos, condition)`` cells.
Pair: TypeAlias = tuple[str, str, int, tuple[str, str], tuple[str, str]]
#: Holm-adjusted p-values of a family of gaps, keyed by ``(*pair, metric)``.
HolmFamily: TypeAlias = dict[tuple[str, str, int, tuple[str, str], tuple[str, str], str], float]
#: Below this Holm-adjusted p, a gap is marked ``H``: readable after the family's correction.
FAMILY_ALPHA = 0.05


def holm_family(
    rows: Sequence[dict[str, Any]],
    pairs: Sequence[Pair],
    metrics: Sequence[str] = ("acc", "acc_finetuned"),
) -> HolmFamily:
    """The Holm-adjusted p-value (``companion.experiments.stats.holm``) of every gap of ``pairs``
    under every metric, all of them one family: the gaps a reader is shown, none planned."""
    keys = [(*pair, metric) for metric in metrics for pair in pairs]
    p = [_gap(rows, key[:5], key[5])["p"] for key in keys]
    return dict(zip(keys, holm(p), strict=True))


def _gap(rows: Sequence[dict[str, Any]], pair: Pair, metric: str) -> dict[str, Any]:
    """:func:`transfer_gap` of one :data:`Pair`."""
    dataset, rendering, size, a, b = pair
    return transfer_gap(rows, dataset, size, a, b, metric, rendering=rendering)


def family_note(family: HolmFamily) -> str:
    """The line that says how the gaps below are to be read, with the family's size."""
    return textwrap.fill(
        f"Exploratory: no comparison was planned before the run. Each gap: mean [95 % paired t "
        f"interval, unadjusted] (* the interval excludes 0), then its p-value after Holm's "
        f"correction over the family of {len(family)} gaps (H: below {FAMILY_ALPHA:g}).",
        width=LINE,
    )


def _adjusted(family: HolmFamily | None, pair: Pair, metric: str) -> float | None:
    """The Holm-adjusted p of ``pair`` under ``metric`` in ``family`` (``None`` without one)."""
    if family is None:
        return None
    if (*pair, metric) not in family:
        raise ValueError(f"family: holds no gap {pair} for {metric!r}; build it with that gap")
    return family[(*pair, metric)]


def _gap_cell(g: dict[str, Any], adjusted: float | None) -> str:
    """``mean [low, high] *``, then ``p_Holm`` (and ``H``) when an adjusted p is given."""
    mark = "*" if g["excludes_zero"] else " "
    text = f"{g['mean']:+6.1f} [{g['low']:+5.1f}, {g['high']:+5.1f}] {mark}"
    if adjusted is None:
        return text.rstrip()
    shown = "<0.001" if adjusted < 0.001 else f"{adjusted:.3f}"
    return f"{text} p_Holm {shown:>5} {'H' if adjusted < FAMILY_ALPHA else ''}".rstrip()


def window_gain_pairs(
    datasets: Sequence[str],
    sizes: Sequence[int],
    codes: Sequence[str],
    method: str = "geometric",
    renderings: Sequence[str] = ("scaled",),
) -> list[Pair]:
    """*Window grown − window kept* for every dataset x rendering x size x code, as :data:`Pair`
    gaps (codes with a table: the window grown with ``method``'s resizing)."""
    return [
        (dataset, rendering, size, (pos, grown_condition(pos, method)), (pos, WINDOW_KEPT))
        for dataset in datasets
        for rendering in renderings
        for size in sizes
        for pos in codes
    ]


def window_gain_table(
    rows: Sequence[dict[str, Any]],
    datasets: Sequence[str],
    sizes: Sequence[int],
    codes: Sequence[str],
    method: str = "geometric",
    family: HolmFamily | None = None,
    renderings: Sequence[str] = ("scaled",),
) -> str:
    """*Window grown − window kept* (:func:`window_gain_pairs`), as moved and after the
    fine-tune: paired gaps in points with their 95% intervals (``*``: the interval excludes 0),
    and their Holm-adjusted p when a ``family`` holding them is given."""

    def cell(pair: Pair, metric: str) -> str:
        return _gap_cell(_gap(rows, pair, metric), _adjusted(family, pair, metric))

    after = 27 if family is None else 45
    lines = [f"{WINDOW_GROWN} - {WINDOW_KEPT}", f"{'':<12}{'as moved':<{after}}after the fine-tune"]
    pairs = window_gain_pairs(datasets, sizes, codes, method, renderings)
    for heading in dict.fromkeys(pair[:3] for pair in pairs):
        lines.append(f"{heading[0]}, {heading[1]}, at {heading[2]} px")
        for pair in (p for p in pairs if p[:3] == heading):
            moved, tuned = (cell(pair, m) for m in ("acc", "acc_finetuned"))
            lines.append(f"  {pair[3][0]:<10}{moved}   {tuned}")
    return "\n".join(lines)
