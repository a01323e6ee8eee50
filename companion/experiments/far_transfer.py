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
)
from companion.experiments.integrity import ResultsError
from companion.experiments.predictions import correct_by_seed, test_labels
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


def far_glance(far: FarTransfer, rendering: str) -> str:
    """:func:`~companion.experiments.transfer_gaps.transfer_glance` of every code in one
    rendering, with the window kept and grown, at the plan's size and "solved" threshold."""
    return transfer_glance(
        far.before, far.rows, far.references, DATASET, far.codes, far.plan["size"],
        [rendering], CONDITIONS, far.threshold,
    )  # fmt: skip


def _family_gaps(
    far: FarTransfer, pos: str, rendering: str, seeds: Sequence[int]
) -> list[Interval]:
    """Lift change with the window kept, with it grown, and grown − kept (as moved), on
    ``seeds``."""
    size, base = far.plan["size"], {"dataset": DATASET, "pos": pos, "rendering": rendering}
    kept = {**base, "condition": WINDOW_KEPT, "metric": "acc"}
    grown = {**base, "condition": grown_condition(pos), "metric": "acc"}
    before = {**far.before, "runs": [r for r in far.before["runs"] if r["seed"] in seeds]}
    rows = [r for r in far.rows if r["seed"] in seeds]
    return [
        kind_gap(before, rows, far.references, "lift-change", [kept], size)[0],
        kind_gap(before, rows, far.references, "lift-change", [grown], size)[0],
        kind_gap(before, rows, far.references, "window-gain", [grown, kept], size)[0],
    ]


def exploratory_family(far: FarTransfer, renderings: Sequence[str] = ("scaled", "world")) -> str:
    """Markdown, one table per rendering: per code, its lift change (lift over the constant answer
    at the new size − the same seeds' at 32 px) as moved with the window kept and grown, and the
    window's gain (grown − kept), in points with 95 % two-stage bootstrap intervals; ``*`` marks a
    gap whose p-value, Holm-adjusted over every gap of every table, is below 0.05. A split code
    is read on its solved seeds."""
    entries: list[tuple[str, str, list[Interval]]] = []
    for rendering in renderings:
        for pos in far.codes:
            solved, every = far.seeds(pos)
            seeds = solved if 0 < len(solved) < len(every) else every
            note = f" ({len(solved)} solved of {len(every)})" if seeds != every else ""
            entries.append((rendering, f"`{pos}`{note}", _family_gaps(far, pos, rendering, seeds)))
    tested = [i for *_, gaps in entries for i in gaps]
    adjusted = iter(holm_bounds([i.p for i in tested], [i.floor for i in tested]))
    tables: list[str] = []
    for rendering in renderings:
        lines = [f"| `{rendering}`: code | kept: lift change | grown: lift change | grown − kept |",
                 "|---|---|---|---|"]  # fmt: skip
        for drawn, label, gaps in entries:
            if drawn == rendering:
                cells = [_marked(i, next(adjusted)[0]) for i in gaps]
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
        tables.append("\n".join(lines))
    note = (
        f"*Points [95 % two-stage bootstrap interval over seeds and test images], as moved to "
        f"{far.plan['size']} px (a bias table resized geometrically when the window grows). "
        f"`*`: p below 0.05 after Holm's adjustment over all {len(tested)} gaps. A code whose "
        f"32-px seeds split is read on the seeds that solved it.*"
    )
    return "\n\n".join(tables) + "\n\n" + note + "\n"


def _marked(interval: Interval, adjusted: float) -> str:
    text = f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]"
    return text + ("\\*" if adjusted < 0.05 else "")
