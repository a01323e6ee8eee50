"""Chapter 6's far-relation transfer as one :class:`FarTransfer`: its folders read, verified and
merged (:func:`load_far_transfer`; on blind seeds only, :func:`load_blind_far_transfer`), and
what the record table says of every run.

``results/run_cpu_transfer_far.sh`` writes ``cpu-transfer-far`` (seeds 0-4 of every code at
32 px, their moves and the committed ``predictions.md``), ``cpu-transfer-far-more`` (seeds 5-9
of the codes whose 32-px cell split, with their moves) and the references the predictions name.
Loading walks down the package once: this module alone calls the results' readers (every file
verified there), the predictions' parser and the record table, whose counts decide every
"solved" (which 32-px cells split, too), never the per-image bits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from companion.experiments.integrity import ResultsError, whole_folders
from companion.experiments.pilots import find_pilot_twins
from companion.experiments.predictions import (
    PREDICTIONS,
    is_split_cell,
    parse_far_transfer_predictions,
    test_labels,
    with_counts,
)
from companion.experiments.records import check_against_table, load_table, results_tree
from companion.experiments.related import check_added_seeds, check_one_run, related_folder
from companion.experiments.resolution_transfer import WINDOW_GROWN, WINDOW_KEPT, grown_condition
from companion.experiments.results import (
    describe_run,
    find_results,
    load_results,
    load_transfer,
    read_text,
    run_key,
)
from companion.experiments.split_reading import accuracy_table, glance_entry

DATASET = "far-relation"
#: The blind seeds a cell is read on: its first five that no pilot run equals.
BLIND = 5


#: ``(code, rendering, condition, metric, seed)``: a run's place in :attr:`FarTransfer.accuracy`.
Key = tuple[str, str | None, str, str, int]


@dataclass(frozen=True)
class FarTransfer:
    """The experiment's records, verified and merged.

    ``before``: the 32-px runs (``{"runs", "test_sets"}``, the extra seeds merged in, the table's
    counts attached); ``rows``: every move's ``transfer.json`` rows; ``references``:
    ``{rendering: results.json}`` trained at ``plan["size"]`` px; ``plan``: the predictions'
    block; ``records``: each ablation and transfer record as read (for :func:`describe_run`);
    ``codes``: the codes trained at 32 px, in the plan's order; ``accuracy``: every run's test
    accuracy read from the record table (:func:`accuracies` reads it)."""

    before: dict[str, Any]
    rows: list[dict[str, Any]]
    references: dict[str, dict[str, Any]]
    plan: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    codes: tuple[str, ...]
    accuracy: dict[Key, float]

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

    def accuracies(
        self,
        pos: str,
        rendering: str | None = None,
        condition: str = "trained",
        metric: str = "acc",
    ) -> dict[int, float]:
        """``{seed: test accuracy}``, seeds in order: ``pos``'s 32-px runs (no ``rendering``), or
        in ``rendering`` at the plan's size its moves (``condition``, ``metric``) or its reference
        (``"trained"``)."""
        cell = (pos, rendering, condition, metric)
        return dict(sorted((k[-1], v) for k, v in self.accuracy.items() if k[:-1] == cell))

    def seeds(self, pos: str, rendering: str | None = None) -> tuple[list[int], list[int]]:
        """``(reached, all)``, sorted: the seeds of ``pos`` at 32 px that solved the task (the
        plan's ``solved.threshold``), or of its reference in ``rendering`` that learned it
        (``learned.threshold``), and every seed."""
        found = self.accuracies(pos, rendering)
        threshold = self.threshold if rendering is None else self.plan["learned"]["threshold"]
        return [s for s, value in found.items() if value >= threshold], list(found)


def far_glance(far: FarTransfer, renderings: Sequence[str] = ("world", "scaled")) -> str:
    """Markdown: each code's lift over the constant answer at 32 px, and in each rendering moved
    (window kept, and grown to the code's own :func:`grown_condition`) and trained at the plan's
    size, from the record table's accuracies, as its footnote says."""
    size, threshold, constants = far.plan["size"], far.threshold, far.constants()
    head = ["code", "32 px"]
    for rendering in renderings:
        for condition in (WINDOW_KEPT, WINDOW_GROWN):
            short = condition.removeprefix("window-")
            head += [f"{rendering}, {short}", f"{rendering}, {short}, ft"]
        head.append(f"{rendering}, ref")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    labels = test_labels(far.before, DATASET, "test")
    for pos in far.codes:
        solved = far.seeds(pos)[0]
        entries = [f"`{pos}`", _entry(far.accuracies(pos), np.bincount(labels).max() / len(labels),
                                      threshold)]  # fmt: skip
        for rendering in renderings:
            for condition in (WINDOW_KEPT, grown_condition(pos)):
                for metric in ("acc", "acc_finetuned"):
                    moved = far.accuracies(pos, rendering, condition, metric)
                    entries.append(_entry(moved, constants[rendering], threshold, solved))
            reference = far.accuracies(pos, rendering)
            entries.append(_entry(reference, constants[rendering], threshold) if reference else "—")
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
    accuracy: Mapping[int, float], constant: float, threshold: float,
    solved_at_32: Collection[int] | None = None,
) -> str:  # fmt: skip
    """A glance entry of ``{seed: accuracy}``. Where the seeds of a code split at 32 px
    (``solved_at_32``: those that solved), each group is its own entry: a moved model of a seed
    that never solved had nothing to keep."""
    if solved_at_32 is not None:
        solved = {s: a for s, a in accuracy.items() if s in solved_at_32}
        other = {s: a for s, a in accuracy.items() if s not in solved_at_32}
        if solved and other:
            parts = [(len(group), name, _entry(group, constant, threshold))
                     for group, name in ((solved, "solved"), (other, "not"))]  # fmt: skip
            return " · ".join(f"{k} {name} at 32 px: " + (f"({e})" if " · " in e else e)
                              for k, name, e in parts)  # fmt: skip
    values = np.array(list(accuracy.values()))
    return glance_entry(100 * (values - constant), values >= threshold)


@whole_folders
def _checked(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A folder's ``results.json`` and ``transfer.json``, each as the record table holds it, each
    run with its counts from the table (:func:`with_counts`)."""
    results = load_results(folder)
    moves = load_transfer(folder, results)
    check_against_table(folder, results)
    check_against_table(folder, moves, before=results)
    return with_counts(results, load_table(results_tree(folder))), moves


def _accuracies(folders: Sequence[Path], size: int) -> dict[Key, float]:
    """:attr:`FarTransfer.accuracy` of the far-relation test split of ``folders`` (32-px runs, their
    moves at ``size`` px, references trained at ``size`` px): ``correct / total`` of the record
    table's rows, which the folders were just checked against."""
    names, found = {folder.name for folder in folders}, {}
    for row in load_table(results_tree(folders[0])):
        wanted = row["experiment"] in names and (row["task"], row["split"]) == (DATASET, "test")
        if wanted and (row["record"] == "results" or row["size"] == size):  # no 32-px moves
            rendering = row["rendering"] if row["size"] == size else None
            key = (row["code"], rendering, row["condition"], row["metric"], row["seed"])
            found[key] = row["correct"] / row["total"]
    return found


def check_references(references: Mapping[str, dict[str, Any]], names: Mapping[str, str]) -> None:
    """Refuse a reference ablation (``references``: ``{rendering: results.json}``, ``names``:
    rendering -> folder) not trained in its rendering."""
    for rendering, results in references.items():
        drawn = {r["settings"].get("rendering", "scaled") for r in results["runs"]}
        if drawn != {rendering}:
            raise ValueError(
                f"{names[rendering]}: its runs were drawn in {sorted(drawn)}, not in "
                f"{rendering!r}; check the predictions' references"
            )


@whole_folders
def load_far_transfer(name: str = "cpu-transfer-far") -> FarTransfer:
    """Every folder of the experiment (:func:`find_results` finds ``name``; the extra seeds in
    ``name``-more, needed exactly when a 32-px cell split; the references beside it), verified
    against their ``SHA256SUMS`` and the record table (every count and per-image bits' hash),
    and merged."""
    folder = find_results(name)
    plan = parse_far_transfer_predictions(read_text(folder, PREDICTIONS), folder / PREDICTIONS)
    first, moves = _checked(folder)
    ablations, transfers, folders = [first], [moves], [folder]
    rule = {"split": "test", "threshold": plan["solved"]["threshold"]}
    split = [pos for pos in first["plan"]["pos"] if is_split_cell(first, f"{DATASET}:{pos}", rule)]
    if split:
        more_folder = related_folder(folder, f"{name}-more")  # in the same results tree
        folders.append(more_folder)
        more, more_moves = _checked(more_folder)
        if list(more["plan"]["pos"]) != split:
            raise ResultsError(f"{more_folder} trained {more['plan']['pos']}, but the cells that "
                               f"split in {folder} are {split}")  # fmt: skip
        ablations.append(more)
        transfers.append(more_moves)
    references = {r: load_results(folder.parent / n) for r, n in plan["references"].items()}
    check_references(references, plan["references"])
    for rendering, reference in references.items():
        check_against_table(folder.parent / plan["references"][rendering], reference)
    check_one_run(ablations, list(references.values()))  # one code, the same settings
    folders += [folder.parent / n for n in plan["references"].values()]
    return FarTransfer(before=merge_runs(*ablations), rows=merge_rows(*transfers),
                       references=references, plan=plan,
                       records=(*ablations, *transfers, *references.values()),
                       codes=tuple(first["plan"]["pos"]),
                       accuracy=_accuracies(folders, plan["size"]))  # fmt: skip


@whole_folders
def load_blind_far_transfer(far: FarTransfer, name: str = "cpu-transfer-far") -> FarTransfer:
    """``far`` read on blind seeds only: ``name``-blind and the world reference's blind folder
    merged in (seed 5 of every cell left with fewer than five seeds no pilot ran, trained after
    the run), every run equal to a pilot run (:func:`find_pilot_twins`) dropped with its moves,
    and each cell cut to its first :data:`BLIND` remaining seeds, so every planned comparison
    reads five seeds a side that the predictions did not know."""
    world, scaled = far.plan["references"]["world"], far.plan["references"]["scaled"]
    blind_folder = related_folder(find_results(name), f"{name}-blind")
    blind, blind_moves = _checked(blind_folder)
    world_blind_folder = related_folder(find_results(name), f"{world}-blind")
    world_blind = load_results(world_blind_folder)
    check_against_table(world_blind_folder, world_blind)
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
    references = {r: _first_blind(ref, pilots[r]) for r, ref in references.items()}
    # a run's accuracy is kept where its run is: a move's where its 32-px run is
    runs: dict[str | None, list] = {None: before["runs"]}
    runs |= {side: ref["runs"] for side, ref in references.items()}
    present = {(r["pos"], side, r["seed"]) for side, found in runs.items() for r in found}
    accuracy = {**far.accuracy, **_accuracies([blind_folder, world_blind_folder], far.plan["size"])}
    return FarTransfer(
        before=before,
        rows=[r for r in rows if (r["dataset"], r["pos"], r["seed"]) in kept],
        references=references,
        plan=far.plan,
        records=(*far.records, blind, blind_moves, world_blind),
        codes=far.codes,
        accuracy={key: value for key, value in accuracy.items()
                  if (key[0], key[1] if key[2] == "trained" else None, key[4]) in present},
    )  # fmt: skip


def _first_blind(results: dict[str, Any], pilots: set[str]) -> dict[str, Any]:
    """``results`` with each cell's runs cut to its first :data:`BLIND` seeds outside
    ``pilots`` (run keys)."""
    by_cell: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in sorted(results["runs"], key=lambda r: r["seed"]):
        dataset, pos, variant = run["dataset"], run["pos"], run.get("variant", "swin")
        if run_key(dataset, pos, run["seed"], variant) not in pilots:
            by_cell.setdefault((dataset, pos, variant), []).append(run)
    return {**results, "runs": [r for cell in by_cell.values() for r in cell[:BLIND]]}


def _merge(
    records: Sequence[dict[str, Any]], key: Callable[[Mapping[str, Any]], tuple[Any, ...]]
) -> list[dict]:
    """The records in order, refusing a cell and seed (``key(record)``, the seed last) met twice."""
    seen: set[tuple[Any, ...]] = set()
    for r in records:
        if key(r) in seen:
            cell = ":".join(str(v) for v in key(r)[:-1])
            raise ValueError(f"cell {cell} seed {r['seed']} is in more than one record")
        seen.add(key(r))
    return list(records)


def merge_runs(*results: dict[str, Any]) -> dict[str, Any]:
    """One results.json from several of one ablation (extra seeds trained later): ``{"runs",
    "test_sets"}``, the runs concatenated, the test sets the first record's (a later one's must be
    identical on the datasets both hold); a cell's seed in two records is refused."""
    test_sets: dict[str, Any] = {}
    for r in results:
        for dataset, sets in r["test_sets"].items():
            if test_sets.setdefault(dataset, sets) != sets:
                raise ValueError(f"the records' {dataset!r} test sets (labels) differ")
    runs = _merge(
        [run for r in results for run in r["runs"]],
        lambda run: (run["dataset"], run["pos"], run.get("variant", "swin"), run["seed"]),
    )
    return {"runs": runs, "test_sets": test_sets}


def merge_rows(*transfers: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of several transfer.json records concatenated; a seed of a cell (dataset, pos,
    rendering, size, condition, variant) in two records is refused."""
    return _merge(
        [row for t in transfers for row in t["rows"]],
        lambda r: (r["dataset"], r["pos"], r.get("rendering", "scaled"), r["size"],
                   r["condition"], r.get("variant", "swin"), r["seed"]),
    )  # fmt: skip
