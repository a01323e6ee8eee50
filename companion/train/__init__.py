"""Train a small Swin (or any classifier) on one of ``companion.data``'s datasets.

One process::

    python -m companion.train --config tiny-cpu --dataset relation --pos rel --epochs 5

Several processes (one per GPU, or several on a CPU) with ``DistributedDataParallel``::

    torchrun --nproc_per_node=2 -m companion.train --config tiny-cpu --dataset relation

The package, one module per concern:

* ``config``: :class:`TrainConfig`, every setting once (type, default, allowed values, help); the
  command-line flags of ``companion-train`` and of the ablation runner are generated from it.
* ``runtime``: device (``auto``: CUDA, else MPS, else CPU), precision (``auto``: bf16 on CUDA
  GPUs that compute it natively, compute capability 8.0 and later, else fp16 with a
  ``GradScaler``; fp32 elsewhere), ``torchrun`` processes (``DistributedSampler``, NCCL on CUDA,
  Gloo otherwise; only rank 0 prints and writes files).
* ``build``: data, model, AdamW (no decay on 1-D tensors and on what ``model.no_weight_decay()``
  names) and the per-step warm-up + cosine schedule.
* ``checkpoint``: atomic checkpoints each epoch with every state a continued run needs (model,
  optimiser, scheduler, scaler, the metrics so far, all random states), loaded with
  ``weights_only=True`` and checked (format version, keys); on a CPU ``--resume`` continues
  bit-identically to a run that was never interrupted.
* ``rundir``: ``--out`` is checked before any work and locked while a process uses it.
* ``loop``: :func:`train`, the loop itself, top to bottom; :func:`train_steps`, a short
  fine-tune through the same epoch loop.
* ``cli``: ``companion-train``; ``demo``: the run chapter 5 trains live.
"""

from companion.position import POS_CHOICES
from companion.train.build import ModelFactory, param_groups, warmup_cosine
from companion.train.checkpoint import (
    CHECKPOINT,
    CHECKPOINT_FORMAT,
    METRIC_COLUMNS,
    CheckpointError,
    load_checkpoint,
)
from companion.train.cli import main
from companion.train.config import PRECISIONS, TrainConfig
from companion.train.demo import demo_config, train_demo, train_on_gpu
from companion.train.evaluate import NonFiniteError
from companion.train.loop import TrainingInterrupted, TrainResult, train, train_steps
from companion.train.runtime import (
    native_bf16,
    pick_device,
    resolve_precision,
    shutdown_distributed,
)

__all__ = [
    "CHECKPOINT",
    "CHECKPOINT_FORMAT",
    "METRIC_COLUMNS",
    "POS_CHOICES",
    "PRECISIONS",
    "CheckpointError",
    "ModelFactory",
    "NonFiniteError",
    "TrainConfig",
    "TrainResult",
    "TrainingInterrupted",
    "demo_config",
    "load_checkpoint",
    "main",
    "native_bf16",
    "param_groups",
    "pick_device",
    "resolve_precision",
    "shutdown_distributed",
    "train",
    "train_demo",
    "train_on_gpu",
    "train_steps",
    "warmup_cosine",
]
