"""Train the learned absolute position embeddings chapter 1 reads, and save them.

    nice -n 5 python -m companion.commands.learned_embedding --out results/learned-abs
    nice -n 5 python -m companion.experiments.runs.learned_vit --out results/learned-vit

The Swin (tiny-cpu, ``pos="abs"``) and the ViT (``companion.vit``) train on ``grid-cell`` with
chapter 5's settings, so that the two embeddings differ by the architecture only; the ViT's run
starts from a committed tree and records the sha256 of its predictions. Each saves its embedding as
``(1, h, w, D)``, ``provenance.json`` (commit, hardware, wall time) and ``SHA256SUMS``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from companion._io import atomic_write, atomic_write_json, file_sha256
from companion.experiments.chapter1 import EMBEDDING_FILE, PROVENANCE_FILE, VIT_EMBEDDING_FILE
from companion.experiments.integrity import write_manifest
from companion.experiments.predictions import PREDICTIONS
from companion.experiments.records import refresh_table
from companion.position import Position
from companion.train import TrainConfig, train
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import settings_from_record
from companion.train.provenance import PACKAGE_DIR, provenance
from companion.train.rundir import check_writable_folder
from companion.vit import VisionTransformer, ViTConfig

PROG = "python -m companion.commands.learned_embedding"
VIT_PROG = "python -m companion.experiments.runs.learned_vit"

#: Chapter 5's CPU-ablation settings (results/run_cpu_ablation.sh), for one abs run on grid-cell,
#: as the record states them (``recorded_settings``' names).
RUN_SETTINGS = dict(
    config="tiny-cpu", dataset="grid-cell", pos="abs", seed=0, epochs=20, batch_size=16,
    lr=1e-3, warmup_epochs=2.0, label_smoothing=0.0, train_size=2000, test_size=1000,
    threads=1, device="cpu", progress=False,
)  # fmt: skip
#: The ViT: ``VisionTransformer``'s arguments (``num_classes`` comes from the task).
MODEL_SETTINGS: dict[str, Any] = dict(
    img_size=32, patch_size=4, embed_dim=32, depth=4, num_heads=2, mlp_ratio=4.0
)
#: The Swin run's training settings for the ViT (``config`` and ``pos`` name the Swin).
TRAIN_SETTINGS = {k: v for k, v in RUN_SETTINGS.items() if k not in ("config", "pos")}


def vit_factory(num_classes: int, pos: Position) -> nn.Module:
    """``companion.train``'s model factory: the ViT of :data:`MODEL_SETTINGS` (``pos`` unused)."""
    return VisionTransformer(ViTConfig(num_classes=num_classes, **MODEL_SETTINGS))


def train_and_save(
    out_dir: Path,
    command: str | None = None,
    vit: bool = False,
    settings: dict[str, Any] | None = None,
    predictions: Path | None = None,
) -> dict[str, Any]:
    """Train the Swin (or, with ``vit``, the ViT), save and hash ``out_dir``; return the record."""
    out_dir = Path(out_dir)
    file_name = VIT_EMBEDDING_FILE if vit else EMBEDDING_FILE
    check_writable_folder(out_dir, "--out")
    origin = provenance(command)  # before training: the commit the run starts from
    if vit and origin["git"]["dirty"] is not False:
        state = "has uncommitted changes" if origin["git"]["dirty"] else "is not a git checkout"
        raise OSError(
            f"the code in {PACKAGE_DIR.parent} {state}: commit first (the run records it)"
        )
    predictions = out_dir / PREDICTIONS if predictions is None else Path(predictions)
    chosen = settings or (TRAIN_SETTINGS if vit else RUN_SETTINGS)
    if vit:  # the trainer's first line names the Swin it would build by default
        print(f"training companion.vit.VisionTransformer {MODEL_SETTINGS}", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="learned-embedding-") as run_dir:
        cfg = TrainConfig(**settings_from_record(chosen), out=run_dir)
        result = train(cfg, vit_factory) if vit else train(cfg)
    wall_s = time.perf_counter() - start
    final = result.history[-1]["test_acc"]
    model = result.model
    if not isinstance(model, VisionTransformer):
        embedding = model.get_parameter("absolute.pos_embed").detach().cpu().clone()
        record: dict[str, Any] = {
            "what": f"{file_name}: absolute_pos_embed {tuple(embedding.shape)} after training",
            "settings": chosen,
            "final_test_acc": final,
        }
    else:
        h, w = model.grid_size
        pos = model.pos_embed.detach().cpu().clone()  # (1, N, D)
        embedding = pos.reshape(1, h, w, pos.shape[2])  # row r * w + c -> [0, r, c]
        record = {
            "what": f"{file_name}: VisionTransformer.pos_embed {tuple(pos.shape)} after training, "
            f"laid out on the grid as {tuple(embedding.shape)} (row-major)",
            "model": {"class": "companion.vit.VisionTransformer", **MODEL_SETTINGS},
            "num_params": sum(p.numel() for p in model.parameters()),
            "settings": {"dataset": cfg.dataset, **chosen},
            "grid_size": [h, w],
            "final_test_acc": final,
            "test_acc_by_epoch": [round(r["test_acc"], 4) for r in result.history],
            "predictions_sha256": file_sha256(predictions) if predictions.is_file() else None,
            "predictions_file": str(predictions),
            "companion_path": str(PACKAGE_DIR),
        }
    record |= {"wall_s": round(wall_s, 1), **origin}
    atomic_write(out_dir / file_name, lambda f: torch.save(embedding, f))
    record["embedding_sha256"] = file_sha256(out_dir / file_name)
    record["hashed"] = "at publish"
    atomic_write_json(out_dir / PROVENANCE_FILE, record)
    write_manifest(out_dir)  # with a predictions.md already there
    refresh_table(out_dir)  # the record table of its results tree
    return record


def main(argv: list[str] | None = None, vit: bool = False) -> int:
    """The Swin's command, or with ``vit`` the ViT's (``--seed``, ``--predictions``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = VIT_PROG if vit else PROG
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    default = "results/learned-vit" if vit else "results/learned-abs"
    parser.add_argument("--out", default=default, help="folder for the files")
    if vit:
        parser.add_argument("--seed", type=int, default=0, help="the training seed (default 0)")
        hint = "the predictions committed before the run (default: --out/predictions.md)"
        parser.add_argument("--predictions", help=hint)
    add_debug_flag(parser)
    args = parser.parse_args(argv)
    if vit and args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    command = shlex.join([*prog.split(), *argv])
    settings = {**TRAIN_SETTINGS, "seed": args.seed} if vit else None
    predictions = Path(args.predictions) if vit and args.predictions else None

    def work() -> None:
        try:
            record = train_and_save(Path(args.out), command, vit, settings, predictions)
        except KeyboardInterrupt:  # the trainer's own message names a temporary folder, gone now
            raise KeyboardInterrupt(
                "interrupted: nothing was saved; run the command again"
            ) from None
        print(f"final test acc {record['final_test_acc']:.3f}, wall {record['wall_s']} s")

    return run_reporting_errors(prog, work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
