"""Reading an ablation's results folder back, and the tables the book prints from it.

(Written by :mod:`companion.ablation`; read here, also by readers who installed only the package,
e.g. on Colab, who get the published folder downloaded from the book's repository.)
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from companion import _repository
from companion._io import atomic_write, atomic_write_json

PACKAGE_DIR = Path(__file__).resolve().parent
BIAS_POS = ("rel", "abs+rel")  # the variants of the committed results that have bias tables


def run_key(dataset: str, pos: str, seed: int) -> str:
    return f"{dataset}__{pos}__seed{seed}"


def summarize(runs: Sequence[dict[str, Any]], metric: str = "test_acc") -> list[dict[str, Any]]:
    """Mean and sample standard deviation (``n - 1``) of the final ``metric`` per dataset x pos."""
    rows = []
    groups: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["pos"]), []).append(r["final"][metric])
    for (dataset, pos), values in groups.items():
        rows.append(
            {
                "dataset": dataset,
                "pos": pos,
                "n": len(values),
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "values": values,
            }
        )
    return rows


#: The differences between position encodings that chapter 5 discusses: ``(a, b)`` reads "a - b".
DISCUSSED_GAPS: tuple[tuple[str, str], ...] = (("abs", "rel"), ("abs+rel", "abs"), ("rel", "none"))


def gaps_table(
    summary: Sequence[dict[str, Any]],
    chance: dict[str, float],
    pairs: Sequence[tuple[str, str]] = DISCUSSED_GAPS,
) -> str:
    """Gaps between mean final accuracies, in percentage points, one line per dataset: first each
    ``pos`` above chance, then each pair ``(a, b)`` of ``pairs`` as ``a - b``."""
    mean = {(r["dataset"], r["pos"]): 100 * r["mean"] for r in summary}
    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    pos_order = list(dict.fromkeys(r["pos"] for r in summary))
    lines = []
    for d in datasets:
        row = "  ".join(f"{p}: {mean[d, p] - 100 * chance[d]:+5.1f}" for p in pos_order)
        lines.append(f"{d:9}  above chance ->  {row}")
    for d in datasets:
        row = "   ".join(f"{a} - {b} = {mean[d, a] - mean[d, b]:+5.1f}" for a, b in pairs)
        lines.append(f"{d:9}  {row}")
    return "\n".join(lines)


def results_table(summary: Sequence[dict[str, Any]], chance: dict[str, float]) -> str:
    """Markdown: one row per ``pos``, one column per dataset, cells ``mean ± std`` in percent."""
    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    pos_order = list(dict.fromkeys(r["pos"] for r in summary))
    cell = {(r["dataset"], r["pos"]): r for r in summary}
    n = max(r["n"] for r in summary)
    head = "| pos | " + " | ".join(f"{d} (chance {100 * chance[d]:.1f})" for d in datasets) + " |"
    lines = [head, "|---" * (len(datasets) + 1) + "|"]
    for pos in pos_order:
        cells = []
        for d in datasets:
            r = cell.get((d, pos))
            cells.append("" if r is None else f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f}")
        lines.append(f"| {pos} | " + " | ".join(cells) + " |")
    lines.append("")
    seeds = "seed" if n == 1 else "seeds"
    lines.append(f"*Final test accuracy (%), mean ± sample std over {n} {seeds}.*")
    return "\n".join(lines) + "\n"


#: Where the book's repository publishes its results (for readers who installed only the package,
#: e.g. on Colab, and so have no ``results/`` folder beside them).
RESULTS_URL = f"https://raw.githubusercontent.com/{_repository.OWNER}/{_repository.NAME}/{_repository.REF}/results"


def find_results(name: str, search: Sequence[Path] | None = None) -> Path:
    """The folder ``results/<name>``: looked for in the current directory, its parent (the book's
    notebooks run in ``book/``) and beside the companion package (an editable install); if it is
    in none of them, it is downloaded from ``RESULTS_URL`` into the cache folder.
    """
    places = (
        search
        if search is not None
        else [
            Path.cwd() / "results",
            Path.cwd().parent / "results",
            PACKAGE_DIR.parent / "results",
        ]
    )
    for place in places:
        if (Path(place) / name / "results.json").is_file():
            return Path(place) / name
    return _download_results(name)


def _download_results(name: str, base_url: str = RESULTS_URL) -> Path:
    import urllib.request

    from companion.data import DEFAULT_DATA_DIR

    folder = DEFAULT_DATA_DIR / "results" / name

    def fetch(relative: str) -> bytes:
        try:
            with urllib.request.urlopen(f"{base_url}/{name}/{relative}", timeout=30) as response:
                return response.read()
        except OSError as exc:
            raise FileNotFoundError(
                f"results {name!r} are not in a local results/ folder and could not be "
                f"downloaded from {base_url}/{name} ({exc}); run the notebook from a clone of "
                f"the book's repository"
            ) from exc

    results = json.loads(fetch("results.json"))
    for run in results["runs"]:
        key = run_key(run["dataset"], run["pos"], run["seed"])
        atomic_write(
            folder / "curves" / f"{key}.json", lambda f, k=key: f.write(fetch(f"curves/{k}.json"))
        )
    for rel in bias_files(results):
        atomic_write(folder / rel, lambda f, r=rel: f.write(fetch(r)))
    atomic_write_json(folder / "results.json", results)
    return folder


def bias_files(results: dict[str, Any]) -> list[str]:
    """The bias-table files of a results folder, relative to it (listed in ``results.json``;
    older folders list none, and have one per dataset for each of ``BIAS_POS``)."""
    if "bias_files" in results:
        return list(results["bias_files"])
    plan = results["plan"]
    return [f"bias/{d}__{p}.pt" for d in plan["datasets"] for p in BIAS_POS if p in plan["pos"]]


def load_results(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``results.json`` of an ablation folder."""
    return json.loads((Path(folder) / "results.json").read_text())


def load_curves(folder: str | os.PathLike[str]) -> dict[tuple[str, str, int], list[dict]]:
    """Every run's per-epoch records, keyed by ``(dataset, pos, seed)``."""
    curves = {}
    for run in load_results(folder)["runs"]:
        key = run_key(run["dataset"], run["pos"], run["seed"])
        saved = json.loads((Path(folder) / "curves" / f"{key}.json").read_text())
        curves[(run["dataset"], run["pos"], run["seed"])] = saved["epochs"]
    return curves


def load_bias_tables(folder: str | os.PathLike[str], dataset: str, pos: str) -> dict[str, Any]:
    """The bias tables saved for ``dataset`` and ``pos`` (see :func:`bias_tables`)."""
    path = Path(folder) / "bias" / f"{dataset}__{pos}.pt"
    if not path.is_file():
        raise FileNotFoundError(
            f"no bias tables for dataset={dataset!r}, pos={pos!r} in {folder} (they are saved "
            f"for the first seed of each pos whose model has relative position bias tables)"
        )
    return torch.load(path, weights_only=True)
