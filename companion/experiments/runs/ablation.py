"""The position-encoding ablation: every ``pos`` x seed x dataset, one results folder.

    python -m companion.commands.ablation --name my-ablation --config tiny-cpu --seeds 0 1 2 \
        --epochs 12

Each grid point is one :func:`companion.train.train` run in ``<work-dir>/<name>/<key>/``; when it
finishes, its record ``<key>.json`` (its own recorded settings, the hash of the code that trained
it, the hardware, every epoch's metrics) and its bias tables ``<key>.bias.pt`` are written beside
it. Only when *every* run has finished is ``results/<name>/`` written, all at once (built in a
staging folder, then swapped in), so a failed or interrupted ablation never replaces or mixes
into published results:

* ``results.json``: a header (hardware, torch, git commit and whether the tree was dirty, this
  command, the date) and every run's final metrics, all taken from the runs' own records;
* ``results.md``: mean ± std (over seeds) of the final test accuracy per cell x dataset;
* ``curves/<key>.json``: each run's per-epoch metrics and settings, ``<key>`` being
  ``<dataset>__<pos>__seed<k>``, or ``<dataset>__<pos>__<variant>__seed<k>`` for a controlled
  variant (``--extra grid-cell:rel:torus`` adds that cell, for every seed);
* ``bias/<dataset>__<pos>[__<variant>].pt``: for the first seed of every cell whose model has
  them, the learned relative position bias tables of every block (``weights_only``-loadable).

Stopping and starting again is safe: a finished run is reused only when its recorded settings and
code hash equal the requested ones, and an interrupted run resumes from its checkpoint only under
the same condition; otherwise the ablation refuses, saying how to start afresh (``--fresh``, or a
new ``--name``).
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
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from companion._io import (
    TEMP_SUFFIX,
    atomic_write,
    atomic_write_json,
    atomic_write_text,
    file_sha256,
)
from companion.attention import WindowAttention
from companion.data import num_classes
from companion.data.tasks import IMAGE_SIZE
from companion.experiments.evaluation import evaluation_splits, labels_record, split_results
from companion.experiments.integrity import seal
from companion.experiments.results import (
    DERIVED,
    RESULTS_DIR,
    WORK_DIR,
    bias_file,
    results_table,
    run_key,
    run_sources,
    summarize,
)
from companion.experiments.runs.pool import run_all, threads_per_worker
from companion.experiments.runs.publish import (
    check_derived,
    derived_state,
    finish_staging,
    publish_lock,
    restore_interrupted_swap,
)
from companion.position import Position
from companion.swin_configs import canonical_variant
from companion.train import CHECKPOINT, ModelFactory, TrainConfig, load_checkpoint, train
from companion.train.build import build_model
from companion.train.checkpoint import load_states, settings_differences
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import (
    MAX_PROCESSES,
    add_arguments,
    add_config_arguments,
    check_fields,
    check_setting,
    config_fields,
    config_from_args,
    data_size,
    recorded_settings,
    setting,
)
from companion.train.provenance import hardware, provenance, source_digest
from companion.train.rundir import RunLock, check_writable_folder

#: ``companion._io``'s temporary files of a run record or bias table in the work folder.
WORK_TEMP = re.compile(rf"\..+\.(json|bias\.pt)\.\w+{re.escape(TEMP_SUFFIX)}")
#: Files of a results folder written before its runs (the predictions), carried over unchanged
#: by every publish.
KEPT = ("predictions.md",)
#: The settings a reused (or resumed) run must share with the request, besides the code hash.
COMPARED_KINDS = ("result", "hardware")
GRID = {f.name: f.metadata["grid"][0] for f in config_fields() if f.metadata["grid"]}
_GRID_DEFAULT = {f.name: f.metadata["grid"][1] for f in config_fields() if f.metadata["grid"]}


class StaleRunError(ValueError):
    """A saved run whose settings or code differ from the request; the message says what to do."""


@dataclass(frozen=True)
class AblationPlan:
    """What to run: the grid ``datasets x pos x seeds`` (the model of ``base.variant``, the Swin
    itself by default), plus each ``extra`` cell ``(dataset, pos, variant)`` for every seed, each
    run with ``base``'s other settings. Frozen and checked when built: every cell's run
    configuration is built once here (``TrainConfig`` checks itself)."""

    name: str = setting(MISSING, "results/<name>/ receives the results", kind="process")
    datasets: tuple[str, ...] = _GRID_DEFAULT["dataset"]
    pos: tuple[Position, ...] = _GRID_DEFAULT["pos"]  # names are read into Positions
    seeds: tuple[int, ...] = _GRID_DEFAULT["seed"]
    base: TrainConfig = field(default_factory=lambda: TrainConfig(progress=False))
    results_dir: str = setting(RESULTS_DIR, "where results/<name>/ goes", kind="process")
    work_dir: str = setting(WORK_DIR, "checkpoints and run records (not committed)", kind="process")
    jobs: int = setting(
        1, "runs in parallel (processes, one torch thread each)", kind="process", low=1,
        high=MAX_PROCESSES,
    )  # fmt: skip
    fresh: bool = setting(False, "discard this --name's saved runs and train anew", kind="process")
    replace_derived: bool = setting(
        False, "publish even where results/<name>/ holds results derived from other runs (the "
        "resolution experiment's transfer.json): they are removed, to be computed again",
        kind="process",
    )  # fmt: skip
    extra: tuple[tuple[str, Position, str], ...] = ()
    #: The seeds of the ``extra`` cells (None: ``seeds``); a subset of ``seeds``, so that every
    #: variant run has its baseline run (same dataset, pos and seed) to be compared with.
    extra_seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain folder name, got {self.name!r}")
        check_grid({"dataset": self.datasets, "pos": self.pos, "seed": self.seeds})
        for name in ("datasets", "pos", "seeds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "pos", tuple(map(Position.parse, self.pos)))
        variant = canonical_variant(self.base.variant)  # one model, one name (and one row)
        if variant != self.base.variant:
            object.__setattr__(self, "base", replace(self.base, variant=variant))
        object.__setattr__(self, "extra", tuple(check_extra_cell(tuple(c)) for c in self.extra))
        if self.extra_seeds is not None:
            object.__setattr__(self, "extra_seeds", tuple(self.extra_seeds))
            seeds = self.extra_seeds
            if not seeds or set(seeds) - set(self.seeds) or len(set(seeds)) < len(seeds):
                raise ValueError(
                    f"extra_seeds must be distinct values of seeds {list(self.seeds)} (each "
                    f"variant run needs its baseline run), got {list(self.extra_seeds)}"
                )
        cells = [(d, p, self.base.variant) for d in self.datasets for p in self.pos]
        for cell in self.extra:
            if cell in cells:
                raise ValueError(f"extra: cell {':'.join(map(str, cell))} is already in the plan")
            cells.append(cell)
        check_fields(self)
        for dataset, pos, variant in cells:  # each cell's settings together, as its runs get them
            try:
                replace(self.base, dataset=dataset, pos=pos, variant=variant)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"cell {dataset}:{pos}:{variant}: {exc}") from None

    @property
    def folder(self) -> Path:
        return Path(self.results_dir) / self.name

    @property
    def work(self) -> Path:
        return Path(self.work_dir) / self.name

    def cells(self) -> list[tuple[str, Position, str]]:
        """Every ``(dataset, pos, variant)``: the main grid, then the extra cells."""
        main = [(d, p, self.base.variant) for d in self.datasets for p in self.pos]
        return main + list(self.extra)

    def runs(self) -> list[tuple[str, Position, str, int]]:
        """Every ``(dataset, pos, variant, seed)``, seed-major: the first seed's cells all come
        first, so an early look (or an interrupted ablation) already compares every cell. The
        extra cells run for ``extra_seeds`` only."""
        extra_seeds = self.seeds if self.extra_seeds is None else self.extra_seeds
        main = [(d, p, self.base.variant) for d in self.datasets for p in self.pos]
        return [
            (d, p, v, s)
            for s in self.seeds
            for d, p, v in main + [c for c in self.extra if s in extra_seeds]
        ]

    def config(self, dataset: str, pos: Position, seed: int, variant: str = "swin") -> TrainConfig:
        out = str(self.work / run_key(dataset, pos, seed, variant))
        return replace(
            self.base, dataset=dataset, pos=pos, variant=variant, seed=seed, out=out,
            progress=False,
        )  # fmt: skip


def check_grid(grid: Mapping[str, Sequence[Any]]) -> None:
    """Check the grid's axes (``{"dataset": ..., "pos": ..., "seed": ...}``): non-empty, no
    value twice, each value one the trainer takes; an error names the axis by its flag."""
    for axis, values in grid.items():
        if not values:
            raise ValueError(f"datasets, pos and seeds must each be non-empty, got {GRID[axis]}=()")
        repeated = sorted({v for v in values if list(values).count(v) > 1}, key=str)
        if repeated:
            raise ValueError(
                f"{GRID[axis]}: {', '.join(map(str, repeated))} given more than once "
                f"(each value counts once: a repeat would inflate n)"
            )
        for value in values:
            try:
                check_setting(axis, value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{GRID[axis]}: {exc}") from None


def check_extra_cell(cell: object) -> tuple[str, Position, str]:
    """Check an extra cell ``(dataset, pos, variant)``: known values, a controlled variant (not
    ``"swin"``: those cells are the main grid's). Whether the variant can change ``pos`` is
    the model's rule, checked when the plan builds the cell's configuration."""
    if not isinstance(cell, tuple) or len(cell) != 3:
        raise ValueError(f"extra: a cell must be (dataset, pos, variant), got {cell!r}")
    dataset, pos, variant = cell
    try:
        for name, value in (("dataset", dataset), ("pos", pos), ("variant", variant)):
            check_setting(name, value)
        pos = Position.parse(pos)
        variant = canonical_variant(variant)  # torus+torus and torus are one model, one cell
        if variant == "swin":
            raise ValueError("variant 'swin' is the main grid's (--datasets, --pos)")
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"extra cell {dataset}:{pos}:{variant}: {exc}") from None
    return dataset, pos, variant


def parse_cell(text: str) -> tuple[str, Position, str]:
    """``"grid-cell:rel:torus"`` -> ``("grid-cell", Position.parse("rel"), "torus")`` (the
    other values are checked by the plan that takes it, ``check_extra_cell``)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(
            f"extra: a cell is dataset:pos:variant (grid-cell:rel:torus), got {text!r}"
        )
    return parts[0], Position.parse(parts[1]), parts[2]


def bias_tables(model: nn.Module) -> dict[str, dict[str, Any]]:
    """Every relative position bias table of ``model``, by module name.

    Returns ``{name: {"table": ((2Wh-1)(2Ww-1), H) tensor, "window_size": [Wh, Ww]}}``: always
    one row per signed offset (``offset_table()``), also for a table that stores one row per
    ``(|dy|, |dx|)`` (``BiasTable(offsets="magnitude")``), so every table plots the same way.
    """
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


def _differences(saved_settings: dict[str, Any], saved_code: object, cfg: TrainConfig) -> str:
    diff = settings_differences(saved_settings, recorded_settings(cfg, COMPARED_KINDS))
    if saved_code != source_digest():
        diff.append("the companion code changed since (its sha256 differs)")
    return "; ".join(diff)


def check_sealed(record: dict[str, Any], path: Path) -> None:
    """Refuse a run record whose content no longer matches its ``record_sha256`` (edited after
    the run wrote it), or one without it (written before records were sealed)."""
    if record.get("record_sha256") != seal(record)["record_sha256"]:
        state = "has no content hash" if "record_sha256" not in record else "was edited"
        raise StaleRunError(
            f"{path} {state} (record_sha256 does not match its content): it cannot be trusted"
        )


def _refuse(plan: AblationPlan, path: Path, why: str) -> StaleRunError:
    return StaleRunError(
        f"{path} was made with other settings or code ({why}); pass --fresh to discard "
        f"{plan.work} and train again, or choose a new --name"
    )


def _read_record(plan: AblationPlan, path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text())
        problem = "" if isinstance(record, dict) else f"it holds a {type(record).__name__}"
    except ValueError as exc:
        record, problem = None, f"not JSON: {exc}"
    needed = ("settings", "code_sha256", "final", "epochs", "splits")
    if not problem and any(k not in record for k in needed):
        problem = f"it lacks one of {list(needed)}"
    if problem:
        raise StaleRunError(
            f"{path} is not a run record ({problem}); pass --fresh to discard {plan.work} and "
            f"train again, or choose a new --name"
        )
    try:
        check_sealed(record, path)
        checkpoint = path.with_name(path.name.removesuffix(".json")) / CHECKPOINT
        if not checkpoint.is_file() or file_sha256(checkpoint) != record.get("checkpoint_sha256"):
            raise StaleRunError(f"{checkpoint} is missing or not the one {path} was written with")
    except StaleRunError as exc:
        raise StaleRunError(
            f"{exc}; pass --fresh to discard {plan.work} and train again, or choose a new --name"
        ) from None
    return record


def _run_one(
    plan: AblationPlan,
    dataset: str,
    pos: Position,
    variant: str,
    seed: int,
    factory: ModelFactory | None,
) -> dict[str, Any]:
    """Train one run, or reuse it when its record matches the request exactly."""
    cfg = plan.config(dataset, pos, seed, variant)
    out = Path(cfg.out)
    record_path = out.with_name(out.name + ".json")
    if record_path.exists():
        record = _read_record(plan, record_path)
        why = _differences(record["settings"], record["code_sha256"], cfg)
        if why:
            raise _refuse(plan, record_path, why)
        if not _tables_intact(record, out.with_name(out.name + ".bias.pt")):
            _restore_tables(record, cfg, out, dataset, factory)
        return record
    if (out / CHECKPOINT).exists():
        saved = load_checkpoint(out / CHECKPOINT)
        why = _differences(saved["config"], saved["code_sha256"], cfg)
        if why:
            raise _refuse(plan, out / CHECKPOINT, why)
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
        "splits": split_results(
            result.model, dataset, cfg.test_size, cfg.data_seed, data_size(cfg), cfg.rendering
        ),
    }
    record["bias_sha256"] = _save_tables(result.model, out)
    record = seal(json.loads(json.dumps(record)))  # hashed as a reuse reads it back
    atomic_write_json(record_path, record)  # last: its presence means the run is complete
    return record


# --------------------------------------------------------------------------- publishing


def _common(records: Sequence[dict[str, Any]], get, what: str) -> Any:
    values = {json.dumps(get(r), sort_keys=True) for r in records}
    if len(values) == 1:
        return get(records[0])
    if what == "hardware":
        return "mixed: " + " | ".join(sorted(values))
    raise ValueError(f"the runs disagree on {what} ({sorted(values)}); nothing was published")


def _results(plan: AblationPlan, records: list[dict[str, Any]], header: dict[str, Any]) -> dict:
    """``results.json``'s content, from the runs' own records (never from the command line)."""
    first = records[0]["settings"]
    shared = [k for k in first if k not in GRID and k != "variant"]
    train_settings = {k: _common(records, lambda r, k=k: r["settings"][k], k) for k in shared}
    code = _common(records, lambda r: r["code_sha256"], "code_sha256")
    for key in ("cpu", "cpu_count", "gpu", "torch", "python", "platform"):
        header[key] = _common(records, lambda r, key=key: r["hardware"][key], "hardware")
    header["companion_sha256"] = code
    header["threads_per_run"] = train_settings.get("threads") or "torch default"
    header["compute_s"] = sum(r["wall_s"] for r in records)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    chance = {d: 1 / num_classes(d) for d in datasets}
    runs = [{k: v for k, v in r.items() if k != "epochs"} for r in records]
    summary = summarize(runs)
    # Records written before img_size and rendering were settings drew 32-px scaled images.
    drawn = (
        train_settings.get("img_size") or IMAGE_SIZE,
        train_settings.get("rendering", "scaled"),
    )
    test_sets = {
        d: {
            split: labels_record(
                d, split, train_settings["test_size"], train_settings["data_seed"], *drawn
            )
            for split in evaluation_splits(d)
        }
        for d in datasets
    }
    for r in records:  # every run was measured on the test images kept here
        for split, got in r["splits"].items():
            if got["labels_sha256"] != test_sets[r["dataset"]][split]["labels_sha256"]:
                raise ValueError(
                    f"run {run_key(r['dataset'], r['pos'], r['seed'], r['variant'])} was "
                    f"measured on other {split} images than the plan's; nothing was published"
                )
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
            "train": train_settings,
        },
        "chance": chance,
        "test_sets": test_sets,
        "summary": summary,
        "runs": runs,
    }


def _publish(plan: AblationPlan, results: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write the results folder into a staging folder, then swap it in (one atomic exchange
    where the OS has one): the previous folder stays whole and readable until that moment.
    Results derived from the previous folder's runs (the resolution experiment's) are carried
    over when they were computed from exactly these records and checkpoints. One publisher at a
    time (``publish_lock``): derived results are checked again under the lock, and the new
    folder must keep every file of the old one (``finish_staging``)."""
    folder = plan.folder
    with publish_lock(folder) as staging:
        _check_derived(plan, records)  # again: another process may have published meanwhile
        bias_files = []
        for r in records:
            variant = r.get("variant", "swin")
            key = run_key(r["dataset"], r["pos"], r["seed"], variant)
            summary = {k: r[k] for k in ("final", "best_test_acc", "wall_s", "num_params")}
            atomic_write_json(
                staging / "curves" / f"{key}.json",
                {"summary": summary, "settings": r["settings"], "code_sha256": r["code_sha256"],
                 "epochs": r["epochs"]},
            )  # fmt: skip
            tables = plan.work / f"{key}.bias.pt"
            if r["seed"] == plan.seeds[0] and tables.is_file():
                if not _tables_intact(r, tables):
                    raise ValueError(f"{tables} changed after its run: run the command again")
                rel = bias_file(r["dataset"], r["pos"], variant)
                (staging / "bias").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tables, staging / rel)
                bias_files.append(rel)
        results["bias_files"] = bias_files
        results["header"]["hashed"] = "at publish"
        atomic_write_json(staging / "results.json", results)
        table = results_table(results["summary"], results["chance"])
        atomic_write_text(staging / "results.md", table)
        for name in KEPT:  # written before the run (predictions); never rewritten by it
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        kept = derived_state(folder, run_sources(results)) == "current"
        for name in DERIVED if kept else ():
            if (folder / name).is_file():
                shutil.copyfile(folder / name, staging / name)
        finish_staging(staging, folder, dropped=() if kept else DERIVED)


def _save_tables(model: nn.Module, out: Path) -> str | None:
    """Save ``model``'s bias tables beside its run folder (``<run>.bias.pt``); their sha256, or
    ``None`` for a model without tables."""
    tables = bias_tables(model)
    if not tables:
        return None
    path = out.with_name(out.name + ".bias.pt")
    atomic_write(path, lambda f: torch.save(tables, f))
    return file_sha256(path)


def _tables_intact(record: dict[str, Any], tables: Path) -> bool:
    """Whether ``tables`` (a run's ``.bias.pt``) is the file its run wrote: the hash the record
    sealed (``bias_sha256``; ``None``: the model had no tables), or, for a record from before
    runs recorded it, a file that loads (missing: only if the run's position has no table)."""
    if "bias_sha256" in record:
        expected = record["bias_sha256"]
        return expected is None or (tables.is_file() and file_sha256(tables) == expected)
    if not tables.is_file():
        return not Position.parse(record["pos"]).has_table
    try:
        torch.load(tables, map_location="cpu", weights_only=True)
    except Exception:  # any reason: the file is not one the run could have written
        return False
    return True


def _restore_tables(
    record: dict[str, Any],
    cfg: TrainConfig,
    out: Path,
    dataset: str,
    factory: ModelFactory | None,
) -> None:
    """Write a reused run's missing or damaged ``.bias.pt`` again from its checkpoint (whose
    hash ``_read_record`` has checked): the same tables, without training again."""
    tables = out.with_name(out.name + ".bias.pt")
    print(f"{tables} is missing or damaged: writing it again from {out / CHECKPOINT}", flush=True)
    saved = load_checkpoint(out / CHECKPOINT)
    model = build_model(cfg, num_classes(dataset), factory)
    load_states(out / CHECKPOINT, saved, model=model)
    written = _save_tables(model, out)
    if record.get("bias_sha256", written) != written:
        raise StaleRunError(
            f"{tables} written again from {out / CHECKPOINT} is not the one its record names; "
            f"pass --fresh to train the runs again"
        )


def _check_keeps_published_runs(plan: AblationPlan) -> None:
    """Before any training: refuse a plan that would publish over ``plan.folder`` without some
    of the runs published there (``publish.check_nothing_lost`` would refuse it afterwards)."""
    published = {p.stem for p in (plan.folder / "curves").glob("*.json")}
    dropped = sorted(published - {run_key(d, p, s, v) for d, p, v, s in plan.runs()})
    if dropped:
        raise ValueError(
            f"{plan.folder} holds {len(dropped)} published run(s) this plan does not have "
            f"({', '.join(dropped[:3])}{', ...' if len(dropped) > 3 else ''}): publish under "
            f"another --name, or remove {plan.folder} first if this is meant to replace it"
        )


def _check_derived(plan: AblationPlan, records: list[dict[str, Any]] | None) -> None:
    """:func:`~companion.experiments.runs.publish.check_derived` for ``plan`` (``--replace-derived``
    lets the publish remove derived results instead)."""
    if not plan.replace_derived:
        keys = {run_key(d, p, s, v) for d, p, v, s in plan.runs()}
        check_derived(plan.folder, keys, plan.fresh, records)


def run_ablation(
    plan: AblationPlan, factory: ModelFactory | None = None, command: str | None = None
) -> dict[str, Any]:
    """Run (or reuse) every grid point of ``plan`` (``plan.jobs`` at a time), then publish.

    ``factory`` (see :func:`companion.train.train`) must be picklable when ``jobs > 1``.
    """
    check_writable_folder(plan.folder, "--results-dir/--name")  # before any training
    check_writable_folder(plan.work, "--work-dir/--name")
    restore_interrupted_swap(plan.folder)
    _check_derived(plan, None)
    _check_keeps_published_runs(plan)
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
        task = functools.partial(_run_point, plan, factory)
        records = run_all(
            task, plan.runs(), plan.jobs, hint, describe=lambda r: run_key(r[0], r[1], r[3], r[2])
        )
        header = provenance(command)
        header["wall_s"] = time.perf_counter() - start
        header["jobs"] = plan.jobs
        results = _results(plan, records, header)
        _publish(plan, results, records)
    return json.loads(json.dumps(results))


def _run_point(
    plan: AblationPlan, factory: ModelFactory | None, point: tuple[str, Position, str, int]
) -> dict[str, Any]:
    return _run_one(plan, *point, factory)


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
            extra=tuple(parse_cell(text) for text in args.extra),
            extra_seeds=None if args.extra_seeds is None else tuple(args.extra_seeds),
            **{name: getattr(args, name) for name in PLAN_FLAGS},
        )
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    command = shlex.join(["python", "-m", "companion.commands.ablation", *argv])

    def work() -> None:
        results = run_ablation(plan, command=command)
        print(results_table(results["summary"], results["chance"]))
        header = results["header"]
        print(
            f"wrote {plan.folder} in {header['wall_s']:.0f} s ({header['compute_s']:.0f} s of runs)"
        )

    return run_reporting_errors("python -m companion.commands.ablation", work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
