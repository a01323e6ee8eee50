"""Chapter 6's reader: the far-relation transfer (every code trained at 32 px, moved to 48 px,
beside the references trained at 48 px), read by the rules its predictions fixed before the run.

``results/run_cpu_transfer_far.sh`` writes up to four folders: ``cpu-transfer-far`` (seeds 0-4 of
every code at 32 px, their ``transfer.json`` and the committed ``predictions.md``),
``cpu-transfer-far-more`` (seeds 5-9 of the codes whose 32-px cell split, with their moves) and
the references the predictions name. :func:`load_far_transfer` reads and verifies them all and
merges the extra seeds, so the chapter holds one :class:`FarTransfer`.

The planned comparisons (kinds in ``predictions.TRANSFER_KINDS``; a moved cell is ``{"dataset",
"pos", "rendering", "condition", "metric"}``, ``"window-grown"`` read as the code's own grown
condition, :func:`~companion.experiments.resolution_transfer.grown_condition`):

* ``count``: the 32-px ``cell`` solved (test accuracy >= ``solved.threshold``) in ``expect =
  [low, high]`` seeds; ``moved-count``: the same of a moved ``cell``;
* ``lift-change``: a moved ``cell``'s lift over the constant answer minus the same seeds' lift at
  32 px, each on its own images (:func:`~companion.experiments.bootstrap.lift_gap_interval`);
* ``moved-gap``: moved ``cell`` - its reference, paired by seed and image; not readable (held
  ``None``) where fewer than ``learned.seeds`` of the reference's seeds reach
  ``learned.threshold``;
* ``code-gap``: moved ``a`` - moved ``b`` in one rendering; ``window-gain`` is that reading of one
  code under two conditions (window grown - kept), checked to be so.

Gaps ``expect`` ``"above X"``/``"below X"``/``"within X"`` (fractions) and print in points, on
the seeds both sides have (the measured text says so where they differ).

The exploratory family (:func:`exploratory_family`) is every comparison the predictions did not
plan that the chapter prints: what each code kept of its 32-px lift, with the window kept and
grown, and what growing the window gained, in each rendering; two-stage bootstrap intervals in
points, Holm's adjustment over the whole family. A code whose 32-px cell split is read on the
seeds that solved it (the others had nothing to keep) and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.bootstrap import Interval
from companion.experiments.integrity import ResultsError, whole_folders
from companion.experiments.pilots import find_pilot_twins as find_pilot_twins  # re-exported
from companion.experiments.pilots import twins_table as twins_table  # re-exported
from companion.experiments.predictions import (
    chosen,
    correct_by_seed,
    load_far_transfer_predictions,
    meets,
    p_text,
    test_labels,
    threshold_of,
)
from companion.experiments.records import check_against_table
from companion.experiments.related import check_added_seeds, check_one_run, related_folder
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, grown_condition
from companion.experiments.results import describe_run, find_results, load_results, run_key
from companion.experiments.split_reading import accuracy_table, split_codes
from companion.experiments.stats import binomial_interval, holm_bounds
from companion.experiments.transfer_gaps import (
    References,
    Rows,
    kind_gap,
    merge_rows,
    merge_runs,
    moved_labels,
    moved_matrix,
    points,
    solved_flags,
    split_note,
    trained_matrix,
    transfer_glance,
)
from companion.experiments.transfer_reading import load_references
from companion.experiments.transfer_results import load_transfer

DATASET = "far-relation"
CONDITIONS = (WINDOW_KEPT, WINDOW_GROWN)
#: A count prediction whose text says so is held only by more than half of the seeds read: the
#: plan's ``expect`` range was written for five seeds, its word for any number of them.
MOST = "in most seeds"
#: The blind seeds a cell is read on: its first five that no pilot run equals.
BLIND = 5


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

    def run_lines(self) -> list[str]:
        """Each record as :func:`~companion.experiments.results.describe_run` writes it."""
        return [describe_run(record, budget=False) for record in self.records]

    def accuracy_table(self) -> str:
        """Markdown: every code's 32-px test accuracy and its seeds solved (the plan's rule)."""
        rule = {"split": "test", "threshold": self.threshold}
        cells = [f"{DATASET}:{pos}" for pos in self.codes]
        return accuracy_table(self.before, DATASET, ["test"], rule, cells)

    def seeds(self, pos: str) -> tuple[list[int], list[int]]:
        """``(solved, all)``: the seeds of ``pos`` at 32 px reaching the threshold, and every
        seed, sorted."""
        by_seed = correct_by_seed(self.before, f"{DATASET}:{pos}", "test")
        solved = [s for s in sorted(by_seed) if by_seed[s].mean() >= self.threshold]
        return solved, sorted(by_seed)


@whole_folders
def _checked(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A folder's ``results.json`` and ``transfer.json``, each as the record table holds it."""
    results, moves = load_results(folder), load_transfer(folder)
    check_against_table(folder, results)
    check_against_table(folder, moves, before=results)
    return results, moves


@whole_folders
def load_far_transfer(name: str = "cpu-transfer-far") -> FarTransfer:
    """Every folder of the experiment (:func:`find_results` finds ``name``; the extra seeds in
    ``name``-more, needed exactly when a 32-px cell split; the references beside it), verified
    against their ``SHA256SUMS`` and the record table (every count and per-image bits' hash),
    and merged."""
    folder = find_results(name)
    plan = load_far_transfer_predictions(folder)
    first, moves = _checked(folder)
    ablations, transfers = [first], [moves]
    split = split_codes(first, plan["solved"]["threshold"])
    if split:
        more_folder = related_folder(folder, f"{name}-more")  # in the same results tree
        more, more_moves = _checked(more_folder)
        if list(more["plan"]["pos"]) != split:
            raise ResultsError(f"{more_folder} trained {more['plan']['pos']}, but the cells that "
                               f"split in {folder} are {split}")  # fmt: skip
        ablations.append(more)
        transfers.append(more_moves)
    references = load_references(folder.parent, plan["references"])
    for rendering, reference in references.items():
        check_against_table(folder.parent / plan["references"][rendering], reference)
    check_one_run(ablations, list(references.values()))  # one code, the same settings
    return FarTransfer(before=merge_runs(*ablations), rows=merge_rows(*transfers),
                       references=references, plan=plan,
                       records=(*ablations, *transfers, *references.values()),
                       codes=tuple(first["plan"]["pos"]))  # fmt: skip


@whole_folders
def load_blind_far_transfer(far: FarTransfer, name: str = "cpu-transfer-far") -> FarTransfer:
    """``far`` read on blind seeds only: ``name``-blind and the world reference's blind folder
    merged in (seed 5 of every cell left with fewer than five seeds no pilot ran, trained after
    the run), every run equal to a pilot run (:func:`find_pilot_twins`) dropped with its moves,
    and each cell cut to its first :data:`BLIND` remaining seeds, so every planned comparison
    reads five seeds a side that the predictions did not know."""
    world, scaled = far.plan["references"]["world"], far.plan["references"]["scaled"]
    blind, blind_moves = _checked(related_folder(find_results(name), f"{name}-blind"))
    world_blind = load_results(related_folder(find_results(name), f"{world}-blind"))
    check_against_table(related_folder(find_results(name), f"{world}-blind"), world_blind)
    check_added_seeds((far.records[0], blind), (far.references["world"], world_blind))
    named = [name, f"{name}-more", f"{name}-blind", world, f"{world}-blind", scaled]
    pilots: dict[str, set[str]] = {"before": set(), "world": set(), "scaled": set()}
    for twin in find_pilot_twins(named):
        folder = Path(twin.folder).name
        side = next((r for r, n in (("world", world), ("scaled", scaled)) if folder.startswith(n)),
                    "before")  # fmt: skip
        pilots[side].add(twin.run)
    before = _first_blind(merge_runs(far.before, blind), pilots["before"])
    kept = {(r["dataset"], r["pos"], r["seed"]) for r in before["runs"]}
    rows = merge_rows({"rows": far.rows}, blind_moves)
    references = {**far.references, "world": merge_runs(far.references["world"], world_blind)}
    return FarTransfer(
        before=before,
        rows=[r for r in rows if (r["dataset"], r["pos"], r["seed"]) in kept],
        references={
            rendering: _first_blind(ref, pilots[rendering]) for rendering, ref in references.items()
        },
        plan=far.plan,
        records=(*far.records, blind, blind_moves, world_blind),
        codes=far.codes,
    )


def _first_blind(results: dict[str, Any], pilots: set[str]) -> dict[str, Any]:
    """``results`` with each cell's runs cut to its first :data:`BLIND` seeds outside
    ``pilots`` (run keys)."""
    by_cell: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in sorted(results["runs"], key=lambda r: r["seed"]):
        key = run_key(run["dataset"], run["pos"], run["seed"], run.get("variant", "swin"))
        if key not in pilots:
            by_cell.setdefault((run["dataset"], run["pos"], run.get("variant", "swin")), []).append(
                run
            )
    runs = [r for cell in by_cell.values() for r in cell[:BLIND]]
    return {**results, "runs": runs}


def _verdict(held: bool | None) -> str:
    return "not readable" if held is None else "yes" if held else "**no**"


def verdicts(far: FarTransfer) -> dict[str, bool | None]:
    """``{id: held}`` of every planned prediction read on ``far``'s seeds (None: not readable)."""
    return {
        p["id"]: check_far_transfer_prediction(far.before, far.rows, far.references, p, far.plan)[1]
        for p in far.plan["predictions"]
    }


def verdict_line(far: FarTransfer, seeds: str = "on all seeds") -> str:
    """``"On all seeds, 10 of the 13 predictions held; failed: P3, P7, P13."``: the count by
    the plan's own rules, with the ids that failed and those not readable."""
    found = verdicts(far)
    failed = [i for i, held in found.items() if held is False]
    unread = [i for i, held in found.items() if held is None]
    text = f"{seeds[0].upper()}{seeds[1:]}, {sum(h is True for h in found.values())} of the "
    text += f"{len(found)} predictions held; failed: {', '.join(failed) or 'none'}"
    return text + (f"; not readable: {', '.join(unread)}" if unread else "") + "."


def blind_predictions_table(far: FarTransfer, blind: FarTransfer) -> str:
    """Markdown: every prediction read on all seeds (the pilots' included) and on the blind
    seeds (:func:`load_blind_far_transfer`), each with its outcome, by the same rules and
    thresholds."""
    lines = [f"| id | expected | all seeds | held | {BLIND} blind seeds | held |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for p in far.plan["predictions"]:
        cells = []
        for read in (far, blind):
            measured, held = check_far_transfer_prediction(
                read.before, read.rows, read.references, p, read.plan
            )
            cells += [measured, _verdict(held)]
        lines.append(f"| {p['id']} | {_expected(p)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
                cells = ["—" if i is None else points(i) + "\\*" * (next(adjusted)[0] < 0.05)
                         for i in gaps]  # fmt: skip
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
    """For every planned gap that reads a code whose 32-px seeds split, or a moved cell whose seeds
    split at the new size: whether each seed solved the task (at 32 px, and moved), the gap seed
    by seed, and where a 32-px cell split, the gap on the seeds where every code it reads solved
    (exploratory: the rule fixed before the run asks for both readings). Points. A gap
    against a reference is read only on the reference's seeds that learned; the others are named
    as not readable."""
    blocks = []
    for p in far.plan["predictions"]:
        if p["kind"] in ("count", "moved-count"):
            continue
        cells = [moved_cell(p[k]) for k in (("cell",) if "cell" in p else ("a", "b"))]
        codes = list(dict.fromkeys(c["pos"] for c in cells))
        split = [pos for pos in codes if _read_seeds(far, pos)[1]]
        moved_split = _moved_split(far, cells)
        if not split and not moved_split:
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
            dropped = [s for s in seeds if s in by_seed and s not in learned]
            seeds = [s for s in seeds if s in learned]
        else:
            dropped = []
        solved = {pos: far.seeds(pos)[0] for pos in codes}
        lines = [f"{p['id']}  {p['text']}"]
        if dropped:
            named = ", ".join(map(str, dropped))
            lines.append(f"  not readable on seed {named}: the reference did not learn there")
        labelled = [(f"{pos} solved", solved[pos]) for pos in split] + moved_split
        width = max(14, *(len(label) + 1 for label, _ in labelled))
        lines.append(f"  {'seed':{width}}" + "".join(f"{s:>7}" for s in seeds))
        for label, won in labelled:
            lines.append(f"  {label:{width}}" + "".join(
                f"{'yes' if s in won else 'no':>7}" for s in seeds))  # fmt: skip
        values = [_gap_on(far, p["kind"], cells, [s]).estimate for s in seeds]
        lines.append(f"  {'points':{width}}" + "".join(f"{100 * v:+7.1f}" for v in values))
        if not split:  # only the moved cells split: nothing solved at 32 px to read apart
            blocks.append("\n".join(lines))
            continue
        kept = [s for s in seeds if all(s in solved[pos] for pos in codes)]
        interval = _gap_on(far, p["kind"], cells, kept)
        verdict = "within" if meets(interval, p["expect"]) else "outside"
        where = "every code solved" + " and the reference learned" * (p["kind"] == "moved-gap")
        lines.append(
            f"  on the {len(kept)} seeds where {where} (exploratory): "
            f"{100 * interval.estimate:+.1f} [{100 * interval.low:+.1f}, "
            f"{100 * interval.high:+.1f}], {verdict} the expectation"
        )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _moved_split(
    far: FarTransfer, cells: Sequence[Mapping[str, str]]
) -> list[tuple[str, list[int]]]:
    """``(label, seeds that solved)`` of each moved cell whose seeds split at the new size."""
    found = []
    for cell in dict.fromkeys(tuple(sorted(c.items())) for c in cells):
        moved = dict(cell)
        seeds, correct = moved_matrix(far.rows, moved, far.plan["size"],
                                      len(moved_labels(far.references, moved)))  # fmt: skip
        won = solved_flags(correct, far.threshold)
        if 0 < won.sum() < len(won):
            name = moved["condition"].removeprefix("window-")
            name += " ft" * (moved.get("metric") == "acc_finetuned")
            label = f"{moved['pos']} {name} at {far.plan['size']} solved"
            found.append((label, [s for s, w in zip(seeds, won, strict=True) if w]))
    return found


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


def moved_cell(cell: Mapping[str, str]) -> dict[str, str]:
    """A moved cell with its metric and its code's own grown condition filled in."""
    found = {"metric": "acc", **cell}
    if found["condition"] == WINDOW_GROWN:
        found["condition"] = grown_condition(found["pos"])
    return found


def learned_references(
    references: References, dataset: str, codes: Sequence[str], plan: Mapping[str, Any]
) -> dict[str, dict[str, tuple[int, int]]]:
    """``{rendering: {pos: (seeds reaching learned.threshold on test, seeds)}}`` for each code of
    ``codes`` with a reference in that rendering."""
    found: dict[str, dict[str, tuple[int, int]]] = {}
    threshold = plan["learned"]["threshold"]
    for rendering, reference in references.items():
        trained = {r["pos"] for r in reference["runs"] if r["dataset"] == dataset}
        flags = {pos: solved_flags(trained_matrix(reference, dataset, pos), threshold)
                 for pos in codes if pos in trained}  # fmt: skip
        found[rendering] = {pos: (int(f.sum()), len(f)) for pos, f in flags.items()}
    return found


def learned_line(
    references: References, dataset: str, codes: Sequence[str], plan: Mapping[str, Any]
) -> str:
    """``"Trained at 48 px, seeds reaching 90 % ...: world abs 4/4, world rel 2/4 (not
    learned)."``: each reference's count, for the chapter's text."""
    need, parts = plan["learned"]["seeds"], []
    for rendering, by_pos in learned_references(references, dataset, codes, plan).items():
        parts += [f"{rendering} {pos} {k}/{n}{' (not learned)' * (k < need)}"
                  for pos, (k, n) in by_pos.items()]  # fmt: skip
    return (f"Trained at {plan['size']} px, seeds reaching {100 * plan['learned']['threshold']:g} "
            f"% test accuracy (learned: at least {need}): {', '.join(parts)}.")  # fmt: skip


def check_far_transfer_prediction(
    before: dict[str, Any], rows: Rows, references: References,
    prediction: Mapping[str, Any], plan: Mapping[str, Any],
) -> tuple[str, bool | None]:  # fmt: skip
    """``(what was measured, whether the prediction held)``; held is ``None`` (not readable) for
    a ``moved-gap`` whose reference did not learn, and the text names it with its count."""
    kind, size, threshold = prediction["kind"], plan["size"], plan["solved"]["threshold"]
    if kind in ("count", "moved-count"):
        if kind == "count":
            correct = trained_matrix(before, *prediction["cell"].split(":", 1))
        else:
            cell = moved_cell(prediction["cell"])
            correct = moved_matrix(rows, cell, size, len(moved_labels(references, cell)))[1]
        k, n = int(solved_flags(correct, threshold).sum()), len(correct)
        (low, high), (lo, hi) = binomial_interval(k, n), prediction["expect"]
        text = f"solved {k} of {n} (rate {low:.2f}-{high:.2f})"
        if MOST in prediction["text"] and 2 * k <= n:  # the plan's own word: more than half
            return f"{text}: not most of {n}", False
        return text, lo <= k <= hi
    cells = [moved_cell(prediction[k]) for k in (("cell",) if "cell" in prediction else ("a", "b"))]
    named = [(c["pos"], c["condition"]) for c in cells]
    if kind == "window-gain" and (named[0][0] != named[1][0] or named[0][1] == named[1][1]):
        raise ValueError(f"prediction {prediction['id']}: a window-gain reads one code under two "
                         f"conditions, got {named}")  # fmt: skip
    if kind == "moved-gap":
        cell, learned = cells[0], plan["learned"]
        reference = references[cell["rendering"]]
        flags = solved_flags(
            trained_matrix(reference, cell["dataset"], cell["pos"]), learned["threshold"]
        )
        if flags.sum() < learned["seeds"]:
            return (f"not readable: {cell['pos']} trained at {size} px in {cell['rendering']} "
                    f"({plan['references'][cell['rendering']]}) learned in {int(flags.sum())} of "
                    f"{len(flags)} seeds, {learned['seeds']} needed"), None  # fmt: skip
    interval, note = kind_gap(before, rows, references, kind, cells, size)
    text = points(interval) + p_text(interval, prediction["expect"]) + note
    return text + split_note(before, cells, threshold), meets(interval, prediction["expect"])


def _expected(prediction: Mapping[str, Any]) -> str:
    """``"2-4 seeds"``, or a gap's expectation in points (``"above 5 points"``)."""
    expect = prediction["expect"]
    if isinstance(expect, str):
        return f"{expect.split()[0]} {100 * threshold_of(expect):g} points"
    return "{}-{} seeds".format(*expect)


def far_transfer_predictions_table(
    before: dict[str, Any], rows: Rows, references: References,
    predictions: dict[str, Any], ids: Sequence[str] | None = None,
) -> str:  # fmt: skip
    """Markdown: id | prediction | expected | measured | held, for every prediction (or ``ids``):
    gaps in points with their 95 % interval, "not readable" where held is ``None``."""
    lines = ["| id | prediction | expected | measured | held |", "|---|---|---|---|---|"]
    for p in chosen(predictions, ids):
        measured, held = check_far_transfer_prediction(before, rows, references, p, predictions)
        lines.append(
            f"| {p['id']} | {p['text']} | {_expected(p)} | {measured} | {_verdict(held)} |"
        )
    return "\n".join(lines)
