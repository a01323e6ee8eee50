"""Train the learned absolute embedding chapter 1 reads, and save it with its provenance.

Run it once from a clean commit (it records the commit, the hardware and the wall time)::

    nice -n 5 python -m companion.commands.learned_embedding --out results/learned-abs

It trains the tiny-cpu Swin with ``pos="abs"`` on ``grid-cell`` with chapter 5's settings (seed 0)
and saves only the ``(1, h, w, D)`` embedding and a ``provenance.json`` beside it
(``companion.experiments.chapter1`` reads them).
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

from companion._io import atomic_write, atomic_write_json, file_sha256
from companion.experiments.chapter1 import EMBEDDING_FILE, PROVENANCE_FILE
from companion.experiments.integrity import write_manifest
from companion.experiments.records import refresh_table
from companion.train import TrainConfig, train
from companion.train.cli import add_debug_flag, run_reporting_errors
from companion.train.config import settings_from_record
from companion.train.provenance import provenance
from companion.train.rundir import check_writable_folder

PROG = "python -m companion.commands.learned_embedding"

#: Chapter 5's CPU-ablation settings (results/run_cpu_ablation.sh), for one abs run on grid-cell,
#: as the record states them (``recorded_settings``' names).
RUN_SETTINGS = dict(
    config="tiny-cpu", dataset="grid-cell", pos="abs", seed=0, epochs=20, batch_size=16,
    lr=1e-3, warmup_epochs=2.0, label_smoothing=0.0, train_size=2000, test_size=1000,
    threads=1, device="cpu", progress=False,
)  # fmt: skip

#: What a stopped run says: it trains in a temporary folder, so nothing of it is left.
INTERRUPTED = ("interrupted: nothing was saved (the run trains in a temporary folder); run the "
               "same command again to train it from the start")  # fmt: skip


def train_and_save(out_dir: Path, command: str | None = None) -> dict:
    """Train the abs model of :data:`RUN_SETTINGS`, save its embedding and provenance (with the
    embedding's sha256) and hash the folder (``SHA256SUMS``); ``out_dir`` is checked first: a bad
    folder costs no training."""
    out_dir = Path(out_dir)
    check_out(out_dir)
    origin = provenance(command)  # before training: the commit the run starts from
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="learned-abs-") as run_dir:
        result = train(TrainConfig(**settings_from_record(RUN_SETTINGS), out=run_dir))
    wall_s = time.perf_counter() - start
    embedding = result.model.get_parameter("absolute.pos_embed").detach().cpu().clone()
    record = {
        "what": f"{EMBEDDING_FILE}: absolute_pos_embed {tuple(embedding.shape)} after training",
        "settings": RUN_SETTINGS,
        "final_test_acc": result.history[-1]["test_acc"],
        "wall_s": round(wall_s, 1),
        **origin,
    }
    return publish_embedding(out_dir, EMBEDDING_FILE, embedding, record)


def publish_embedding(
    out_dir: Path, file_name: str, embedding: torch.Tensor, record: dict[str, Any]
) -> dict[str, Any]:
    """Save ``embedding`` as ``out_dir/file_name``, then ``record`` with the file's sha256 as
    ``provenance.json``, then the folder's ``SHA256SUMS`` (read back verified by
    ``companion.experiments.integrity``); every write atomic; then the record table of its
    results tree (``companion.experiments.records.refresh_table``). Returns the record."""
    atomic_write(out_dir / file_name, lambda f: torch.save(embedding, f))
    record["embedding_sha256"] = file_sha256(out_dir / file_name)
    record["hashed"] = "at publish"
    atomic_write_json(out_dir / PROVENANCE_FILE, record)
    write_manifest(out_dir)
    refresh_table(out_dir)
    return record


def check_out(out_dir: Path, file_name: str = EMBEDDING_FILE) -> None:
    """``out_dir`` must be a writable folder, or one that can be made, whose two files
    (``file_name`` and ``provenance.json``), if there, are files (a one-line ``OSError`` naming
    ``--out`` otherwise)."""
    check_writable_folder(out_dir, "--out")
    for name in (file_name, PROVENANCE_FILE):
        if (out_dir / name).is_dir():
            raise IsADirectoryError(
                f"--out {out_dir} has a folder {name} where that file goes: move it, or choose "
                f"another --out"
            )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="results/learned-abs", help="folder for the two files")
    add_debug_flag(parser)
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "companion.commands.learned_embedding", *argv])

    def work() -> None:
        try:
            record = train_and_save(Path(args.out), command)  # checks --out before training
        except KeyboardInterrupt:  # the trainer's own message names a temporary folder, gone now
            raise KeyboardInterrupt(INTERRUPTED) from None
        print(f"final test acc {record['final_test_acc']:.1f}, wall {record['wall_s']} s")

    return run_reporting_errors(PROG, work, args.debug)


if __name__ == "__main__":
    sys.exit(main())
