"""The position-encoding ablation: every ``pos`` x seed x dataset, one results folder.

    python -m companion.commands.ablation --name my-ablation --config tiny-cpu --seeds 0 1 2 \
        --epochs 12

Each run trains in ``<work-dir>/<name>/<key>/`` and then writes its sealed record ``<key>.json``
and bias tables ``<key>.bias.pt``; ``results/<name>/`` is published once every run has finished.
Run again, a finished run is reused and an interrupted one resumed, only when its settings and
code hash equal the request's.
"""

from __future__ import annotations

import argparse
import functools
import json
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

from companion._io import atomic_write, atomic_write_json, atomic_write_text, file_sha256
from companion.attention import WindowAttention
from companion.data import num_classes
from companion.data.tasks import IMAGE_SIZE
from companion.experiments.evaluation import (
    evaluation_splits,
    labels_record,
    load_split,
    split_results,
)
from companion.experiments.integrity import seal
from companion.experiments.related import RESULT_SETTINGS
from companion.experiments.results import (
    DERIVED,
    bias_file,
    cell_label,
    load_results,
    mean_std,
    run_key,
    run_sources,
    summarize,
)
from companion.experiments.runs.ablation_plan import GRID, AblationPlan, StaleRunError, check_grid
from companion.experiments.runs.pool import run_all, threads_per_worker
from companion.experiments.runs.publish import derived_state, finish_staging, publish_lock
from companion.position import Position
from companion.train import CHECKPOINT, ModelFactory, TrainConfig, load_checkpoint, train
from companion.train.checkpoint import settings_differences
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import (
    add_arguments,
    add_config_arguments,
    config_from_args,
    recorded_settings,
)
from companion.train.provenance import hardware, provenance, source_digest
from companion.train.rundir import check_writable_folder

#: The settings a reused (or resumed) run must share with the request, besides the code hash.
COMPARED_KINDS = ("result", "hardware")


def bias_tables(model: nn.Module) -> dict[str, dict[str, Any]]:
    """``{module name: {"table": ((2Wh-1)(2Ww-1), H) tensor, "window_size": [Wh, Ww]}}``: every
    relative position bias table of ``model``, one row per signed offset (``offset_table()``)."""
    found = {}
    for name, module in model.named_modules():
        table = module.offset_table() if isinstance(module, WindowAttention) else None
        if table is not None:  # a window attention whose position code has a table
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
    """A finished run's record, refused unless sealed (``record_sha256`` matches its content)
    and its checkpoint is the one it names."""
    try:
        record = json.loads(path.read_text())
    except ValueError as exc:
        raise _refusal(path, f"is not a run record (not JSON: {exc})", plan.work) from None
    if not isinstance(record, dict) or record.get("record_sha256") != seal(record)["record_sha256"]:
        why = "was edited or is not a run record (record_sha256 does not match its content)"
        raise _refusal(path, why, plan.work)
    checkpoint = path.with_name(path.name.removesuffix(".json")) / CHECKPOINT
    if not checkpoint.is_file() or file_sha256(checkpoint) != record.get("checkpoint_sha256"):
        raise _refusal(checkpoint, f"is missing or not the one {path} was written with", plan.work)
    return record


def _run_one(
    plan: AblationPlan, factory: ModelFactory | None, point: tuple[str, Position, str, int]
) -> dict[str, Any]:
    """Train the run ``(dataset, pos, variant, seed)``, or reuse it (a pool's task)."""
    dataset, pos, variant, seed = point
    cfg = plan.config(dataset, pos, seed, variant)
    out = Path(cfg.out)
    record_path = out.with_name(out.name + ".json")
    if record_path.exists():
        record = _read_record(plan, record_path)
        _check_same(record_path, record["settings"], record["code_sha256"], cfg)
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
        "bias_sha256": None,
    }
    tables = bias_tables(result.model)
    if tables:
        path = out.with_name(out.name + ".bias.pt")
        atomic_write(path, lambda f: torch.save(tables, f))
        record["bias_sha256"] = file_sha256(path)
    record = seal(json.loads(json.dumps(record)))  # hashed as a reuse reads it back
    atomic_write_json(record_path, record)  # last: its presence means the run is complete
    return record


def run_ablation(
    plan: AblationPlan, factory: ModelFactory | None = None, command: str | None = None
) -> dict[str, Any]:
    """Run (or reuse) every run of ``plan``, ``plan.jobs`` at a time, then publish."""
    check_writable_folder(plan.folder, "--results-dir/--name")  # before any training
    check_writable_folder(plan.work, "--work-dir/--name")
    check_publishable(plan)
    start = time.perf_counter()
    if plan.fresh:
        shutil.rmtree(plan.work, ignore_errors=True)
    plan.work.mkdir(parents=True, exist_ok=True)
    threads = threads_per_worker(plan.jobs, plan.base.threads)
    plan = replace(plan, base=replace(plan.base, threads=threads))
    hint = (
        f"finished runs are kept in {plan.work} and reused, interrupted ones resume from "
        f"their last checkpoint: run the same command again to continue"
    )
    task = functools.partial(_run_one, plan, factory)
    records = run_all(task, plan.runs(), plan.jobs, hint)
    header = {**provenance(command), "wall_s": time.perf_counter() - start, "jobs": plan.jobs}
    results = results_record(plan, records, header)
    publish_ablation(plan, results, records)
    return json.loads(json.dumps(results))


# --------------------------------------------------------------------------- publishing

#: Files written before the runs (the predictions), carried over unchanged by every publish.
KEPT = ("predictions.md",)


def _common(values: list[Any]) -> Any:
    """The one value every run has (hardware may differ between reused runs: then all of them)."""
    texts = {json.dumps(v, sort_keys=True) for v in values}
    return values[0] if len(texts) == 1 else "mixed: " + " | ".join(sorted(texts))


def results_record(plan: AblationPlan, records: list[dict], header: dict[str, Any]) -> dict:
    """``results.json``'s content, from the runs' own records (never from the command line)."""
    shared = [k for k in records[0]["settings"] if k not in GRID and k != "variant"]
    train = {k: _common([r["settings"][k] for r in records]) for k in shared}
    for key in ("cpu", "cpu_count", "gpu", "torch", "python", "platform"):
        header[key] = _common([r["hardware"][key] for r in records])
    header["companion_sha256"] = _common([r["code_sha256"] for r in records])
    header["threads_per_run"] = train.get("threads") or "torch default"
    header["compute_s"] = sum(r["wall_s"] for r in records)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    runs = [{k: v for k, v in r.items() if k != "epochs"} for r in records]
    size = train["img_size"] or IMAGE_SIZE
    drawn = (train["test_size"], train["data_seed"], size, train["rendering"])
    test_sets = {
        d: {s: labels_record(load_split(d, s, *drawn).labels) for s in evaluation_splits(d)}
        for d in datasets
    }
    return {
        "header": header,
        "plan": {
            "name": plan.name,
            "datasets": list(plan.datasets),
            "pos": [str(p) for p in plan.pos],
            "seeds": list(dict.fromkeys(r["seed"] for r in records)),
            "variant": plan.base.variant,
            "extra": [":".join(map(str, cell)) for cell in plan.extra],
            "extra_seeds": list(plan.extra_seeds or plan.seeds),
            "train": train,
        },
        "chance": {d: 1 / num_classes(d) for d in datasets},
        "test_sets": test_sets,
        "summary": summarize(runs),
        "runs": runs,
    }


def results_table(summary: Sequence[dict[str, Any]], chance: dict[str, float]) -> str:
    """Markdown: one row per cell (``pos``, then ``pos:variant``), one column per dataset, cells
    ``mean ± std`` in percent."""
    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    cell = {(r["dataset"], cell_label(r["pos"], r.get("variant", "swin"))): r for r in summary}
    labels = sorted(dict.fromkeys(name for _, name in cell), key=lambda c: ":" in c)
    ns = sorted({r["n"] for r in summary})
    head = "| pos | " + " | ".join(f"{d} (chance {100 * chance[d]:.1f})" for d in datasets) + " |"
    lines = [head, "|---" * (len(datasets) + 1) + "|"]
    for label in labels:
        rows = [cell.get((d, label)) for d in datasets]
        cells = ["" if r is None else mean_std(r, 100, ".1f") for r in rows]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    n = "/".join(str(k) for k in ns)
    seeds = "seed" if ns == [1] else "seeds"
    note = "; `pos:variant` rows are controlled variants (companion.swin.VARIANTS)"
    extra = note if any(":" in c for c in labels) else ""
    spread = "" if ns == [1] else " ± sample std"
    lines.append(f"*Final test accuracy (%), mean{spread} over {n} {seeds}{extra}.*")
    return "\n".join(lines) + "\n"


def publish_ablation(
    plan: AblationPlan, results: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """Publish ``results/<name>/`` with the first seed's ``bias/`` tables, the predictions, and
    derived results computed from exactly these runs (others: refused, or removed when asked)."""
    folder = plan.folder
    with publish_lock(folder) as staging:
        state = derived_state(folder, run_sources(results))
        if state == "stale" and not plan.replace_derived:
            raise _stale_derived(folder)
        bias_files = []
        for r in records:
            key = run_key(r["dataset"], r["pos"], r["seed"], r["variant"])
            curve = {
                "summary": {k: r[k] for k in ("final", "best_test_acc", "wall_s", "num_params")},
                "settings": r["settings"],
                "code_sha256": r["code_sha256"],
                "epochs": r["epochs"],
            }
            atomic_write_json(staging / "curves" / f"{key}.json", curve)
            tables = plan.work / f"{key}.bias.pt"
            if r["seed"] == plan.seeds[0] and r["bias_sha256"] is not None:
                if not tables.is_file() or file_sha256(tables) != r["bias_sha256"]:
                    again = f"delete {plan.work / key}.json and {plan.work / key}/"
                    raise ValueError(
                        f"{tables} is not the file its run wrote: {again} to retrain it"
                    )
                rel = bias_file(r["dataset"], r["pos"], r["variant"])
                (staging / "bias").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tables, staging / rel)
                bias_files.append(rel)
        results["bias_files"] = bias_files
        results["header"]["hashed"] = "at publish"
        atomic_write_json(staging / "results.json", results)
        atomic_write_text(
            staging / "results.md", results_table(results["summary"], results["chance"])
        )
        for name in KEPT + (DERIVED if state == "current" else ()):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        finish_staging(staging, folder, dropped=() if state == "current" else DERIVED)


def _stale_derived(folder: Path) -> ValueError:
    return ValueError(
        f"{folder / DERIVED[0]} was computed from other runs: pass --replace-derived to remove it "
        f"(then run the resolution experiment again), or choose a new --name"
    )


def check_publishable(plan: AblationPlan) -> None:
    """Before any training, refuse what the publish would: runs trained with other result settings
    (:data:`~companion.experiments.related.RESULT_SETTINGS` and the variant), published runs this
    plan lacks, and derived results its runs would leave stale (unless ``--replace-derived``)."""
    if not (plan.folder / "results.json").is_file():
        return
    published = load_results(plan.folder)
    now = recorded_settings(plan.base, ("result",))
    before = {**published["plan"]["train"], "variant": published["plan"].get("variant", "swin")}
    compared = {k: now[k] for k in RESULT_SETTINGS if k in now and k in before}
    diff = settings_differences(before, {**compared, "variant": plan.base.variant})
    sources, planned = run_sources(published), {run_key(d, p, s, v) for d, p, v, s in plan.runs()}
    lacked = sorted(set(sources) - planned)
    if diff or lacked:
        held = f"runs trained with other settings ({'; '.join(diff)})"
        if not diff:
            held = f"published runs this plan lacks ({', '.join(lacked[:3])})"
        again = f"publish under another --name, or remove {plan.folder} first to replace it"
        raise ValueError(f"{plan.folder} holds {held}: {again}")
    state = derived_state(plan.folder, sources)
    changes = plan.fresh or set(sources) != planned  # runs trained again give other sources
    if (state == "stale" or (state == "current" and changes)) and not plan.replace_derived:
        raise _stale_derived(plan.folder)


# --------------------------------------------------------------------------- command line


#: The plan's own flags (besides the grid, --extra, and every per-run setting of the trainer).
PLAN_FLAGS = ("name", "results_dir", "work_dir", "jobs", "fresh", "replace_derived")


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
    extra = "controlled-variant cells, each trained for every seed (grid-cell:rel:torus)"
    p.add_argument("--extra", nargs="+", default=[], metavar="DATASET:POS:VARIANT", help=extra)
    seeds = "the --extra cells' seeds, some of --seeds (default: all of them)"
    p.add_argument("--extra-seeds", nargs="+", type=int, metavar="SEED", help=seeds)
    add_arguments(p, AblationPlan, [plan_fields[n] for n in PLAN_FLAGS[1:]])
    threads = "torch.set_num_threads in each run (default: torch's with --jobs 1, else 1)"
    p._option_string_actions["--threads"].help = threads  # what the runs get (threads_per_worker)
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
