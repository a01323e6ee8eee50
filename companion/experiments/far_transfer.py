"""Chapter 6's far-relation transfer as one :class:`FarTransfer`: the folders that
``results/run_cpu_transfer_far.sh`` writes, read, verified and merged (:func:`load_far_transfer`;
on blind seeds only, :func:`load_blind_far_transfer`). The record table's counts decide every
"solved" (which cells split, too), never the per-image bits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from companion._checks import check_choice
from companion.experiments.evaluation import unpack_bits
from companion.experiments.integrity import ResultsError
from companion.experiments.pilots import find_pilot_twins
from companion.experiments.predictions import (
    PREDICTIONS,
    accuracy_table,
    glance_entry,
    is_split_cell,
    test_labels,
    with_counts,
)
from companion.experiments.predictions import parse_far_transfer_predictions as parse_plan
from companion.experiments.records import check_against_table, load_table, results_tree
from companion.experiments.related import check_added_seeds, check_one_run, related_folder
from companion.experiments.resolution_transfer import WINDOW_KEPT, grown_condition
from companion.experiments.results import (
    describe_run,
    find_results,
    load_results,
    load_transfer,
    read_text,
    run_key,
)

DATASET = "far-relation"
#: The blind seeds a cell is read on: its first five that no pilot run equals.
BLIND = 5
#: A moved model's accuracy as moved, and after the short fine-tune.
METRICS = ("acc", "acc_finetuned")


class Cell(NamedTuple):
    """Runs of a code: at 32 px where ``rendering`` is None, else at the plan's size, trained there
    (a reference) where ``condition`` is ``"trained"``, else moved there."""

    pos: str
    rendering: str | None = None
    condition: str = "trained"
    metric: str = "acc"


@dataclass(frozen=True)
class FarTransfer:
    """The experiment's records, verified and merged: the 32-px runs (``before``, their table
    counts attached), every move (``rows``), the runs trained at ``plan["size"]`` px by rendering
    (``references``) and every run's test ``accuracy`` by cell and seed, from the record table."""

    before: dict[str, Any]
    rows: list[dict[str, Any]]
    references: dict[str, dict[str, Any]]
    plan: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    codes: tuple[str, ...]
    accuracy: dict[tuple[str, str | None, str, str, int], float]

    @property
    def threshold(self) -> float:
        """The predictions' "solved" test accuracy (a fraction)."""
        return float(self.plan["solved"]["threshold"])

    def labels(self, rendering: str | None = None) -> np.ndarray:
        """The test labels at 32 px, or of the reference in ``rendering`` (its moves' images)."""
        check_choice("rendering", rendering, [None, *self.references])
        return test_labels(
            self.references[rendering] if rendering else self.before, DATASET, "test"
        )

    def constant(self, rendering: str | None = None) -> float:
        """The constant answer's accuracy (the most frequent label's share) on those labels."""
        return float(np.bincount(self.labels(rendering)).max() / len(self.labels(rendering)))

    def constants(self) -> dict[str, float]:
        """``{rendering: constant answer}`` on the moved models' test images."""
        return {rendering: self.constant(rendering) for rendering in self.references}

    def run_lines(self) -> list[str]:
        """Each record as :func:`~companion.experiments.results.describe_run` writes it."""
        return [describe_run(record, budget=False) for record in self.records]

    def accuracy_table(self) -> str:
        """Markdown: every code's 32-px test accuracy and its seeds solved."""
        rule = {"split": "test", "threshold": self.threshold}
        cells = [f"{DATASET}:{pos}" for pos in self.codes]
        return accuracy_table(self.before, DATASET, ["test"], rule, cells)

    def accuracies(self, cell: Cell) -> dict[int, float]:
        """``{seed: test accuracy}`` of ``cell``, seeds in order."""
        return dict(sorted((k[-1], v) for k, v in self.accuracy.items() if k[:-1] == cell))

    def correct(self, cell: Cell) -> dict[int, np.ndarray]:
        """``{seed: (images,) bool}``: which test images each run of ``cell`` got right."""
        pos, rendering, condition, metric = cell
        images = len(self.labels(rendering))
        if condition == "trained":
            runs = (self.references[rendering] if rendering else self.before)["runs"]
            found = {r["seed"]: r["splits"]["test"]["correct"] for r in runs if r["pos"] == pos}
        else:
            place, bits = (pos, rendering, self.plan["size"], condition), "correct" + metric[3:]
            check_choice("metric", metric, METRICS)
            found = {
                r["seed"]: r[bits]
                for r in self.rows
                if (r["pos"], r["rendering"], r["size"], r["condition"]) == place
            }
        return {seed: unpack_bits(found[seed], images) for seed in sorted(found)}

    def seeds(self, pos: str, rendering: str | None = None) -> tuple[list[int], list[int]]:
        """``(reached, all)``: the seeds of ``pos`` at 32 px that solved the task (the plan's
        ``solved.threshold``), or of its reference in ``rendering`` that learned it
        (``learned.threshold``), and every seed."""
        found = self.accuracies(Cell(pos, rendering))
        threshold = self.threshold if rendering is None else self.plan["learned"]["threshold"]
        return [s for s, value in found.items() if value >= threshold], list(found)


def far_glance(far: FarTransfer, renderings: Sequence[str] = ("world", "scaled")) -> str:
    """Markdown: each code's lift over the constant answer at 32 px, and in each rendering moved
    (window kept, and grown to the code's own :func:`grown_condition`) and trained at the plan's
    size, from the record table's accuracies, as its footnote says."""
    size, threshold = far.plan["size"], far.threshold
    head = ["code", "32 px"]
    for r in renderings:
        head += [f"{r}, {c}{ft}" for c in ("kept", "grown") for ft in ("", ", ft")] + [f"{r}, ref"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for pos in far.codes:
        solved = far.seeds(pos)[0]
        entries = [f"`{pos}`", _entry(far.accuracies(Cell(pos)), far.constant(), threshold)]
        for r in renderings:
            for condition in (WINDOW_KEPT, grown_condition(pos)):
                for metric in METRICS:
                    moved = far.accuracies(Cell(pos, r, condition, metric))
                    entries.append(_entry(moved, far.constant(r), threshold, solved))
            reference = far.accuracies(Cell(pos, r))
            entries.append(_entry(reference, far.constant(r), threshold) if reference else "—")
        lines.append("| " + " | ".join(entries) + " |")
    lines.append("")
    lines.append(
        f"*`{DATASET}`: lift over the constant answer (points), mean over seeds, each column on "
        f"its own test images: trained at 32 px; moved to {size} px with the window kept or grown "
        f"(a bias table resized geometrically), as moved and after the short fine-tune (ft); "
        f"trained at {size} px (ref, — where none was). Where a cell's seeds split, the count "
        f"solved (accuracy ≥ {100 * threshold:g} %), their mean lift and each other seed's; a "
        f"code whose 32-px seeds split is read in two groups, those that solved at 32 px and "
        f"those that did not.*"
    )
    return "\n".join(lines) + "\n"


def _entry(
    accuracy: Mapping[int, float],
    constant: float,
    threshold: float,
    solved_at_32: Collection[int] | None = None,
) -> str:
    """A glance entry of ``{seed: accuracy}``; where the seeds of a code split at 32 px
    (``solved_at_32``), one per group: a moved model of a seed that never solved had nothing to
    keep."""
    solved = {s: a for s, a in accuracy.items() if s in (solved_at_32 or ())}
    other = {s: a for s, a in accuracy.items() if s not in (solved_at_32 or ())}
    if solved_at_32 is not None and solved and other:
        groups = ((solved, "solved"), (other, "not"))
        parts = [(len(g), name, _entry(g, constant, threshold)) for g, name in groups]
        return " · ".join(
            f"{k} {name} at 32 px: " + (f"({e})" if " · " in e else e) for k, name, e in parts
        )
    values = np.array(list(accuracy.values()))
    return glance_entry(100 * (values - constant), values >= threshold)


def _checked(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A folder's ``results.json`` (each run with its counts from the record table) and
    ``transfer.json``, each checked against the record table."""
    results = load_results(folder)
    moves = load_transfer(folder, results)
    check_against_table(folder, results)
    check_against_table(folder, moves, before=results)
    return with_counts(results, load_table(results_tree(folder))), moves


def _accuracies(
    folders: Sequence[Path], size: int, found: Mapping[tuple[Any, ...], float] | None = None
) -> dict[tuple[Any, ...], float]:
    """:attr:`FarTransfer.accuracy` (``found``, with that of ``folders``: 32-px runs, their moves to
    ``size`` px, runs trained at ``size`` px): ``correct / total`` of the record table's rows; a
    run met twice (a seed of a cell in two folders) is refused."""
    names, found = {folder.name for folder in folders}, dict(found or {})
    for row in load_table(results_tree(folders[0])):
        wanted = row["experiment"] in names and (row["task"], row["split"]) == (DATASET, "test")
        if wanted and (row["record"] == "results" or row["size"] == size):  # no 32-px moves
            rendering = row["rendering"] if row["size"] == size else None
            key = (row["code"], rendering, row["condition"], row["metric"], row["seed"])
            if key in found:
                raise ValueError(f"{row['experiment']}: {key[:-1]} seed {key[-1]} is read twice")
            found[key] = row["correct"] / row["total"]
    return found


def load_far_transfer(name: str = "cpu-transfer-far") -> FarTransfer:
    """Every folder of the experiment (``name``; ``name``-more, needed exactly when a 32-px cell
    split; the references beside it), verified against their ``SHA256SUMS`` and the record table
    (every count and per-image bits' hash), and merged."""
    folder = find_results(name)
    plan = parse_plan(read_text(folder, PREDICTIONS), folder / PREDICTIONS)
    first, moves = _checked(folder)
    ablations, transfers, folders = [first], [moves], [folder]
    rule = {"split": "test", "threshold": plan["solved"]["threshold"]}
    split = [pos for pos in first["plan"]["pos"] if is_split_cell(first, f"{DATASET}:{pos}", rule)]
    if split:
        folders.append(related_folder(folder, f"{name}-more"))  # in the same results tree
        more, more_moves = _checked(folders[-1])
        if list(more["plan"]["pos"]) != split:
            raise ResultsError(f"{folders[-1]} trained {more['plan']['pos']}, not {split}")
        ablations.append(more)
        transfers.append(more_moves)
    references = {}
    for rendering, reference in plan["references"].items():
        folders.append(folder.parent / reference)
        references[rendering] = load_results(folders[-1])
        check_against_table(folders[-1], references[rendering])
        drawn = {r["settings"].get("rendering", "scaled") for r in references[rendering]["runs"]}
        if drawn != {rendering}:  # the predictions name each reference by its rendering
            raise ValueError(f"{reference}: drawn in {sorted(drawn)}, read as {rendering!r}")
    check_one_run(ablations, list(references.values()))  # one code, the same settings
    return FarTransfer(
        before=merge_runs(*ablations),
        rows=[row for moves in transfers for row in moves["rows"]],
        references=references,
        plan=plan,
        records=(*ablations, *transfers, *references.values()),
        codes=tuple(first["plan"]["pos"]),
        accuracy=_accuracies(folders, plan["size"]),
    )


def load_blind_far_transfer(far: FarTransfer, name: str = "cpu-transfer-far") -> FarTransfer:
    """``far`` read on blind seeds only: ``name``-blind and the world reference's blind folder
    merged in (seed 5 of every cell left with fewer than five seeds no pilot ran, trained after
    the run), every run equal to a pilot run (:func:`find_pilot_twins`) dropped with its moves,
    and each cell cut to its first :data:`BLIND` remaining seeds, so every planned comparison
    reads five seeds a side that the predictions did not know."""
    world, scaled = far.plan["references"]["world"], far.plan["references"]["scaled"]
    blind_folder = related_folder(find_results(name), f"{name}-blind")
    world_folder = related_folder(find_results(name), f"{world}-blind")
    blind, blind_moves = _checked(blind_folder)
    world_blind = load_results(world_folder)
    check_against_table(world_folder, world_blind)
    check_added_seeds((far.records[0], blind), (far.references["world"], world_blind))
    sides = {None: [name, f"{name}-more", f"{name}-blind"], "world": [world, f"{world}-blind"]}
    sides["scaled"] = [scaled]
    twins = find_pilot_twins([folder for folders in sides.values() for folder in folders])
    pilots = {
        side: {t.run for t in twins if t.folder in folders} for side, folders in sides.items()
    }
    before = _first_blind(merge_runs(far.before, blind), pilots[None])
    references = {**far.references, "world": merge_runs(far.references["world"], world_blind)}
    references = {side: _first_blind(ref, pilots[side]) for side, ref in references.items()}
    # a run's accuracy and moves are kept where its run is: a move's where its 32-px run is
    runs: dict[str | None, list] = {None: before["runs"]}
    runs |= {side: ref["runs"] for side, ref in references.items()}
    present = {(r["pos"], side, r["seed"]) for side, found in runs.items() for r in found}
    accuracy = _accuracies([blind_folder, world_folder], far.plan["size"], far.accuracy)
    rows = far.rows + blind_moves["rows"]
    return FarTransfer(
        before=before,
        rows=[r for r in rows if (r["pos"], None, r["seed"]) in present],
        references=references,
        plan=far.plan,
        records=(*far.records, blind, blind_moves, world_blind),
        codes=far.codes,
        accuracy={
            key: value
            for key, value in accuracy.items()
            if (key[0], key[1] if key[2] == "trained" else None, key[4]) in present
        },
    )


def _first_blind(results: dict[str, Any], pilots: set[str]) -> dict[str, Any]:
    """``results`` with each cell's runs cut to its first :data:`BLIND` seeds outside ``pilots``
    (run keys)."""
    by_cell: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in sorted(results["runs"], key=lambda r: r["seed"]):
        if run_key(run["dataset"], run["pos"], run["seed"], run["variant"]) not in pilots:
            by_cell.setdefault((run["dataset"], run["pos"], run["variant"]), []).append(run)
    return {**results, "runs": [r for cell in by_cell.values() for r in cell[:BLIND]]}


def merge_runs(*results: dict[str, Any]) -> dict[str, Any]:
    """One ``results.json`` (``{"runs", "test_sets"}``) from several of one ablation (extra seeds
    trained later), refusing other test labels of a dataset."""
    test_sets: dict[str, Any] = {}
    for r in results:
        for dataset, sets in r["test_sets"].items():
            if test_sets.setdefault(dataset, sets) != sets:
                raise ValueError(f"the records' {dataset!r} test sets (labels) differ")
    return {"runs": [run for r in results for run in r["runs"]], "test_sets": test_sets}
