"""Chapter 6's far-relation transfer read as one object: every code trained at 32 px, moved to
48 px, and the references trained at 48 px.

``results/run_cpu_transfer_far.sh`` writes up to four folders: ``cpu-transfer-far`` (seeds 0-4 of
every code at 32 px, their ``transfer.json`` and the committed ``predictions.md``),
``cpu-transfer-far-more`` (seeds 5-9 of the codes whose 32-px cell split, with their moves) and
the references the predictions name. :func:`load_far_transfer` reads and verifies them all and
merges the extra seeds, so a chapter holds one :class:`FarTransfer`.

The exploratory family (:func:`exploratory_family`) is every comparison the predictions did not
plan that the chapter prints: what each code kept of its 32-px lift, with the window kept and
grown, and what growing the window gained, in each rendering; two-stage bootstrap intervals in
points, Holm's adjustment over the whole family. A code whose 32-px cell split is read on the
seeds that solved it (the others had nothing to keep) and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval
from companion.experiments.far_transfer_predictions import (
    kind_gap,
    load_far_transfer_predictions,
    merge_rows,
    merge_runs,
    moved_cell,
)
from companion.experiments.integrity import ResultsError
from companion.experiments.predictions import correct_by_seed, meets, test_labels
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, grown_condition
from companion.experiments.results import find_results, load_results
from companion.experiments.stats import holm_bounds
from companion.experiments.transfer_gaps import transfer_glance
from companion.experiments.transfer_reading import load_references
from companion.experiments.transfer_results import load_transfer

DATASET = "far-relation"
CONDITIONS = (WINDOW_KEPT, WINDOW_GROWN)


@dataclass(frozen=True)
class FarTransfer:
    """The experiment's records, verified and merged.

    ``before``: the 32-px runs (``{"runs", "test_sets"}``, the extra seeds merged in); ``rows``:
    every move's ``transfer.json`` rows; ``references``: ``{rendering: results.json}`` trained at
    ``plan["size"]`` px; ``plan``: the predictions' block; ``records``: each ablation and transfer
    record as read (for :func:`~companion.experiments.results.describe_run`); ``codes``: the
    codes trained at 32 px, in the plan's order."""

    before: dict[str, Any]
    rows: list[dict[str, Any]]
    references: dict[str, dict[str, Any]]
    plan: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    codes: tuple[str, ...]

    @property
    def threshold(self) -> float:
        """The predictions' "solved" test accuracy (a fraction)."""
        return float(self.plan["solved"]["threshold"])

    def constants(self) -> dict[str, float]:
        """``{rendering: constant answer}``: the most frequent label's share of the test images
        the moved models were tested on (their reference's)."""
        return {
            rendering: float(np.bincount(labels).max() / len(labels))
            for rendering, reference in self.references.items()
            for labels in [test_labels(reference, DATASET, "test")]
        }

    def seeds(self, pos: str) -> tuple[list[int], list[int]]:
        """``(solved, all)``: the seeds of ``pos`` at 32 px reaching the threshold, and every
        seed, sorted."""
        by_seed = correct_by_seed(self.before, f"{DATASET}:{pos}", "test")
        solved = [s for s in sorted(by_seed) if by_seed[s].mean() >= self.threshold]
        return solved, sorted(by_seed)


def split_codes(results: dict[str, Any], threshold: float) -> list[str]:
    """The ``pos`` of every main-grid cell (the Swin itself, no variant) some of whose seeds reach
    ``threshold`` test accuracy and some do not, in the plan's order."""
    found = []
    for dataset in results["plan"]["datasets"]:
        for pos in results["plan"]["pos"]:
            accuracies = [
                c.mean() for c in correct_by_seed(results, f"{dataset}:{pos}", "test").values()
            ]
            solved = sum(a >= threshold for a in accuracies)
            if 0 < solved < len(accuracies) and pos not in found:
                found.append(pos)
    return found


def load_far_transfer(name: str = "cpu-transfer-far") -> FarTransfer:
    """Every folder of the experiment (:func:`find_results` finds ``name``; the extra seeds in
    ``name``-more, needed exactly when a 32-px cell split; the references beside it), verified
    against their ``SHA256SUMS`` and merged."""
    folder = find_results(name)
    plan = load_far_transfer_predictions(folder)
    first = load_results(folder)
    ablations, transfers = [first], [load_transfer(folder)]
    split = split_codes(first, plan["solved"]["threshold"])
    if split:
        more_folder = find_results(f"{name}-more")
        more = load_results(more_folder)
        if list(more["plan"]["pos"]) != split:
            raise ResultsError(
                f"{more_folder} trained {more['plan']['pos']}, but the cells that split in "
                f"{folder} are {split}"
            )
        ablations.append(more)
        transfers.append(load_transfer(more_folder))
    references = load_references(folder.parent, plan["references"])
    return FarTransfer(
        before=merge_runs(*ablations),
        rows=merge_rows(*transfers),
        references=references,
        plan=plan,
        records=(*ablations, *transfers, *references.values()),
        codes=tuple(first["plan"]["pos"]),
    )


def far_glance(far: FarTransfer, renderings: Sequence[str] = ("world", "scaled")) -> str:
    """:func:`~companion.experiments.transfer_gaps.transfer_glance` of every code in one table:
    each rendering with the window kept and grown, at the plan's size and "solved" threshold."""
    return transfer_glance(
        far.before, far.rows, far.references, DATASET, far.codes, far.plan["size"],
        renderings, CONDITIONS, far.threshold,
    )  # fmt: skip


def _read_seeds(far: FarTransfer, pos: str) -> tuple[list[int], str]:
    """The seeds a code is read on (its solved ones where its 32-px cell split) and the note."""
    solved, every = far.seeds(pos)
    if 0 < len(solved) < len(every):
        return solved, f" ({len(solved)} solved of {len(every)})"
    return every, ""


def _family_gaps(far: FarTransfer, pos: str, rendering: str, against: str) -> list[Interval | None]:
    """As moved, on the seeds :func:`_read_seeds` gives: the lift change with the window kept,
    with it grown, grown − kept, and (grown) ``pos`` − ``against`` on the seeds both are read on
    (None for ``against`` itself and for ``none``)."""
    size, base = far.plan["size"], {"dataset": DATASET, "pos": pos, "rendering": rendering}
    kept = {**base, "condition": WINDOW_KEPT, "metric": "acc"}
    grown = {**base, "condition": grown_condition(pos), "metric": "acc"}
    seeds = _read_seeds(far, pos)[0]
    before = {**far.before, "runs": [r for r in far.before["runs"] if r["seed"] in seeds]}
    rows = [r for r in far.rows if r["seed"] in seeds]
    gaps: list[Interval | None] = [
        kind_gap(before, rows, far.references, "lift-change", [kept], size)[0],
        kind_gap(before, rows, far.references, "lift-change", [grown], size)[0],
        kind_gap(before, rows, far.references, "window-gain", [grown, kept], size)[0],
    ]
    if pos in (against, "none"):
        return [*gaps, None]
    other = {**grown, "pos": against, "condition": grown_condition(against)}
    both = set(seeds) & set(_read_seeds(far, against)[0])
    on_both = [r for r in far.rows if r["seed"] in both]
    return [
        *gaps,
        kind_gap(far.before, on_both, far.references, "code-gap", [grown, other], size)[0],
    ]


def exploratory_family(
    far: FarTransfer, renderings: Sequence[str] = ("scaled", "world"), against: str = "rel"
) -> str:
    """Markdown, one table per rendering: per code, as moved, its lift change (lift over the
    constant answer at the new size − the same seeds' at 32 px) with the window kept and grown,
    the window's gain (grown − kept), and (window grown) its accuracy − ``against``'s, in points
    with 95 % two-stage bootstrap intervals; ``*`` marks a gap whose p-value, Holm-adjusted over
    every gap of every table, is below 0.05. A split code is read on its solved seeds."""
    entries: list[tuple[str, str, list[Interval | None]]] = []
    for rendering in renderings:
        for pos in far.codes:
            note = _read_seeds(far, pos)[1]
            entries.append(
                (rendering, f"`{pos}`{note}", _family_gaps(far, pos, rendering, against))
            )
    tested = [i for *_, gaps in entries for i in gaps if i is not None]
    adjusted = iter(holm_bounds([i.p for i in tested], [i.floor for i in tested]))
    tables: list[str] = []
    for rendering in renderings:
        lines = [f"| `{rendering}`: code | kept: lift change | grown: lift change | grown − kept "
                 f"| grown: − `{against}` |", "|---|---|---|---|---|"]  # fmt: skip
        for drawn, label, gaps in entries:
            if drawn == rendering:
                cells = ["—" if i is None else _marked(i, next(adjusted)[0]) for i in gaps]
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines))
    note = (
        f"*Points [95 % two-stage bootstrap interval over seeds and test images], as moved to "
        f"{far.plan['size']} px (a bias table resized geometrically when the window grows). "
        f"`*`: p below 0.05 after Holm's adjustment over all {len(tested)} gaps. A code whose "
        f"32-px seeds split is read on the seeds that solved it, and beside `{against}` on the "
        f"seeds both are read on.*"
    )
    return "\n\n".join(tables) + "\n\n" + note + "\n"


def far_split_readings(far: FarTransfer) -> str:
    """For every planned gap that reads a code whose 32-px seeds split: whether each seed solved
    the task at 32 px, the gap seed by seed, and the gap on the seeds where every code it reads
    solved (exploratory: the rule fixed before the run asks for both readings). Points."""
    blocks = []
    for p in far.plan["predictions"]:
        if p["kind"] in ("count", "moved-count"):
            continue
        cells = [moved_cell(p[k]) for k in (("cell",) if "cell" in p else ("a", "b"))]
        codes = list(dict.fromkeys(c["pos"] for c in cells))
        split = [pos for pos in codes if _read_seeds(far, pos)[1]]
        if not split:
            continue
        seeds = sorted(set.intersection(*(set(far.seeds(pos)[1]) for pos in codes)))
        if p["kind"] == "moved-gap":  # read only where the reference learned, on its seeds
            reference = far.references[cells[0]["rendering"]]
            by_seed = correct_by_seed(reference, f"{DATASET}:{cells[0]['pos']}", "test")
            learned = [
                s for s, c in by_seed.items() if c.mean() >= far.plan["learned"]["threshold"]
            ]
            if len(learned) < far.plan["learned"]["seeds"]:
                continue
            seeds = [s for s in seeds if s in by_seed]
        solved = {pos: far.seeds(pos)[0] for pos in codes}
        lines = [f"{p['id']}  {p['text']}"]
        lines.append("  seed          " + "".join(f"{s:>7}" for s in seeds))
        for pos in split:
            lines.append(f"  {pos + ' solved':14}" + "".join(
                f"{'yes' if s in solved[pos] else 'no':>7}" for s in seeds))  # fmt: skip
        values = [_gap_on(far, p["kind"], cells, [s]).estimate for s in seeds]
        lines.append("  points        " + "".join(f"{100 * v:+7.1f}" for v in values))
        kept = [s for s in seeds if all(s in solved[pos] for pos in codes)]
        interval = _gap_on(far, p["kind"], cells, kept)
        verdict = "within" if meets(interval, p["expect"]) else "outside"
        lines.append(
            f"  on the {len(kept)} seeds where every code solved (exploratory): "
            f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, "
            f"{100 * interval.high:+.1f}], {verdict} the expectation"
        )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _gap_on(
    far: FarTransfer, kind: str, cells: list[dict[str, str]], seeds: Sequence[int]
) -> Interval:
    """A planned gap of ``kind`` on ``seeds`` only."""
    before = {**far.before, "runs": [r for r in far.before["runs"] if r["seed"] in seeds]}
    rows = [r for r in far.rows if r["seed"] in seeds]
    references = {
        rendering: {**ref, "runs": [r for r in ref["runs"] if r["seed"] in seeds]}
        for rendering, ref in far.references.items()
    }
    return kind_gap(before, rows, references, kind, cells, far.plan["size"])[0]


def _marked(interval: Interval, adjusted: float) -> str:
    text = f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"
    return text + ("\\*" if adjusted < 0.05 else "")
