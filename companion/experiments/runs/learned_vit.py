"""Train the plain ViT whose learned position embedding chapter 1 reads, and save it.

Run it once from a clean commit (it refuses a tree with uncommitted changes unless told to record
them, and records the commit, the hardware and the wall time)::

    nice -n 5 python -m companion.experiments.runs.learned_vit --out results/learned-vit

The same model at other seeds (``results/learned-vit-seeds``, read over seeds by the rule its
``predictions.md`` fixed before those runs)::

    python -m companion.experiments.runs.learned_vit --seed 2 \
        --predictions results/learned-vit-seeds/predictions.md \
        --out results/learned-vit-seeds/seed-2

It trains ``companion.vit.VisionTransformer`` (32-px images in 4-px patches: an ``8 x 8`` grid,
``D = 32``, 4 blocks, mean pooling) on ``grid-cell`` with the training settings of the small
Swin's run (``companion.experiments.runs.learned_embedding.RUN_SETTINGS``: seed 0, 20 epochs,
2000 images, 1 thread), so that the two embeddings differ by the architecture only. It saves the
``(1, N, D)`` embedding laid out as ``(1, h, w, D)`` and a ``provenance.json``, then hashes the
folder (``SHA256SUMS``); ``companion.experiments.chapter1.load_vit_embedding`` reads
them. A ``predictions.md`` already in the folder (committed before the run) is hashed with them,
and its sha256 is recorded.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from torch import nn

from companion._io import file_sha256
from companion.experiments.chapter1 import VIT_EMBEDDING_FILE
from companion.experiments.predictions import PREDICTIONS
from companion.experiments.runs.learned_embedding import (
    INTERRUPTED,
    RUN_SETTINGS,
    publish_embedding,
)
from companion.experiments.runs.learned_embedding import check_out as check_embedding_out
from companion.position import Position
from companion.train import TrainConfig, train
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.provenance import PACKAGE_DIR, provenance
from companion.vit import VisionTransformer, ViTConfig

PROG = "python -m companion.experiments.runs.learned_vit"

#: The model: ``VisionTransformer``'s arguments (``num_classes`` comes from the task).
MODEL_SETTINGS: dict[str, Any] = dict(
    img_size=32, patch_size=4, embed_dim=32, depth=4, num_heads=2, mlp_ratio=4.0
)
#: The Swin run's training settings; ``config`` and ``pos`` name the Swin that ``train`` builds
#: by default, which :func:`vit_factory` replaces, so they are left out of the record.
TRAIN_SETTINGS: dict[str, Any] = {
    k: v for k, v in RUN_SETTINGS.items() if k not in ("config", "pos")
}


def vit_factory(num_classes: int, pos: Position) -> nn.Module:
    """``companion.train``'s model factory: the ViT of :data:`MODEL_SETTINGS` (its position
    embedding is always the learned absolute one, so ``pos`` is not used)."""
    return VisionTransformer(ViTConfig(num_classes=num_classes, **MODEL_SETTINGS))


def train_and_save(
    out_dir: Path,
    command: str | None = None,
    allow_dirty: bool = False,
    settings: dict[str, Any] | None = None,
    predictions: Path | None = None,
) -> dict[str, Any]:
    """Train the ViT (``settings``: :data:`TRAIN_SETTINGS` unless a test shortens them or a
    ``--seed`` changes the seed), save its embedding and provenance and hash the folder.
    ``predictions`` (by default ``out_dir/predictions.md``): the predictions committed before
    the run, whose sha256 the record keeps. ``out_dir`` and the git tree are checked first: a
    bad folder, or uncommitted changes without ``allow_dirty``, cost no training."""
    out_dir = Path(out_dir)
    check_out(out_dir)
    origin = provenance(command)  # before training: the commit the run starts from
    if origin["git"]["dirty"] is not False and not allow_dirty:
        state = "has uncommitted changes" if origin["git"]["dirty"] else "is not a git checkout"
        raise OSError(
            f"the code in {PACKAGE_DIR.parent} {state}: commit first (the run records the "
            f"commit it ran from), or pass --allow-dirty to record the run as dirty"
        )
    predictions = out_dir / PREDICTIONS if predictions is None else Path(predictions)
    predictions_sha256 = file_sha256(predictions) if predictions.is_file() else None
    chosen = TRAIN_SETTINGS if settings is None else settings
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="learned-vit-") as run_dir:
        cfg = TrainConfig(**chosen, out=run_dir)
        result = train(cfg, vit_factory)
    wall_s = time.perf_counter() - start
    model = result.model
    assert isinstance(model, VisionTransformer)
    h, w = model.grid_size
    pos = model.pos_embed.detach().cpu().clone()  # (1, N, D)
    embedding = pos.reshape(1, h, w, pos.shape[2])  # row r * w + c -> [0, r, c]
    record = {
        "what": (
            f"{VIT_EMBEDDING_FILE}: VisionTransformer.pos_embed {tuple(pos.shape)} after "
            f"training, laid out on the grid as {tuple(embedding.shape)} (row-major)"
        ),
        "model": {"class": "companion.vit.VisionTransformer", **MODEL_SETTINGS},
        "num_params": sum(p.numel() for p in model.parameters()),
        "settings": {"dataset": cfg.dataset, **chosen},
        "grid_size": [h, w],
        "final_test_acc": result.history[-1]["test_acc"],
        "test_acc_by_epoch": [round(r["test_acc"], 4) for r in result.history],
        "predictions_sha256": predictions_sha256,
        "predictions_file": str(predictions),
        "companion_path": str(PACKAGE_DIR),
        "wall_s": round(wall_s, 1),
        **origin,
    }
    return publish_embedding(out_dir, VIT_EMBEDDING_FILE, embedding, record)


def check_out(out_dir: Path) -> None:
    """``out_dir`` must be able to take the ViT's two files (see the Swin run's ``check_out``)."""
    check_embedding_out(out_dir, VIT_EMBEDDING_FILE)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="results/learned-vit", help="folder for the files")
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run even with uncommitted changes (provenance.json records git.dirty = true)",
    )
    parser.add_argument(
        "--seed", type=int, default=TRAIN_SETTINGS["seed"], help="the training seed (default 0)"
    )
    parser.add_argument(
        "--predictions",
        default=None,
        help="the predictions committed before the run (default: predictions.md in --out)",
    )
    add_debug_flag(parser)
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    settings = {**TRAIN_SETTINGS, "seed": args.seed}
    command = shlex.join(["python", "-m", "companion.experiments.runs.learned_vit", *argv])

    def work() -> None:
        print(
            f"training companion.vit.VisionTransformer {MODEL_SETTINGS} with the Swin run's "
            f"settings (the trainer's first line names the Swin it would build by default)",
            flush=True,
        )
        try:
            record = train_and_save(
                Path(args.out), command, args.allow_dirty, settings, args.predictions
            )
        except KeyboardInterrupt:  # the trainer's own message names a temporary folder, gone now
            raise KeyboardInterrupt(INTERRUPTED) from None
        print(f"final test acc {record['final_test_acc']:.3f}, wall {record['wall_s']} s")

    return run_reporting_errors(PROG, work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
