"""The resolution-transfer experiment: a finished 32-px ablation, every run moved to 48 and 64 px.

Two steps. The ablation runner trains every position code at 32 px and publishes
``results/<name>/`` (chapter 5's provenance); this module then takes each of its runs from the
work folder's checkpoint, moves it to every size under every condition of
``companion.resolution_transfer`` and measures the test accuracy on the task *rendered* at that
size (``companion.data.make_dataset(..., size=S)``: the same test scenes, more pixels), as moved
and after a short fine-tune on the training split rendered at that size::

    python -m companion.ablation --name cpu-transfer --config tiny-cpu --seeds 0 1 2 3 4 ...
    python -m companion.resolution_experiment --name cpu-transfer --finetune-steps 50 --jobs 2

(``results/run_cpu_transfer.sh`` holds the full commands of the published run.)

It writes ``results/<name>/transfer.json`` (a provenance header, the settings, one row per run x
size x condition) and ``transfer.md`` (mean ± std over seeds), atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import shlex
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch

from companion._checks import check_positive_int
from companion._io import atomic_write_json, atomic_write_text
from companion.data import make_dataset, num_classes
from companion.data.dataset import ImageClassificationData
from companion.provenance import provenance
from companion.resolution_transfer import (
    EVAL_SIZES,
    TRAIN_SIZE,
    accuracy,
    fine_tune,
    grown_condition,
    moved_model,
    transfer_conditions,
)
from companion.results import cell_label, load_results, run_key, summarize
from companion.stats import paired_interval
from companion.swin import SwinTransformer
from companion.swin_configs import variant_overrides
from companion.train import CHECKPOINT, TrainConfig, load_checkpoint
from companion.train.build import build_model


def trained_run(
    work: Path, dataset: str, pos: str, seed: int, variant: str = "swin"
) -> tuple[TrainConfig, SwinTransformer]:
    """The settings and the trained model of one ablation run, from its checkpoint in ``work``."""
    saved = load_checkpoint(work / run_key(dataset, pos, seed, variant) / CHECKPOINT)
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    cfg = TrainConfig(**{k: v for k, v in saved["config"].items() if k in names})
    model = build_model(cfg, num_classes(dataset), None)
    model.load_state_dict(saved["model"])
    return cfg, model.eval()


@functools.lru_cache(maxsize=16)
def rendered(dataset: str, split: str, n: int, seed: int, size: int) -> ImageClassificationData:
    """``make_dataset`` at ``size`` px, kept for the process: every run of a dataset is moved to
    the same rendered images, so they are drawn once per process (treat them as read-only)."""
    return make_dataset(dataset, split, n, seed=seed, size=size)


@dataclasses.dataclass(frozen=True)
class MoveSettings:
    """What every trained run goes through: the sizes it is moved to, and the short fine-tune
    after each move (``finetune_steps=0``: none)."""

    sizes: tuple[int, ...] = EVAL_SIZES
    finetune_steps: int = 50
    finetune_lr: float = 1e-4
    finetune_batch_size: int = 32


def transfer_rows(
    cfg: TrainConfig, model: SwinTransformer, settings: MoveSettings = MoveSettings()
) -> list[dict[str, Any]]:
    """One row per size x condition: test accuracy as moved and after the fine-tune, on the
    run's task rendered at that size (the run's own data seed and split sizes)."""

    def data(split: str, size: int) -> ImageClassificationData:
        n = cfg.test_size if split == "test" else cfg.train_size
        return rendered(cfg.dataset, split, n, cfg.data_seed, size)

    rows = [
        {
            "size": TRAIN_SIZE,
            "condition": "trained",
            "acc": accuracy(model, data("test", TRAIN_SIZE)),
        }
    ]
    for size in settings.sizes:
        test, train = data("test", size), data("train", size)
        for condition in transfer_conditions(cfg.pos):
            moved = moved_model(model, size, condition)
            row = {"size": size, "condition": condition.name, "acc": accuracy(moved, test)}
            if settings.finetune_steps:
                start = time.perf_counter()
                fine_tune(
                    moved,
                    train,
                    settings.finetune_steps,
                    settings.finetune_lr,
                    settings.finetune_batch_size,
                    seed=cfg.seed,
                )
                row["acc_finetuned"] = accuracy(moved, test)
                row["finetune_s"] = time.perf_counter() - start
            rows.append(row)
    run = {"dataset": cfg.dataset, "pos": cfg.pos, "variant": cfg.variant, "seed": cfg.seed}
    return [{**run, **r} for r in rows]


def _moved_run(
    work: Path, run: tuple[str, str, int, str], threads: int | None, settings: MoveSettings
) -> list[dict[str, Any]]:
    """:func:`transfer_rows` of one ablation run (a process pool's task)."""
    if threads:
        torch.set_num_threads(threads)
    return transfer_rows(*trained_run(work, *run), settings)


def transfer_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and std over seeds per dataset x pos x size x condition (as moved, and fine-tuned),
    by ``companion.results.summarize`` with ``(pos, size, condition)`` in the place of ``pos``."""
    out = []
    for metric in ("acc", "acc_finetuned"):
        records = [
            {
                "dataset": r["dataset"],
                "variant": r.get("variant", "swin"),
                "seed": r["seed"],
                "pos": (r["pos"], r["size"], r["condition"]),
                "final": {metric: r[metric]},
            }
            for r in rows
            if metric in r
        ]
        for s in summarize(records, metric=metric):
            pos, size, condition = s["pos"]
            out.append({**s, "pos": pos, "size": size, "condition": condition, "metric": metric})
    return out


def transfer_table(summary: Sequence[dict[str, Any]]) -> str:
    """``transfer_summary`` as Markdown: one line per dataset x pos x size x condition."""
    lines = ["| dataset | pos | size | condition | accuracy | after fine-tune |", "|---" * 6 + "|"]
    cells: dict[tuple, dict[str, str]] = {}
    for s in summary:
        key = (s["dataset"], cell_label(s["pos"], s["variant"]), s["size"], s["condition"])
        cells.setdefault(key, {})[s["metric"]] = f"{s['mean']:.3f} ± {s['std']:.3f} (n={s['n']})"
    for (dataset, pos, size, condition), v in cells.items():
        after = v.get("acc_finetuned", "")
        lines.append(f"| {dataset} | {pos} | {size} | {condition} | {v['acc']} | {after} |")
    return "\n".join(lines)


def load_transfer(folder: str | Path) -> dict[str, Any]:
    """``transfer.json`` of an ablation folder (written by :func:`run_transfer`)."""
    return json.loads((Path(folder) / "transfer.json").read_text())


def transfer_gap(
    rows: Sequence[dict[str, Any]],
    dataset: str,
    size: int,
    a: tuple[str, str],
    b: tuple[str, str],
    metric: str = "acc",
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Paired difference ``a - b`` in percentage points at ``size``, seed by seed.

    ``a`` and ``b`` are ``(pos, condition)`` cells of the rows of :func:`transfer_rows`; only seeds
    that both have are paired. Returns ``{a, b, seeds, mean, low, high, excludes_zero}``, the
    interval a paired t interval (``companion.stats.paired_interval``).
    """

    def by_seed(cell: tuple[str, str]) -> dict[int, float]:
        wanted = (dataset, *cell, size)
        return {
            r["seed"]: 100.0 * r[metric]
            for r in rows
            if (r["dataset"], r["pos"], r["condition"], r["size"]) == wanted
        }

    left, right = by_seed(a), by_seed(b)
    seeds = sorted(set(left) & set(right))
    if len(seeds) < 2:
        raise ValueError(
            f"a and b must share at least 2 seeds on {dataset} at {size} px, got a={a} "
            f"({len(left)} seeds) and b={b} ({len(right)} seeds)"
        )
    mean, low, high = paired_interval([left[s] - right[s] for s in seeds], confidence)
    excludes = bool(low > 0 or high < 0)
    return {"a": a, "b": b, "seeds": seeds, "mean": mean, "low": low, "high": high,
            "excludes_zero": excludes}  # fmt: skip


def transfer_gaps_table(
    rows: Sequence[dict[str, Any]],
    pairs: Sequence[tuple[str, int, tuple[str, str], tuple[str, str]]],
    metric: str = "acc",
) -> str:
    """One line per ``(dataset, size, a, b)``: the paired gap ``a - b`` and its 95% interval,
    with ``*`` when the interval excludes 0."""
    width = max((len(":".join(cell)) for *_, a, b in pairs for cell in (a, b)), default=0)
    lines = []
    for dataset, size, a, b in pairs:
        g = transfer_gap(rows, dataset, size, a, b, metric)
        mark = "*" if g["excludes_zero"] else " "
        lines.append(
            f"{dataset:<9} {size} px  {':'.join(a):<{width}} - {':'.join(b):<{width}} "
            f"{g['mean']:+6.1f} [{g['low']:+6.1f}, {g['high']:+6.1f}] {mark}"
        )
    return "\n".join(lines)


def window_gain_table(
    rows: Sequence[dict[str, Any]],
    datasets: Sequence[str],
    sizes: Sequence[int],
    codes: Sequence[str],
    method: str = "geometric",
) -> str:
    """*Window grown − window kept* for every dataset x size x code, as moved and after the
    fine-tune: paired gaps in points with their 95% intervals (``*``: the interval excludes 0).
    Codes with a table use the window grown with ``method``'s resizing."""

    def cell(dataset: str, size: int, pos: str, metric: str) -> str:
        grown = grown_condition(pos, method)
        g = transfer_gap(rows, dataset, size, (pos, grown), (pos, "grid"), metric)
        mark = "*" if g["excludes_zero"] else " "
        return f"{g['mean']:+6.1f} [{g['low']:+6.1f}, {g['high']:+6.1f}] {mark}"

    lines = [f"{'':<12}{'as moved':<27}after the fine-tune"]
    for dataset in datasets:
        for size in sizes:
            lines.append(f"{dataset} at {size} px")
            for pos in codes:
                moved, tuned = (cell(dataset, size, pos, m) for m in ("acc", "acc_finetuned"))
                lines.append(f"  {pos:<10}{moved}   {tuned}")
    return "\n".join(lines)


def run_transfer(
    results_dir: Path,
    work: Path,
    settings: MoveSettings = MoveSettings(),
    command: str | None = None,
    jobs: int = 1,
    threads: int | None = None,
) -> dict[str, Any]:
    """Move every run of the main grid of the ablation published in ``results_dir`` (checkpoints
    in ``work``), in the plan's variant; its extra (controlled-variant) cells are not moved.
    ``jobs`` runs are moved at a time, each process with ``threads`` torch threads."""
    check_positive_int("jobs", jobs)
    start = time.perf_counter()
    plan = load_results(results_dir)["plan"]
    variant = plan.get("variant", "swin")
    if variant_overrides(variant).get("torus"):
        raise ValueError(
            f"the ablation's variant {variant!r} is a torus, whose runs cannot move to another "
            "size (SwinTransformer.set_input_size); move an ablation of another variant"
        )
    runs = [
        (dataset, pos, seed, variant)
        for seed in plan["seeds"]
        for dataset in plan["datasets"]
        for pos in plan["pos"]
    ]
    task = functools.partial(_moved_run, work, threads=threads, settings=settings)
    if jobs == 1:
        per_run = [task(run) for run in runs]
    else:
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            per_run = list(pool.map(task, runs))
    rows = [row for run_rows in per_run for row in run_rows]
    header = {**provenance(command), "wall_s": time.perf_counter() - start, "jobs": jobs}
    recorded = {
        **dataclasses.asdict(settings),
        "images": "rendered at each size by the task's generator (companion.data, size=S)",
    }
    results = {"header": header, "plan": plan, "settings": recorded, "rows": rows}
    results["summary"] = transfer_summary(rows)
    atomic_write_json(results_dir / "transfer.json", results)
    atomic_write_text(results_dir / "transfer.md", transfer_table(results["summary"]) + "\n")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m companion.resolution_experiment")
    p.add_argument("--name", required=True, help="the ablation's name: results/<name>/")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--work-dir", default="runs/ablation", help="the ablation's checkpoints")
    default = MoveSettings()
    p.add_argument("--sizes", type=int, nargs="+", default=list(default.sizes))
    p.add_argument(
        "--finetune-steps", type=int, default=default.finetune_steps, help="0: no fine-tune"
    )
    p.add_argument("--finetune-lr", type=float, default=default.finetune_lr)
    p.add_argument("--finetune-batch-size", type=int, default=default.finetune_batch_size)
    p.add_argument("--jobs", type=int, default=1, help="runs moved in parallel (processes)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per process")
    args = p.parse_args(argv)
    folder = Path(args.results_dir) / args.name
    command = shlex.join(["python", "-m", "companion.resolution_experiment", *argv])
    results = run_transfer(
        folder,
        Path(args.work_dir) / args.name,
        MoveSettings(
            tuple(args.sizes), args.finetune_steps, args.finetune_lr, args.finetune_batch_size
        ),
        command,
        args.jobs,
        args.threads,
    )
    print(transfer_table(results["summary"]))
    print(f"wrote {folder / 'transfer.json'} in {results['header']['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
