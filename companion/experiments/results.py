"""Reading an ablation's results folder back (:mod:`companion.experiments.runs.ablation` writes
it; :func:`result_places` says where the chapters find it), and the tables the book prints from it.

Nothing is read unverified (:mod:`companion.experiments.integrity`): every file is checked against
the folder's ``SHA256SUMS``; every run, with its curve, against the ``record_sha256`` the run
sealed (which covers its per-image results, final metrics and settings); the runs against the
plan; the summary against the runs it is computed from; the test labels against the hashes the
runs sealed; a bias table against the hash its run recorded. A mismatch is a one-line
``ResultsError`` naming the file.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from companion.experiments.integrity import (
    ResultsError,
    is_sealed,
    read_manifest,
    verified_bytes,
    verified_json,
    verified_tensors,
    whole_folders,
)
from companion.experiments.related import refuse_other_trees
from companion.position import Position
from companion.train.provenance import PACKAGE_DIR

#: What is computed from a results folder's runs, in that folder (the resolution experiment's):
#: kept, rebuilt or refused together with the runs it came from.
DERIVED = ("transfer.json", "transfer.md")


def _cell(dataset: str, pos: str | Position, variant: str) -> str:
    return f"{dataset}__{pos}" + ("" if variant == "swin" else f"__{variant}")


def run_key(dataset: str, pos: str | Position, seed: int, variant: str = "swin") -> str:
    """A run's file name: ``grid-cell__rel__seed0``, with ``__<variant>`` added before the seed
    for a controlled variant (``grid-cell__rel__torus__seed0``)."""
    return f"{_cell(dataset, pos, variant)}__seed{seed}"


def _variant(run: dict[str, Any]) -> str:
    return run.get("variant", "swin")


def _run_key(run: dict[str, Any]) -> str:
    """:func:`run_key` of a run as its record holds it."""
    return run_key(run["dataset"], run["pos"], run["seed"], _variant(run))


def run_sources(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``run key -> {"record_sha256", "checkpoint_sha256"}`` of ``results``' runs: the content
    hashes a derived result records to name what it was computed from (``None`` before hashes)."""
    hashes = ("record_sha256", "checkpoint_sha256")
    return {_run_key(r): {h: r.get(h) for h in hashes} for r in results["runs"]}


def cell_label(pos: str, variant: str = "swin") -> str:
    """How a cell of one dataset is named in tables and gaps: ``rel``, or ``rel:torus``."""
    return pos if variant == "swin" else f"{pos}:{variant}"


def summarize(runs: Sequence[dict[str, Any]], metric: str = "test_acc") -> list[dict[str, Any]]:
    """One row per dataset x pos x variant: the final ``metric`` of each seed (``seeds`` and
    ``values``, in the same order), their mean and sample standard deviation (``n - 1``;
    ``None`` for a single seed)."""
    groups: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["pos"], _variant(r)), []).append(
            (r["seed"], r["final"][metric])
        )
    rows = []
    for (dataset, pos, variant), pairs in groups.items():
        seeds, values = [s for s, _ in pairs], [v for _, v in pairs]
        # One seed has no spread: None, never a 0 that reads as "no variation".
        std = statistics.stdev(values) if len(values) > 1 else None
        rows.append({"dataset": dataset, "pos": pos, "variant": variant, "n": len(values),
                     "mean": statistics.fmean(values), "std": std, "seeds": seeds,
                     "values": values})  # fmt: skip
    return rows


def mean_std(row: dict[str, Any], scale: float = 1.0, spec: str = ".3f") -> str:
    """``"mean ± std"`` of a summary row, scaled; just the mean for one seed (``std`` ``None``)."""
    mean = format(scale * row["mean"], spec)
    return mean if row["std"] is None else f"{mean} ± {format(scale * row['std'], spec)}"


def result_places() -> list[Path]:
    """Where the chapters find ``results/``: the current directory, its parent (the book's
    notebooks run in ``book/``), the installed package (``companion/book_results``, the package
    data a plain install such as Colab's ships) and beside the package (a clone, an editable
    install). No network: the results travel with the package."""
    here = Path.cwd()
    return [here / "results", here.parent / "results", PACKAGE_DIR / "book_results",
            PACKAGE_DIR.parent / "results"]  # fmt: skip


def find_results(name: str, search: Sequence[Path] | None = None) -> Path:
    """The folder ``results/<name>`` (one with a ``results.json``), in the first of ``search``
    (by default :func:`result_places`) that holds it."""
    places = result_places() if search is None else search
    for place in places:
        if (Path(place) / name / "results.json").is_file():
            return Path(place) / name
        refuse_other_trees(place, name)  # the first results tree is the only one searched
    raise FileNotFoundError(
        f"no results {name!r} (a results/{name}/results.json) in any of "
        f"{[str(p) for p in places]}; the companion package ships the book's results: "
        "reinstall it, or run from a clone of the book's repository"
    )


def load_results(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``results.json`` of an ablation folder, verified with its runs' curves (module docstring)."""
    return check_results(folder)[0]


@whole_folders
def check_results(
    folder: str | os.PathLike[str], read: Callable[[Path, str], Any] = verified_json
) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """``results.json`` and every run's curve (``{run key: epochs}``), each file read with
    ``read`` (by default checked against ``SHA256SUMS``), then checked as the module says."""
    folder = Path(folder)
    path = folder / "results.json"
    results = read(folder, "results.json")
    try:
        curves = {}
        for run in results["runs"]:
            key = _run_key(run)
            curves[key] = read(folder, f"curves/{key}.json")["epochs"]
            if not is_sealed({**run, "epochs": curves[key]}):
                raise ResultsError(
                    f"{path}: run {key} with curves/{key}.json does not match the "
                    f"record_sha256 the run sealed (its results or its curve were changed)"
                )
        planned, found = planned_runs(results["plan"]), set(curves)
        if planned != found:
            missing, extra = sorted(planned - found), sorted(found - planned)
            raise ResultsError(
                f"{path}: its runs are not its plan's (missing {missing[:3]}, not planned "
                f"{extra[:3]}): runs were removed or added"
            )
        if summarize(results["runs"]) != results["summary"]:
            raise ResultsError(
                f"{path}: its summary is not the one its runs give (the summary was changed)"
            )
        _check_test_sets(results, path)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ResultsError(
            f"{path} is not an ablation's results ({type(exc).__name__}: {exc})"
        ) from None
    return results, curves


def _check_test_sets(results: dict[str, Any], path: Path) -> None:
    """Refuse test labels that are not the ones the runs were measured on: each ``test_sets``
    entry must hash to its ``labels_sha256``, hold ``n`` labels whose most frequent one is its
    ``constant_answer``, and agree with the ``labels_sha256`` and ``n`` every run sealed, so an
    edit of the labels with the hash list made to match (which would move every "constant
    answer" reading) is refused. A record that keeps no test sets has none to check."""
    sets = results.get("test_sets")
    if sets is None:
        return
    for dataset, splits in sets.items():
        for split, kept in splits.items():
            labels = kept["labels"]
            if hashlib.sha256(labels.encode()).hexdigest() != kept["labels_sha256"]:
                raise ResultsError(f"{path}: the {dataset} {split} labels do not match "
                                   "their labels_sha256 (the labels were changed)")  # fmt: skip
            if not labels:  # no images, no constant answer: refused, never read as one of 0
                raise ResultsError(f"{path}: the {dataset} {split} test set has no labels")
            constant = max(map(labels.count, set(labels))) / len(labels)
            if (kept["n"], kept["constant_answer"]) != (len(labels), constant):
                raise ResultsError(f"{path}: the {dataset} {split} test set's n or constant "
                                   "answer is not its labels' (it was changed)")  # fmt: skip
    for run in results["runs"]:
        for split, got in run["splits"].items():
            kept = sets[run["dataset"]][split]
            sealed = (got.get("labels_sha256", kept["labels_sha256"]), got["n"])
            if sealed != (kept["labels_sha256"], kept["n"]):  # (runs from before sealed none)
                raise ResultsError(
                    f"{path}: the {run['dataset']} {split} labels are not the ones its runs "
                    f"sealed (labels_sha256 in their records): the test set was changed"
                )


def read_text(folder: str | os.PathLike[str], name: str) -> str:
    """``folder/name`` as text (a ``predictions.md``), checked against ``SHA256SUMS``."""
    return verified_bytes(folder, name).decode("utf-8")


@whole_folders
def load_transfer(folder: str | os.PathLike[str], results: dict[str, Any]) -> dict[str, Any]:
    """``transfer.json`` of an ablation folder whose ``results.json`` is ``results`` (as loaded),
    checked against ``SHA256SUMS``, its own ``record_sha256`` and ``results``' runs (its
    ``sources``): the moved models are those runs."""
    path = Path(folder) / DERIVED[0]
    moves = verified_json(folder, DERIVED[0])
    if "record_sha256" in moves and not is_sealed(moves):  # sealed since records were
        raise ResultsError(f"{path} does not match its record_sha256")
    if moves.get("sources") != run_sources(results):
        raise ResultsError(
            f"{path} was computed from other runs than the results.json beside it holds"
        )
    return moves


def planned_runs(plan: dict[str, Any]) -> set[str]:
    """The run keys a ``results.json``'s ``plan`` names: every dataset x pos x seed in its
    variant, and each extra cell (``dataset:pos:variant``) for its ``extra_seeds``."""
    variant, seeds = _variant(plan), plan["seeds"]
    cells = [(d, p, variant, seeds) for d in plan["datasets"] for p in plan["pos"]]
    cells += [(*c.split(":"), plan.get("extra_seeds") or seeds) for c in plan.get("extra", [])]
    return {run_key(d, p, s, v) for d, p, v, cell_seeds in cells for s in cell_seeds}


def load_curves(
    folder: str | os.PathLike[str], variant: str | None = "swin"
) -> dict[tuple, list[dict]]:
    """Every run's per-epoch records: of ``variant``'s runs keyed by ``(dataset, pos, seed)``, or
    with ``variant=None`` of every run keyed by ``(dataset, pos, variant, seed)``."""
    results, saved = check_results(folder)
    cells = {_run_key(r): (r["dataset"], r["pos"], _variant(r), r["seed"]) for r in results["runs"]}
    if variant is None:
        return {cell: saved[key] for key, cell in cells.items()}
    return {(d, p, s): saved[key] for key, (d, p, v, s) in cells.items() if v == variant}


def bias_file(dataset: str, pos: str, variant: str = "swin") -> str:
    """A cell's bias tables in a results folder: ``bias/<dataset>__<pos>[__<variant>].pt``."""
    return f"bias/{_cell(dataset, pos, variant)}.pt"


@whole_folders
def load_bias_tables(
    folder: str | os.PathLike[str], dataset: str, pos: str, variant: str = "swin"
) -> dict[str, Any]:
    """The bias tables saved for ``dataset``, ``pos`` and ``variant``, in the signed-offset layout
    (``companion.experiments.runs.ablation.bias_tables``)."""
    name = bias_file(dataset, pos, variant)
    results = load_results(folder)
    if name not in results.get("bias_files", []):
        raise FileNotFoundError(
            f"no bias tables for dataset={dataset!r}, pos={pos!r}, variant={variant!r} in "
            f"{folder} (they are saved for the first seed of each cell whose model has relative "
            f"position bias tables)"
        )
    tables = verified_tensors(folder, name)
    runs = [r for r in results["runs"] if bias_file(r["dataset"], r["pos"], _variant(r)) == name]
    # The hash the run sealed into its record (runs from before recorded none).
    sealed = {r.get("bias_sha256") for r in runs} - {None}
    if sealed and read_manifest(folder)[name] not in sealed:  # checked against the file above
        raise ResultsError(f"{Path(folder) / name} is not the table its run recorded")
    return tables


#: Width of the book's code and output column, in characters (the lint limit, pyproject.toml).
LINE = 100


def describe_run(record: dict[str, Any], budget: bool = True) -> str:
    """The header of ``record`` (a ``results.json`` or ``transfer.json`` as loaded) as the lines
    the book prints under an experiment: command, hardware, software, commit, date and wall time;
    with ``budget``, also the model and the training budget of its plan."""
    header, git = record["header"], record["header"]["git"]
    # Wrapped at spaces only: an option such as --extra grid-cell:rel:torus stays whole.
    command = textwrap.wrap(header["command"], LINE, initial_indent="command : ",
                            subsequent_indent=" " * 10, break_on_hyphens=False,
                            break_long_words=False)  # fmt: skip
    at_once = f", {header['jobs']} runs at a time" if "jobs" in header else ""
    if "threads_per_run" in header:
        at_once += f", {header['threads_per_run']} thread(s) each"
    lines = [
        *command,
        f"hardware: {header['cpu']} ({header['cpu_count']} cores visible) | GPU: {header['gpu']}",
        f"software: torch {header['torch']} | Python {header['python']}",
        f"code    : commit {git['commit']} | uncommitted changes: {git['dirty']}",
        f"date    : {header['date_utc']} | wall time {header['wall_s'] / 60:.1f} min{at_once}",
    ]
    if budget and "train" in record.get("plan", {}):
        plan, train = record["plan"], record["plan"]["train"]
        extra = f" | variants on seeds {plan['extra_seeds']}" if plan.get("extra_seeds") else ""
        lines += [
            f"model   : {train['config']} | seeds {plan['seeds']}{extra}",
            f"budget  : {train['epochs']} epochs of {train['train_size']} images, batch "
            f"{train['batch_size']}, lr {train['lr']}, test on {train['test_size']} images",
        ]
        if train.get("curriculum_epochs"):
            lines.append(f"schedule: the first {train['curriculum_epochs']} epochs on the "
                         "distance-1 training images only")  # fmt: skip
    return "\n".join(lines)
