"""The position-encoding ablation: every ``pos`` x seed x dataset, one results folder.

    python -m companion.ablation --name cpu-tiny --config tiny-cpu --seeds 0 1 2 --epochs 12

writes ``results/<name>/``:

* ``results.json`` — a header (hardware, torch, git commit and whether the tree was dirty, the
  exact command, the date, the wall time) and every run's final metrics;
* ``results.md`` — mean ± std (over seeds) of the final test accuracy per ``pos`` x dataset;
* ``curves/<dataset>__<pos>__seed<k>.json`` — each run's per-epoch metrics;
* ``bias/<dataset>__<pos>.pt`` — for one seed of ``rel`` and ``abs+rel``, the learned relative
  position bias tables of every block (tensors only, ``weights_only``-loadable).

Checkpoints go to ``--work-dir`` (not committed). A run whose curve file exists is not run
again, and an interrupted run resumes from its checkpoint, so the whole ablation can be
stopped and started again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from companion import _repository
from companion._io import atomic_write, atomic_write_json, atomic_write_text
from companion.data import DATASETS, num_classes
from companion.train import (
    CHECKPOINT,
    POS_CHOICES,
    ModelFactory,
    TrainConfig,
    train,
    validate_config,
)

PACKAGE_DIR = Path(__file__).resolve().parent
BIAS_POS = ("rel", "abs+rel")  # the variants that have relative position bias tables


@dataclass
class AblationPlan:
    """What to run: the grid ``datasets x pos x seeds``, each with ``base``'s other settings."""

    name: str
    datasets: tuple[str, ...] = ("grid-cell", "relation")
    pos: tuple[str, ...] = POS_CHOICES
    seeds: tuple[int, ...] = (0, 1, 2)
    base: TrainConfig = field(default_factory=lambda: TrainConfig(progress=False))
    results_dir: str = "results"
    work_dir: str = "runs/ablation"
    jobs: int = 1

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain folder name, got {self.name!r}")
        for d in self.datasets:
            if d not in DATASETS:
                raise ValueError(f"datasets must be in {list(DATASETS)}, got {d!r}")
        for p in self.pos:
            if p not in POS_CHOICES:
                raise ValueError(f"pos must be in {list(POS_CHOICES)}, got {p!r}")
        if not self.datasets or not self.pos or not self.seeds:
            raise ValueError(
                f"datasets, pos and seeds must each be non-empty, got datasets={self.datasets}, "
                f"pos={self.pos}, seeds={self.seeds}"
            )
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise ValueError(f"jobs must be an int >= 1, got {self.jobs!r}")

    @property
    def folder(self) -> Path:
        return Path(self.results_dir) / self.name

    def runs(self) -> list[tuple[str, str, int]]:
        """Every ``(dataset, pos, seed)``, seed-major: the first seed's whole grid comes first, so
        an early look (or an interrupted ablation) already compares every variant."""
        return [(d, p, s) for s in self.seeds for d in self.datasets for p in self.pos]


def run_key(dataset: str, pos: str, seed: int) -> str:
    return f"{dataset}__{pos}__seed{seed}"


# --------------------------------------------------------------------------- provenance


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_state(repo: Path = PACKAGE_DIR.parent) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout the code runs from."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def source_digest(package: Path = PACKAGE_DIR) -> str:
    """SHA-256 over the companion package's ``.py`` files: identifies the code even when the
    git tree was dirty."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def provenance(command: str | None) -> dict[str, Any]:
    """Where and how results were produced: hardware, software, code version, command, date."""
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": gpu,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_state(),
        "companion_sha256": source_digest(),
    }


# --------------------------------------------------------------------------- bias tables


def bias_tables(model: nn.Module) -> dict[str, dict[str, Any]]:
    """Every relative position bias table of ``model``, by module name.

    Returns ``{name: {"table": ((2Wh-1)(2Ww-1), H) tensor, "window_size": [Wh, Ww]}}``.
    """
    found = {}
    for name, module in model.named_modules():
        table = getattr(module, "relative_position_bias_table", None)
        if isinstance(table, Tensor):
            found[name] = {
                "table": table.detach().cpu().clone(),
                "window_size": list(module.window_size),
            }
    return found


# --------------------------------------------------------------------------- running


def _run_one(
    plan: AblationPlan, dataset: str, pos: str, seed: int, factory: ModelFactory | None
) -> dict[str, Any]:
    """Train one grid point (or reuse its saved curve) and save its curve and bias tables."""
    key = run_key(dataset, pos, seed)
    curve_path = plan.folder / "curves" / f"{key}.json"
    if curve_path.is_file():
        saved = json.loads(curve_path.read_text())
        return {"dataset": dataset, "pos": pos, "seed": seed, **saved["summary"]}
    out = Path(plan.work_dir) / plan.name / key
    cfg = replace(
        plan.base,
        dataset=dataset,
        pos=pos,
        seed=seed,
        out=str(out),
        resume=(out / CHECKPOINT).is_file(),
        progress=False,
    )
    start = time.perf_counter()
    result = train(cfg, factory)
    wall = time.perf_counter() - start
    last = result.history[-1]
    summary = {
        "final": last,
        "best_test_acc": max(r["test_acc"] for r in result.history),
        "wall_s": wall,
        "num_params": sum(p.numel() for p in result.model.parameters()),
    }
    atomic_write_json(curve_path, {"summary": summary, "epochs": result.history})
    if pos in BIAS_POS and seed == plan.seeds[0]:
        tables = bias_tables(result.model)
        atomic_write(plan.folder / "bias" / f"{dataset}__{pos}.pt", lambda f: torch.save(tables, f))
    return {"dataset": dataset, "pos": pos, "seed": seed, **summary}


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


def run_ablation(
    plan: AblationPlan, factory: ModelFactory | None = None, command: str | None = None
) -> dict[str, Any]:
    """Run every grid point of ``plan`` (``plan.jobs`` at a time) and write the results folder.

    ``factory`` (see :func:`companion.train.train`) must be picklable when ``jobs > 1``.
    """
    header = provenance(command)
    start = time.perf_counter()
    grid = plan.runs()
    if plan.jobs == 1:
        runs = [_run_one(plan, *point, factory) for point in grid]
    else:
        # Separate processes, one thread each: on a small CPU two single-threaded trainings get
        # more images through per second than one two-threaded one.
        base = replace(plan.base, threads=plan.base.threads or 1)
        plan = replace(plan, base=base)
        with ProcessPoolExecutor(plan.jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_run_one, plan, *point, factory) for point in grid]
            runs = [f.result() for f in futures]
    header["wall_s"] = time.perf_counter() - start
    header["threads_per_run"] = plan.base.threads or torch.get_num_threads()
    header["jobs"] = plan.jobs
    chance = {d: 1 / num_classes(d) for d in plan.datasets}
    summary = summarize(runs)
    results = {
        "header": header,
        "plan": {
            "name": plan.name,
            "datasets": list(plan.datasets),
            "pos": list(plan.pos),
            "seeds": list(plan.seeds),
            "train": asdict(plan.base),
        },
        "chance": chance,
        "summary": summary,
        "runs": runs,
    }
    atomic_write_json(plan.folder / "results.json", results)
    atomic_write_text(plan.folder / "results.md", results_table(summary, chance))
    return results


# --------------------------------------------------------------------------- reading results

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
    for dataset in results["plan"]["datasets"]:
        for pos in BIAS_POS:
            if pos in results["plan"]["pos"]:
                rel = f"bias/{dataset}__{pos}.pt"
                atomic_write(folder / rel, lambda f, r=rel: f.write(fetch(r)))
    atomic_write_json(folder / "results.json", results)
    return folder


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
            f"no bias tables for dataset={dataset!r}, pos={pos!r} in {folder} (they are saved for "
            f"pos in {list(BIAS_POS)}, first seed only)"
        )
    return torch.load(path, weights_only=True)


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = argparse.ArgumentParser(
        prog="python -m companion.ablation",
        description="Train every position encoding x seed x dataset and tabulate the results.",
    )
    p.add_argument("--name", required=True, help="results/<name>/ receives the results")
    p.add_argument("--config", default=d.config)
    p.add_argument("--datasets", nargs="+", default=["grid-cell", "relation"], choices=DATASETS)
    p.add_argument("--pos", nargs="+", default=list(POS_CHOICES), choices=POS_CHOICES)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--warmup-epochs", type=float, default=d.warmup_epochs)
    p.add_argument("--label-smoothing", type=float, default=d.label_smoothing)
    p.add_argument("--drop-path-rate", type=float, default=None)
    p.add_argument("--train-size", type=int, default=None)
    p.add_argument("--test-size", type=int, default=None)
    p.add_argument("--data-seed", type=int, default=d.data_seed)
    p.add_argument("--device", default=d.device)
    p.add_argument("--precision", default=d.precision)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    p.add_argument("--data-dir", default=d.data_dir)
    p.add_argument("--download", action="store_true")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--work-dir", default="runs/ablation", help="checkpoints (not committed)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = TrainConfig(
        config=args.config,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        weight_decay=args.weight_decay,
        warmup_epochs=args.warmup_epochs,
        label_smoothing=args.label_smoothing,
        drop_path_rate=args.drop_path_rate,
        train_size=args.train_size,
        test_size=args.test_size,
        data_seed=args.data_seed,
        device=args.device,
        precision=args.precision,
        threads=args.threads,
        data_dir=args.data_dir,
        download=args.download,
        progress=False,
    )
    try:
        validate_config(base)
        plan = AblationPlan(
            name=args.name,
            datasets=tuple(args.datasets),
            pos=tuple(args.pos),
            seeds=tuple(args.seeds),
            base=base,
            results_dir=args.results_dir,
            work_dir=args.work_dir,
            jobs=args.jobs,
        )
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    command = shlex.join(["python", "-m", "companion.ablation", *argv])
    results = run_ablation(plan, command=command)
    print(results_table(results["summary"], results["chance"]))
    print(f"wrote {plan.folder} in {results['header']['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
