"""The position-encoding ablation: every ``pos`` x seed x dataset, one results folder.

    python -m companion.commands.ablation --name my-ablation --config tiny-cpu --seeds 0 1 2 \
        --epochs 12

Each run of the plan (:mod:`~companion.experiments.runs.ablation_plan`) trains in
``<work-dir>/<name>/<key>/`` and, when it finishes, writes its sealed record ``<key>.json``
(settings, code hash, hardware, every epoch, every test split image by image) and its bias tables
``<key>.bias.pt``. ``results/<name>/`` is published only when every run has finished
(:mod:`~companion.experiments.runs.publish`). Stopping and starting again is safe: a finished run
is reused, an interrupted one resumed, only when its settings and code hash equal the request's.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from companion._io import TEMP_SUFFIX, atomic_write, atomic_write_json, file_sha256
from companion.attention import WindowAttention
from companion.data import num_classes
from companion.experiments.evaluation import split_results
from companion.experiments.integrity import seal
from companion.experiments.results import run_key
from companion.experiments.runs.ablation_plan import GRID, AblationPlan, StaleRunError, check_grid
from companion.experiments.runs.pool import run_all, threads_per_worker
from companion.experiments.runs.publish import (
    check_publishable,
    publish_ablation,
    restore_interrupted_swap,
    results_record,
    results_table,
    tables_intact,
)
from companion.position import Position
from companion.train import CHECKPOINT, ModelFactory, TrainConfig, load_checkpoint, train
from companion.train.build import build_model
from companion.train.checkpoint import load_states, settings_differences
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import (
    add_arguments,
    add_config_arguments,
    config_from_args,
    recorded_settings,
)
from companion.train.provenance import hardware, provenance, source_digest
from companion.train.rundir import RunLock, check_writable_folder

#: ``companion._io``'s temporary files of a run record or bias table in the work folder.
WORK_TEMP = re.compile(rf"\..+\.(json|bias\.pt)\.\w+{re.escape(TEMP_SUFFIX)}")
#: The settings a reused (or resumed) run must share with the request, besides the code hash.
COMPARED_KINDS = ("result", "hardware")


def bias_tables(model: nn.Module) -> dict[str, dict[str, Any]]:
    """``{module name: {"table": ((2Wh-1)(2Ww-1), H) tensor, "window_size": [Wh, Ww]}}``: every
    relative position bias table of ``model``, one row per signed offset (``offset_table()``),
    also where a table stores one per ``(|dy|, |dx|)``, so that every table plots the same way."""
    found = {}
    for name, module in model.named_modules():
        table = module.offset_table() if isinstance(module, WindowAttention) else None
        if table is None:  # not a window attention, or its position code has no table
            continue
        found[name] = {
            "table": table.detach().cpu().clone(),
            "window_size": list(module.window_size),
        }
    return found


# --------------------------------------------------------------------------- one run


def _refusal(path: Path, why: str, work: Path) -> StaleRunError:
    return StaleRunError(
        f"{path} {why}; pass --fresh to discard {work} and train again, or choose a new --name"
    )


def _check_same(path: Path, settings: dict[str, Any], code: object, cfg: TrainConfig) -> None:
    """Refuse a saved run (its record or checkpoint) made with other settings or code."""
    diff = settings_differences(settings, recorded_settings(cfg, COMPARED_KINDS))
    if code != source_digest():
        diff.append("the companion code changed since (its sha256 differs)")
    if diff:
        why = f"was made with other settings or code ({'; '.join(diff)})"
        raise _refusal(path, why, Path(cfg.out).parent)


def _read_record(plan: AblationPlan, path: Path) -> dict[str, Any]:
    """A finished run's record, refused unless it is one, sealed (``record_sha256`` matches its
    content: not edited since the run wrote it) and its checkpoint is the one it names."""
    try:
        record = json.loads(path.read_text())
    except ValueError as exc:
        raise _refusal(path, f"is not a run record (not JSON: {exc})", plan.work) from None
    needed = ("settings", "code_sha256", "final", "epochs", "splits")
    if not isinstance(record, dict) or any(k not in record for k in needed):
        raise _refusal(path, f"is not a run record (it lacks one of {list(needed)})", plan.work)
    if record.get("record_sha256") != seal(record)["record_sha256"]:
        state = "has no content hash" if "record_sha256" not in record else "was edited"
        why = f"{state} (record_sha256 does not match its content): it cannot be trusted"
        raise _refusal(path, why, plan.work)
    checkpoint = path.with_name(path.name.removesuffix(".json")) / CHECKPOINT
    if not checkpoint.is_file() or file_sha256(checkpoint) != record.get("checkpoint_sha256"):
        raise _refusal(checkpoint, f"is missing or not the one {path} was written with", plan.work)
    return record


def _run_one(
    plan: AblationPlan, factory: ModelFactory | None, point: tuple[str, Position, str, int]
) -> dict[str, Any]:
    """Train the run ``(dataset, pos, variant, seed)``, or reuse it (a process pool's task)."""
    dataset, pos, variant, seed = point
    cfg = plan.config(dataset, pos, seed, variant)
    out = Path(cfg.out)
    record_path = out.with_name(out.name + ".json")
    if record_path.exists():
        record = _read_record(plan, record_path)
        _check_same(record_path, record["settings"], record["code_sha256"], cfg)
        if not tables_intact(record, out.with_name(out.name + ".bias.pt")):
            _restore_tables(record, cfg, factory)
        return record
    if (out / CHECKPOINT).exists():
        saved = load_checkpoint(out / CHECKPOINT)
        _check_same(out / CHECKPOINT, saved["config"], saved["code_sha256"], cfg)
        cfg = replace(cfg, resume=True)
    result = train(cfg, factory)
    history = result.history
    record = {
        "dataset": dataset,
        "pos": str(pos),  # a record holds the name (Position.parse reads it back)
        "variant": variant,
        "seed": seed,
        "settings": result.header["config"],
        "code_sha256": result.header["code_sha256"],
        "run": {k: v for k, v in result.header.items() if k not in ("config", "code_sha256")},
        "hardware": hardware(),
        "final": history[-1],
        "best_test_acc": max(r["test_acc"] for r in history),
        "wall_s": sum(r["epoch_time_s"] for r in history),
        "num_params": result.header["num_params"],
        "epochs": history,
        "checkpoint_sha256": file_sha256(out / CHECKPOINT),
        # every test split, image by image (for bootstrap intervals over the test images)
        "splits": split_results(result.model, cfg),
    }
    record["bias_sha256"] = _save_tables(result.model, out)
    record = seal(json.loads(json.dumps(record)))  # hashed as a reuse reads it back
    atomic_write_json(record_path, record)  # last: its presence means the run is complete
    return record


def _save_tables(model: nn.Module, out: Path) -> str | None:
    """Save ``model``'s bias tables beside its run folder (``<run>.bias.pt``); their sha256, or
    ``None`` for a model without tables."""
    tables = bias_tables(model)
    if not tables:
        return None
    path = out.with_name(out.name + ".bias.pt")
    atomic_write(path, lambda f: torch.save(tables, f))
    return file_sha256(path)


def _restore_tables(record: dict[str, Any], cfg: TrainConfig, factory: ModelFactory | None) -> None:
    """Write a reused run's missing or damaged ``.bias.pt`` again from its checked checkpoint."""
    out = Path(cfg.out)
    print(
        f"{out}.bias.pt is missing or damaged: writing it again from {out / CHECKPOINT}", flush=True
    )
    model = build_model(cfg, num_classes(cfg.dataset), factory)
    load_states(out / CHECKPOINT, load_checkpoint(out / CHECKPOINT), model=model)
    if _save_tables(model, out) != record["bias_sha256"]:
        raise StaleRunError(
            f"{out}.bias.pt written again from {out / CHECKPOINT} is not the one its record "
            f"names; pass --fresh to train the runs again"
        )


def run_ablation(
    plan: AblationPlan, factory: ModelFactory | None = None, command: str | None = None
) -> dict[str, Any]:
    """Run (or reuse) every run of ``plan``, ``plan.jobs`` at a time (``factory``, see
    :func:`companion.train.train`, picklable then), then publish."""
    check_writable_folder(plan.folder, "--results-dir/--name")  # before any training
    check_writable_folder(plan.work, "--work-dir/--name")
    restore_interrupted_swap(plan.folder)
    check_publishable(plan)  # before any training, and again under the publish lock
    start = time.perf_counter()
    plan.work.mkdir(parents=True, exist_ok=True)
    with RunLock(plan.work, label="--work-dir/--name"):
        for stale in plan.work.iterdir():  # left by a run killed while it wrote its record
            if WORK_TEMP.fullmatch(stale.name):
                stale.unlink(missing_ok=True)
        if plan.fresh:
            for child in plan.work.iterdir():
                if child.name not in (".lock", ".lock.json"):
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        threads = threads_per_worker(plan.jobs, plan.base.threads)
        plan = replace(plan, base=replace(plan.base, threads=threads))
        hint = (
            f"finished runs are kept in {plan.work} and reused, interrupted ones resume from "
            f"their last checkpoint: run the same command again to continue"
        )
        task = functools.partial(_run_one, plan, factory)
        records = run_all(
            task, plan.runs(), plan.jobs, hint, describe=lambda r: run_key(r[0], r[1], r[3], r[2])
        )
        header = {**provenance(command), "wall_s": time.perf_counter() - start, "jobs": plan.jobs}
        results = results_record(plan, records, header)
        publish_ablation(plan, results, records)
    return json.loads(json.dumps(results))


# --------------------------------------------------------------------------- command line


#: The plan's own flags (besides the grid, --extra, and every per-run setting of the trainer).
PLAN_FLAGS = ("name", "results_dir", "work_dir", "jobs", "fresh", "replace_derived", "replace")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m companion.commands.ablation",
        description="Train every position encoding x seed x dataset and tabulate the results. "
        "Every per-run setting of companion-train is accepted; dataset, pos and seed take "
        "several values (--datasets, --pos, --seeds).",
    )
    plan_fields = {f.name: f for f in fields(AblationPlan)}
    add_arguments(p, AblationPlan, [plan_fields["name"]])
    add_config_arguments(p, kinds=("result", "hardware", "speed"), grid=True)
    p.add_argument(
        "--extra", nargs="+", default=[], metavar="DATASET:POS:VARIANT",
        help="controlled-variant cells, each trained for every seed (grid-cell:rel:torus); "
        "variants: see --variant",
    )  # fmt: skip
    p.add_argument(
        "--extra-seeds", nargs="+", type=int, default=None, metavar="SEED",
        help="the --extra cells' seeds, some of --seeds (default: all of them)",
    )  # fmt: skip
    add_arguments(p, AblationPlan, [plan_fields[n] for n in PLAN_FLAGS[1:]])
    # What the runs get (pool.threads_per_worker), not what companion-train alone would.
    p._option_string_actions[
        "--threads"
    ].help = "torch.set_num_threads in each run (default: torch's with --jobs 1, else 1)"
    add_debug_flag(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    grid = {name: tuple(getattr(args, name)) for name in GRID}
    try:
        check_grid(grid)  # before the base run takes the first values: named by their flags
        base = config_from_args(args, **{k: v[0] for k, v in grid.items()}, progress=False)
        plan = AblationPlan(
            datasets=grid["dataset"],
            pos=grid["pos"],
            seeds=grid["seed"],
            base=base,
            extra=tuple(tuple(text.split(":")) for text in args.extra),
            extra_seeds=args.extra_seeds,
            **{name: getattr(args, name) for name in PLAN_FLAGS},
        )
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    command = shlex.join([*parser.prog.split(), *argv])

    def work() -> None:
        results = run_ablation(plan, command=command)
        print(results_table(results["summary"], results["chance"]))
        header = results["header"]
        print(
            f"wrote {plan.folder} in {header['wall_s']:.0f} s ({header['compute_s']:.0f} s of runs)"
        )

    return run_reporting_errors(parser.prog, work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
