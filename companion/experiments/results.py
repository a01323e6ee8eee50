"""Reading an ablation's results folder back (``runs.ablation`` writes it), and its tables.

Nothing is read unverified: every file against the folder's ``SHA256SUMS`` (:mod:`.integrity`);
every run, with its curve, against the ``record_sha256`` the run sealed (its per-image results,
final metrics and settings); the summary against the runs; the test labels against the hashes
the runs sealed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import statistics
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from companion.experiments.integrity import ResultsError, is_sealed, read_folder, verified
from companion.experiments.related import refuse_other_trees
from companion.position import Position
from companion.train.provenance import PACKAGE_DIR

#: What is computed from a folder's runs, in that folder: kept or refused together with them.
DERIVED = ("transfer.json", "transfer.md")
#: Width of the book's code and output column, in characters (the lint limit, pyproject.toml).
LINE = 100


def _cell(dataset: str, pos: str | Position, variant: str) -> str:
    return f"{dataset}__{pos}" + ("" if variant == "swin" else f"__{variant}")


def run_key(dataset: str, pos: str | Position, seed: int, variant: str = "swin") -> str:
    """A run's file name: ``grid-cell__rel__seed0``, or ``grid-cell__rel__torus__seed0``."""
    return f"{_cell(dataset, pos, variant)}__seed{seed}"


def _run_key(run: dict[str, Any]) -> str:
    return run_key(run["dataset"], run["pos"], run["seed"], run.get("variant", "swin"))


def run_sources(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``run key -> {"record_sha256", "checkpoint_sha256"}``: what a derived result came from."""
    hashes = ("record_sha256", "checkpoint_sha256")
    return {_run_key(r): {h: r.get(h) for h in hashes} for r in results["runs"]}


def cell_label(pos: str, variant: str = "swin") -> str:
    """How a cell of one dataset is named in tables and gaps: ``rel``, or ``rel:torus``."""
    return pos if variant == "swin" else f"{pos}:{variant}"


def summarize(runs: Sequence[dict[str, Any]], metric: str = "test_acc") -> list[dict[str, Any]]:
    """Per dataset x pos x variant: each seed's final ``metric`` (``seeds``, ``values``), their mean
    and sample standard deviation (``n - 1``; ``None`` for one seed)."""
    groups: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for r in runs:
        cell = (r["dataset"], r["pos"], r.get("variant", "swin"))
        groups.setdefault(cell, []).append((r["seed"], r["final"][metric]))
    rows = []
    for (dataset, pos, variant), pairs in groups.items():
        seeds, values = [s for s, _ in pairs], [v for _, v in pairs]
        # One seed has no spread: None, never a 0 that reads as "no variation".
        std = statistics.stdev(values) if len(values) > 1 else None
        row: dict[str, Any] = {"dataset": dataset, "pos": pos, "variant": variant, "n": len(values)}
        row.update(mean=statistics.fmean(values), std=std, seeds=seeds, values=values)
        rows.append(row)
    return rows


def mean_std(row: dict[str, Any], scale: float = 1.0, spec: str = ".3f") -> str:
    """``"mean ± std"`` of a summary row, scaled; just the mean for one seed."""
    mean = format(scale * row["mean"], spec)
    return mean if row["std"] is None else f"{mean} ± {format(scale * row['std'], spec)}"


def result_places() -> list[Path]:
    """Where the chapters find ``results/``: here, above, in and beside the installed package."""
    cwd, pkg = Path.cwd(), PACKAGE_DIR
    return [cwd / "results", cwd.parent / "results", pkg / "book_results", pkg.parent / "results"]


def find_results(name: str, search: Sequence[Path] | None = None) -> Path:
    """``results/<name>`` from the first of ``search`` (default: :func:`result_places`) with it."""
    places = result_places() if search is None else search
    for place in places:
        if (Path(place) / name / "results.json").is_file():
            return Path(place) / name
        refuse_other_trees(place, name)  # the first results tree is the only one searched
    where = [str(p) for p in places]
    raise FileNotFoundError(f"no results {name!r} in any of {where}: reinstall the package")


def load_results(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``results.json`` of an ablation folder, verified with its runs' curves (module docstring)."""
    return check_results(folder)[0]


def check_results(
    folder: str | os.PathLike[str], read: Callable[[Path, str], Any] | None = None
) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """``results.json`` and its curves by run key, read with ``read`` (by default verified, from
    one reading of the folder), checked as the module docstring says."""
    folder, path = Path(folder), Path(folder) / "results.json"
    read = read or functools.partial(verified, files=read_folder(folder))
    results = read(folder, "results.json")
    try:
        curves = {}
        for run in results["runs"]:
            key = _run_key(run)
            curves[key] = read(folder, f"curves/{key}.json")["epochs"]
            if not is_sealed({**run, "epochs": curves[key]}):
                raise ResultsError(f"{path}: run {key} does not match its record_sha256")
        if summarize(results["runs"]) != results["summary"]:
            raise ResultsError(f"{path}: its summary is not the one its runs give")
        _check_test_sets(results, path)
    except (KeyError, TypeError, AttributeError, ZeroDivisionError) as exc:  # (0: no labels)
        raise ResultsError(f"{path} is not an ablation's results ({exc!r})") from None
    return results, curves


def _check_test_sets(results: dict[str, Any], path: Path) -> None:
    """Refuse test labels other than the ones the runs were measured on: each set's labels give
    its ``labels_sha256``, ``n`` and ``constant_answer`` (the most frequent label's share, the
    baseline a lift is read against), and every run sealed that hash (a run from before, none)."""
    for run in results["runs"] if "test_sets" in results else []:
        for split, got in run["splits"].items():
            kept = results["test_sets"][run["dataset"]][split]
            labels, what = kept["labels"], f"{path}: the {run['dataset']} {split} labels"
            found = (hashlib.sha256(labels.encode()).hexdigest(), len(labels))
            constant = max(map(labels.count, set(labels)), default=0) / len(labels)
            if found != (kept["labels_sha256"], kept["n"]) or constant != kept["constant_answer"]:
                raise ResultsError(f"{what}' hash, n or constant answer were changed")
            if (got.get("labels_sha256", found[0]), got["n"]) != found:
                raise ResultsError(f"{what} are not the ones its runs sealed")


def read_text(folder: str | os.PathLike[str], name: str) -> str:
    """``folder/name`` as text (a ``predictions.md``), verified."""
    return verified(folder, name)


def load_transfer(folder: str | os.PathLike[str], results: dict[str, Any]) -> dict[str, Any]:
    """``transfer.json`` beside ``results``, verified, matching its own ``record_sha256`` and
    computed from exactly ``results``' runs."""
    path = Path(folder) / DERIVED[0]
    moves = verified(folder, DERIVED[0])
    if "record_sha256" in moves and not is_sealed(moves):  # sealed since records were
        raise ResultsError(f"{path} does not match its record_sha256")
    if moves.get("sources") != run_sources(results):
        raise ResultsError(f"{path} was computed from other runs than the results.json beside it")
    return moves


def load_curves(
    folder: str | os.PathLike[str], variant: str | None = "swin"
) -> dict[tuple, list[dict]]:
    """Per-epoch records by ``(dataset, pos, seed)`` of ``variant`` (``None``: all, by variant)."""
    results, saved = check_results(folder)
    cells = {
        _run_key(r): (r["dataset"], r["pos"], r.get("variant", "swin"), r["seed"])
        for r in results["runs"]
    }
    if variant is None:
        return {cell: saved[key] for key, cell in cells.items()}
    return {(d, p, s): saved[key] for key, (d, p, v, s) in cells.items() if v == variant}


def bias_file(dataset: str, pos: str, variant: str = "swin") -> str:
    """A cell's bias tables in a results folder: ``bias/<dataset>__<pos>[__<variant>].pt``."""
    return f"bias/{_cell(dataset, pos, variant)}.pt"


def load_bias_tables(
    folder: str | os.PathLike[str], dataset: str, pos: str, variant: str = "swin"
) -> dict[str, Any]:
    """The cell's bias tables, verified, in the signed-offset layout (``runs.ablation``)."""
    name = bias_file(dataset, pos, variant)
    if name not in load_results(folder).get("bias_files", []):
        raise FileNotFoundError(f"no bias tables for {dataset=}, {pos=}, {variant=} in {folder}")
    return verified(folder, name)


def describe_run(record: dict[str, Any], budget: bool = True) -> str:
    """``record``'s header as the book prints it (with ``budget``, also its model and budget)."""
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
            first = f"the first {train['curriculum_epochs']} epochs"
            lines.append(f"schedule: {first} on the distance-1 training images only")
    return "\n".join(lines)
