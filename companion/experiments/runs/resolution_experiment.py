"""The resolution-transfer experiment: a finished 32-px ablation, every run moved to larger images.

    python -m companion.commands.resolution_experiment --name cpu-transfer --sizes 48 --jobs 2

Each run of the ablation's main grid (its checkpoint checked against the published hash) is moved
to every size under each condition of :mod:`companion.experiments.resolution_transfer` and measured
on its task drawn at that size in each rendering, as moved and after a short fine-tune.
``transfer.json`` (one row per run x rendering x size x condition, and the hashes of the runs it
came from) and ``transfer.md`` join the ablation's folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch

from companion._io import atomic_write_json, atomic_write_text, file_sha256
from companion.data import RENDERINGS, ImageClassificationData, num_classes
from companion.experiments.evaluation import hits, load_split, pack_bits
from companion.experiments.integrity import seal
from companion.experiments.resolution_transfer import (
    EVAL_SIZES,
    MAX_SIZE,
    TRAIN_SIZE,
    moved_model,
    transfer_conditions,
)
from companion.experiments.results import (
    DERIVED,
    load_results,
    run_key,
    run_sources,
)
from companion.experiments.runs.ablation_plan import RESULTS_DIR, WORK_DIR
from companion.experiments.runs.pool import run_all, threads_per_worker
from companion.experiments.runs.publish import finish_staging, publish_lock
from companion.experiments.transfer_results import transfer_summary, transfer_table
from companion.swin import SwinTransformer
from companion.train import CHECKPOINT, TrainConfig, load_checkpoint, train_steps
from companion.train.build import build_model
from companion.train.checkpoint import load_states, settings_differences
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import (
    MAX_IMAGES,
    MAX_PROCESSES,
    MAX_STEPS,
    add_arguments,
    check_fields,
    setting,
    settings_from_record,
)
from companion.train.provenance import provenance


@dataclasses.dataclass(frozen=True)
class TransferPlan:
    """Which published ablation to move, with how many processes, and what every run goes
    through (the ``result`` settings, recorded): the sizes and the fine-tune after each move."""

    name: str = setting(dataclasses.MISSING, "the ablation's name: results/<name>/", kind="process")
    results_dir: str = setting(RESULTS_DIR, "where results/<name>/ is", kind="process")
    work_dir: str = setting(WORK_DIR, "the ablation's checkpoints (its --work-dir)", kind="process")
    jobs: int = setting(1, "runs moved in parallel", kind="process", low=1, high=MAX_PROCESSES)
    threads: int | None = setting(
        None, "torch threads per run (default: 1 with --jobs > 1)", kind="process", low=1,
        high=MAX_PROCESSES,
    )  # fmt: skip
    replace: bool = setting(False, "overwrite a transfer.json of other settings", kind="process")
    sizes: tuple[int, ...] = setting(
        EVAL_SIZES, "image sizes (px) every run is moved to", kind="result", low=1, high=MAX_SIZE
    )
    renderings: tuple[str, ...] = setting(
        RENDERINGS, "scaled: the 32-px scene; world: a larger canvas", kind="result",
        choices=RENDERINGS,
    )  # fmt: skip
    finetune_steps: int = setting(
        50, "fine-tune steps after each move; 0: none", kind="result", low=0, high=MAX_STEPS
    )
    finetune_lr: float = setting(
        1e-4, "the fine-tune's constant learning rate", kind="result", above=0.0, high=1.0
    )
    finetune_batch_size: int = setting(
        32, "images per fine-tune step", kind="result", low=1, high=MAX_IMAGES
    )

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"name must be a plain folder name, got {self.name!r}")
        object.__setattr__(self, "sizes", tuple(self.sizes))
        object.__setattr__(self, "renderings", tuple(self.renderings))
        check_fields(self)

    def recorded(self) -> dict[str, Any]:
        """The ``result`` settings, as ``transfer.json`` records them."""
        fields = dataclasses.fields(self)
        found = {f.name: getattr(self, f.name) for f in fields if f.metadata["kind"] == "result"}
        found |= {"sizes": list(self.sizes), "renderings": list(self.renderings)}
        found["images"] = (
            "drawn at each size by the task's generator (companion.data, size, rendering)"
        )
        return found


def finetune_config(cfg: TrainConfig, settings: TransferPlan) -> TrainConfig:
    """The run's own settings with the fine-tune's rate and batch, plain cross-entropy, no clip."""
    return dataclasses.replace(
        cfg, lr=settings.finetune_lr, batch_size=settings.finetune_batch_size,
        label_smoothing=0.0, clip_grad=0.0, progress=False,
    )  # fmt: skip


def transfer_rows(
    cfg: TrainConfig, model: SwinTransformer, settings: TransferPlan
) -> list[dict[str, Any]]:
    """One row per rendering x size x condition: test accuracy and which images were right
    (``correct``, packed bits), as moved and after the fine-tune (``_finetuned``)."""

    def data(split: str, size: int, rendering: str) -> ImageClassificationData:
        n = cfg.test_size if split == "test" else cfg.train_size
        return load_split(cfg.dataset, split, n, cfg.data_seed, size, rendering)

    def measured(moved: SwinTransformer, test: ImageClassificationData, suffix: str = "") -> dict:
        right = hits(moved, test)
        return {f"acc{suffix}": float(right.float().mean()), f"correct{suffix}": pack_bits(right)}

    tune = finetune_config(cfg, settings)
    # At 32 px both renderings draw the same images: the trained model is measured once.
    trained = measured(model, data("test", TRAIN_SIZE, "scaled"))
    rows = [{"size": TRAIN_SIZE, "rendering": "scaled", "condition": "trained", **trained}]
    for rendering in settings.renderings:
        for size in settings.sizes:
            test, train = data("test", size, rendering), data("train", size, rendering)
            for condition in transfer_conditions(cfg.pos):
                moved = moved_model(model, size, condition)
                row = {"size": size, "rendering": rendering, "condition": condition.name}
                row |= measured(moved, test)
                if settings.finetune_steps:
                    start = time.perf_counter()
                    train_steps(moved, train, tune, settings.finetune_steps, "finetune_batch_size")
                    row |= measured(moved, test, "_finetuned")
                    row["finetune_s"] = time.perf_counter() - start
                rows.append(row)
    run = {"dataset": cfg.dataset, "pos": str(cfg.pos), "variant": cfg.variant, "seed": cfg.seed}
    return [{**run, **r} for r in rows]


def _moved_run(plan: TransferPlan, path: Path) -> list[dict[str, Any]]:
    """:func:`transfer_rows` of the run whose checkpoint is ``path`` (a pool's task)."""
    threads = threads_per_worker(plan.jobs, plan.threads)
    if threads:
        torch.set_num_threads(threads)
    saved = load_checkpoint(path)
    cfg = TrainConfig(**settings_from_record(saved["config"]))
    model = cast(SwinTransformer, build_model(cfg, num_classes(cfg.dataset), None))
    load_states(path, saved, model=model)
    return transfer_rows(cfg, model.eval(), plan)


def run_transfer(plan: TransferPlan, command: str | None = None) -> dict[str, Any]:
    """Move every run of the ablation's main grid, ``plan.jobs`` at a time, and publish
    ``transfer.json`` (one with other settings is kept unless ``plan.replace``)."""
    folder, work = Path(plan.results_dir) / plan.name, Path(plan.work_dir) / plan.name
    start = time.perf_counter()
    published = load_results(folder)
    ablation, sources = published["plan"], run_sources(published)
    variant = ablation.get("variant", "swin")
    runs = []
    for seed in ablation["seeds"]:
        for dataset in ablation["datasets"]:
            for pos in ablation["pos"]:
                key = run_key(dataset, pos, seed, variant)
                path = work / key / CHECKPOINT
                if not path.is_file() or file_sha256(path) != sources[key]["checkpoint_sha256"]:
                    raise ValueError(
                        f"{path} is missing or is not the checkpoint the published results were "
                        f"computed from: publish that ablation again, then run this again"
                    )
                runs.append(path)
    recorded = plan.recorded()
    _check_previous(folder, recorded, plan.replace)
    task = functools.partial(_moved_run, plan)
    hint = "nothing was written; run the same command again to start over"
    rows = [row for run_rows in run_all(task, runs, plan.jobs, hint) for row in run_rows]
    header = {**provenance(command), "wall_s": time.perf_counter() - start, "jobs": plan.jobs}
    results = {"header": header, "plan": ablation, "settings": recorded, "rows": rows}
    results["summary"] = transfer_summary(rows)
    results["sources"] = sources
    results = seal(results)  # the rows as this run computed them (load_transfer checks it)
    with publish_lock(folder) as staging:
        shutil.copytree(folder, staging)
        atomic_write_text(staging / DERIVED[1], transfer_table(results["summary"]) + "\n")
        atomic_write_json(staging / DERIVED[0], results)
        finish_staging(staging, folder)
    return json.loads(json.dumps(results))


def _check_previous(folder: Path, recorded: dict[str, Any], replace: bool) -> None:
    """Refuse to overwrite a ``transfer.json`` computed with other settings, unless ``replace``."""
    path = folder / DERIVED[0]
    if replace or not path.is_file():
        return
    diff = settings_differences(json.loads(path.read_text())["settings"], recorded)
    if diff:
        raise ValueError(
            f"{path} holds an experiment with other settings ({'; '.join(diff)}): pass --replace "
            f"to overwrite it, or publish the ablation under another --name"
        )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m companion.commands.resolution_experiment",
        description="Move every run of a published ablation to larger images (chapter 6).",
    )
    add_arguments(p, TransferPlan, dataclasses.fields(TransferPlan))
    add_debug_flag(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        plan = TransferPlan(**{f: getattr(args, f) for f in TransferPlan.__dataclass_fields__})
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    command = shlex.join([*parser.prog.split(), *argv])

    def work() -> None:
        results = run_transfer(plan, command)
        print(transfer_table(results["summary"]))
        folder = Path(plan.results_dir) / plan.name
        print(f"wrote {folder / DERIVED[0]} in {results['header']['wall_s']:.0f} s")

    return run_reporting_errors(parser.prog, work, args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
