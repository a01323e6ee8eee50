"""Train a small Swin (or any classifier) on one of ``companion.data``'s datasets.

One process::

    python -m companion.train --config tiny-cpu --dataset relation --pos rel --epochs 5

Several processes (one per GPU, or several on a CPU) with ``DistributedDataParallel``::

    torchrun --nproc_per_node=2 -m companion.train --config tiny-cpu --dataset relation

What it does, and why:

* **Device** ``auto``: CUDA, else Apple's MPS, else the CPU. **Precision** ``auto``: on CUDA,
  bfloat16 autocast where the GPU supports it (no loss scaling needed: bf16 has float32's
  range), else float16 with a ``GradScaler`` (e.g. a T4), which multiplies the loss so that
  small gradients do not underflow float16; float32 elsewhere.
* **AdamW**, no weight decay on norms, biases and the position tables (decaying a bias table
  towards 0 would fight the very offsets it should learn); the learning rate rises linearly for
  ``warmup_epochs`` and then follows a cosine to 0, updated every *step*.
* **Label smoothing** on the training loss; the test loss is the plain cross-entropy.
* **Checkpoints** each epoch, written atomically (a kill mid-write keeps the previous one), with
  every state a continued run needs: model, optimiser, scheduler, scaler, the epoch, the
  metrics so far and all random states (torch CPU and CUDA, Python, NumPy, data order,
  augmentation). ``--resume`` continues from it; on a CPU the result is bit-identical to a run
  that was never interrupted. Checkpoints hold only tensors and plain containers, so they load
  with ``torch.load(..., weights_only=True)`` (no arbitrary code runs on load).
* A loss that is NaN or infinite stops training at once with an error naming the step.
* **Distributed** (``torchrun`` sets ``WORLD_SIZE`` > 1): ``DistributedSampler`` (``set_epoch``
  each epoch), backend NCCL on CUDA and Gloo otherwise, and only rank 0 prints, draws progress
  bars and writes files. ``--batch-size`` is per process.
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DistributedSampler, RandomSampler

from companion._io import atomic_write, atomic_write_json, atomic_write_text
from companion.data import (
    DATASETS,
    DEFAULT_DATA_DIR,
    ImageClassificationData,
    batch_loader,
    make_dataset,
    random_crop_flip,
)

POS_CHOICES = ("none", "abs", "rel", "abs+rel")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
CHECKPOINT = "checkpoint.pt"
CHECKPOINT_FORMAT = 1
METRIC_COLUMNS = (
    "epoch",
    "train_loss",
    "train_acc",
    "test_loss",
    "test_acc",
    "lr",
    "epoch_time_s",
    "images_per_s",
)
# Settings that shape the trajectory: a resumed run must use the same ones as its checkpoint.
# (Device, progress bars, threads, workers, output and stop point may change between runs.)
TRAJECTORY_KEYS = (
    "config",
    "dataset",
    "pos",
    "epochs",
    "batch_size",
    "lr",
    "weight_decay",
    "warmup_epochs",
    "label_smoothing",
    "clip_grad",
    "drop_path_rate",
    "seed",
    "data_seed",
    "train_size",
    "test_size",
)

ModelFactory = Callable[[int, str], nn.Module]


@dataclass
class TrainConfig:
    """Every setting of a run; the command-line flags map one to one (``--batch-size``...)."""

    config: str = "tiny-cpu"
    dataset: str = "relation"
    pos: str = "rel"
    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_epochs: float = 1.0
    label_smoothing: float = 0.1
    clip_grad: float | None = 5.0
    drop_path_rate: float | None = None  # None: the model config's own rate
    seed: int = 0
    data_seed: int = 0
    train_size: int | None = None
    test_size: int | None = None
    out: str = "runs/train"
    resume: bool = False
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    progress: bool = True
    num_workers: int = 0
    threads: int | None = None
    data_dir: str = str(DEFAULT_DATA_DIR)
    download: bool = False
    stop_after_epochs: int | None = None
    dump_rank_state: bool = False


@dataclass
class TrainResult:
    """What :func:`train` returns: the per-epoch metrics and the trained (unwrapped) model."""

    history: list[dict[str, float]]
    model: nn.Module
    out: Path
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- checks


def _check_int(name: str, value: object, minimum: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _check_float(name: str, value: object, low: float, high: float, allow_none: bool = False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    if not (low <= value <= high) or math.isnan(value):
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")


def validate_config(cfg: TrainConfig, check_model_config: bool = True) -> None:
    """Raise ``ValueError``/``TypeError`` naming the first bad setting, its value and the rule."""
    if check_model_config:
        from companion.swin import CONFIGS

        if cfg.config not in CONFIGS:
            raise ValueError(f"config must be one of {sorted(CONFIGS)}, got {cfg.config!r}")
    if cfg.dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {list(DATASETS)}, got {cfg.dataset!r}")
    if cfg.pos not in POS_CHOICES:
        raise ValueError(f"pos must be one of {list(POS_CHOICES)}, got {cfg.pos!r}")
    if cfg.precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {cfg.precision!r}")
    _check_int("epochs", cfg.epochs, 1)
    _check_int("batch_size", cfg.batch_size, 1)
    _check_int("seed", cfg.seed, 0)
    _check_int("data_seed", cfg.data_seed, 0)
    _check_int("num_workers", cfg.num_workers, 0)
    _check_int("train_size", cfg.train_size, 1, allow_none=True)
    _check_int("test_size", cfg.test_size, 1, allow_none=True)
    _check_int("threads", cfg.threads, 1, allow_none=True)
    _check_int("stop_after_epochs", cfg.stop_after_epochs, 1, allow_none=True)
    _check_float("lr", cfg.lr, 0.0, math.inf)
    if cfg.lr <= 0:
        raise ValueError(f"lr must be a number > 0, got {cfg.lr!r}")
    _check_float("weight_decay", cfg.weight_decay, 0.0, math.inf)
    _check_float("warmup_epochs", cfg.warmup_epochs, 0.0, cfg.epochs)
    _check_float("label_smoothing", cfg.label_smoothing, 0.0, 1.0)
    _check_float("clip_grad", cfg.clip_grad, 0.0, math.inf, allow_none=True)
    _check_float("drop_path_rate", cfg.drop_path_rate, 0.0, 0.99, allow_none=True)
    parse_device(cfg.device)


def parse_device(name: str) -> str:
    """Check a ``--device`` value: ``auto``, ``cpu``, ``mps``, ``cuda`` or ``cuda:N``."""
    ok = name in ("auto", "cpu", "mps", "cuda") or (
        isinstance(name, str) and name.startswith("cuda:") and name[5:].isdigit()
    )
    if not ok:
        raise ValueError(f"device must be one of auto, cpu, mps, cuda, cuda:N; got {name!r}")
    return name


def pick_device(name: str = "auto") -> torch.device:
    """``auto`` -> CUDA if available, else MPS if available, else CPU; others are checked."""
    parse_device(name)
    mps = getattr(torch.backends, "mps", None)
    mps_ok = mps is not None and mps.is_available()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps_ok else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} asked for CUDA, but CUDA is not available here")
    if name == "mps" and not mps_ok:
        raise ValueError("device='mps' asked for Apple's MPS, but it is not available here")
    return torch.device(name)


def resolve_precision(requested: str, device_type: str, bf16_supported: bool) -> str:
    """``auto`` -> ``bf16`` on a CUDA GPU that supports it, ``fp16`` on other CUDA GPUs (with
    loss scaling), ``fp32`` on CPU and MPS. Explicit ``bf16``/``fp16`` need CUDA."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {requested!r}")
    if requested == "auto":
        if device_type != "cuda":
            return "fp32"
        return "bf16" if bf16_supported else "fp16"
    if requested != "fp32" and device_type != "cuda":
        raise ValueError(f"precision={requested!r} needs a CUDA device, got {device_type!r}")
    if requested == "bf16" and not bf16_supported:
        raise ValueError("precision='bf16' is not supported by this GPU; use fp16 or auto")
    return requested


AMP_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


# --------------------------------------------------------------------------- schedule, optimiser


def warmup_cosine(total_steps: int, warmup_steps: int) -> Callable[[int], float]:
    """The learning-rate multiplier for step ``s`` (0-based, the step about to be taken).

    ``(s + 1) / warmup_steps`` during warm-up, then ``0.5 * (1 + cos(pi * t))`` with ``t`` going
    from 0 to 1 over the remaining steps: the rate reaches its peak at the end of warm-up and
    falls smoothly to 0 at the last step.
    """
    check = total_steps >= 1 and 0 <= warmup_steps <= total_steps
    if not check:
        raise ValueError(
            f"need total_steps >= 1 and 0 <= warmup_steps <= total_steps, "
            f"got total_steps={total_steps}, warmup_steps={warmup_steps}"
        )

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))

    return factor


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Two AdamW groups: decayed weights and undecayed ones (1-D tensors: norms and biases, and
    the position tables ``relative_position_bias_table`` / ``absolute_pos_embed``)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        skip = p.dim() <= 1 or name.endswith(("relative_position_bias_table", "absolute_pos_embed"))
        (no_decay if skip else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


# --------------------------------------------------------------------------- distributed


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits in a ``torchrun`` job (``world_size == 1``: not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def dist_info_from_env(env: dict[str, str] | None = None) -> DistInfo:
    """Read ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` as ``torchrun`` sets them."""
    env = dict(os.environ if env is None else env)
    return DistInfo(
        rank=int(env.get("RANK", 0)),
        world_size=int(env.get("WORLD_SIZE", 1)),
        local_rank=int(env.get("LOCAL_RANK", 0)),
    )


def init_distributed(info: DistInfo, device: torch.device) -> None:
    """Join the process group: NCCL for CUDA tensors, Gloo for CPU ones."""
    if device.type == "cuda":
        dist.init_process_group("nccl", device_id=device)
    elif device.type == "cpu":
        dist.init_process_group("gloo")
    else:
        raise ValueError(f"distributed training needs CUDA or the CPU, got device={device.type!r}")


def shutdown_distributed(clean: bool) -> None:
    """Leave the process group so that every rank exits cleanly.

    Why this order. Gloo runs its collectives on C++ worker threads owned by the process-group
    object. When that object is still alive at interpreter exit, it is destroyed during
    finalisation, together with work objects that hold tensors, and tearing those down then can
    abort the process ("terminate called without an active exception"), at random, depending on
    which rank gets there first. Calling ``destroy_process_group`` is not enough on its own: a
    ``DistributedDataParallel`` wrapper sits in a reference cycle and its reducer keeps the group
    alive until the garbage collector happens to run. So:

    1. the trainer drops its DDP wrapper and runs ``gc.collect()`` (``_Run.release``);
    2. every rank waits at a barrier: after it, no collective is in flight anywhere;
    3. every rank destroys the group, which now really frees it, while Python is fully alive.

    After an error that not every rank shares (``clean=False``), nothing is attempted: a peer
    may be blocked in a collective that will never complete, so a barrier or a destroy could
    hang; ``torchrun`` stops the other ranks.
    """
    if not dist.is_initialized() or not clean:
        return
    dist.barrier()
    dist.destroy_process_group()


def _all_sum(values: Sequence[float], info: DistInfo, device: torch.device) -> list[float]:
    """Sum numbers over all ranks (identity when not distributed)."""
    if not info.enabled:
        return list(values)
    t = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


# --------------------------------------------------------------------------- random states


def rng_state(data_gen: torch.Generator, aug_gen: torch.Generator) -> dict[str, Any]:
    """Every random state of the process, as tensors and plain containers (``weights_only``)."""
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": {
            "name": np_state[0],
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "data_order": data_gen.get_state(),
        "augment": aug_gen.get_state(),
    }


def set_rng_state(state: dict[str, Any], data_gen: torch.Generator, aug_gen: torch.Generator):
    """Restore what :func:`rng_state` saved."""
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state(
        (
            n["name"],
            n["keys"].numpy().astype(np.uint32),
            n["pos"],
            n["has_gauss"],
            n["cached_gaussian"],
        )
    )
    data_gen.set_state(state["data_order"])
    aug_gen.set_state(state["augment"])


# --------------------------------------------------------------------------- files


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: never half-written."""
    atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``: tensors and plain containers only."""
    if not path.is_file():
        raise FileNotFoundError(f"--resume: no checkpoint at {path}")
    return torch.load(path, map_location="cpu", weights_only=True)


def write_metrics(out: Path, history: list[dict[str, float]], header: dict[str, Any]) -> None:
    """``metrics.json`` (header + one record per epoch) and ``metrics.csv``, both atomically."""
    atomic_write_json(out / "metrics.json", {**header, "epochs": history})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=METRIC_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: row[k] for k in METRIC_COLUMNS} for row in history)
    atomic_write_text(out / "metrics.csv", buf.getvalue())


def _config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return asdict(cfg)


def check_resume_compatible(saved: dict[str, Any], cfg: TrainConfig, world_size: int) -> None:
    """Refuse to resume with settings that would change the run's trajectory."""
    now = _config_dict(cfg)
    diff = [k for k in TRAJECTORY_KEYS if saved["config"].get(k) != now[k]]
    if saved.get("world_size", 1) != world_size:
        diff.append("world_size")
    if diff:
        details = ", ".join(
            f"{k}: checkpoint {saved['config'].get(k, saved.get(k))!r} vs now "
            f"{now.get(k, world_size)!r}"
            for k in diff
        )
        raise ValueError(f"--resume: settings differ from the checkpoint's ({details})")


# --------------------------------------------------------------------------- the loop


def build_model(cfg: TrainConfig, num_classes: int) -> nn.Module:
    """The default model: ``companion.swin.swin_from_config(cfg.config, ...)``."""
    from companion.swin import swin_from_config

    overrides: dict[str, Any] = {"num_classes": num_classes, "pos": cfg.pos}
    if cfg.drop_path_rate is not None:
        overrides["drop_path_rate"] = cfg.drop_path_rate
    return swin_from_config(cfg.config, **overrides)


def _progress_bar(enabled: bool, desc: str, total: int) -> Any:
    """A tqdm bar advanced by hand (``bar.update(1)``), or ``None`` when switched off.

    It is deliberately not wrapped around the DataLoader: ``tqdm.auto``'s class calls
    ``iter(loader)`` once more on construction, which starts an extra loader iterator (extra
    worker processes, and one more draw from torch's global RNG, so a run with bars would
    differ from one without).
    """
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc=desc, total=total, leave=False, dynamic_ncols=True)


def _log(info: DistInfo, message: str) -> None:
    if info.is_main:
        print(message, flush=True)


class _Run:
    """The state of one training run; :func:`train` drives it epoch by epoch."""

    def __init__(self, cfg: TrainConfig, info: DistInfo, device: torch.device, factory):
        self.cfg, self.info, self.device = cfg, info, device
        self.out = Path(cfg.out)
        self.precision = resolve_precision(
            cfg.precision,
            device.type,
            device.type == "cuda" and torch.cuda.is_bf16_supported(),
        )
        self.amp_dtype = AMP_DTYPES[self.precision]
        self.train_data, self.test_data = self._datasets()
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank (DDP checks it)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        self.model = factory(self.train_data.num_classes, cfg.pos).to(device)
        if info.rank:
            # Different stochastic-depth/dropout draws per rank, as for independent batches.
            torch.manual_seed(cfg.seed + info.rank)
        self.data_gen = torch.Generator().manual_seed(cfg.seed)
        # Augmentation gets its own stream (one per rank), so crops never shift the data order.
        self.aug_gen = torch.Generator().manual_seed(cfg.seed + 1_000_003 * (info.rank + 1))
        if info.enabled:
            self.sampler = DistributedSampler(
                self.train_data,
                info.world_size,
                info.rank,
                shuffle=True,
                seed=cfg.seed,
                drop_last=True,
            )
        else:
            self.sampler = RandomSampler(self.train_data, generator=self.data_gen)
        self.train_loader = batch_loader(
            self.train_data,
            self.sampler,
            cfg.batch_size,
            drop_last=True,
            num_workers=cfg.num_workers,
        )
        self.steps_per_epoch = len(self.train_loader)
        if self.steps_per_epoch == 0:
            raise ValueError(
                f"batch_size must be at most the training images per process, got "
                f"batch_size={cfg.batch_size} for {len(self.train_data)} images on "
                f"{info.world_size} process(es)"
            )
        test_indices = list(range(info.rank, len(self.test_data), info.world_size))
        self.test_loader = batch_loader(self.test_data, test_indices, max(cfg.batch_size, 256))
        self.optimizer = torch.optim.AdamW(
            param_groups(self.model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.999)
        )
        total = cfg.epochs * self.steps_per_epoch
        warmup = min(total, round(cfg.warmup_epochs * self.steps_per_epoch))
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, warmup_cosine(total, warmup)
        )
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.precision == "fp16")
        self.start_epoch = 0
        self.history: list[dict[str, float]] = []
        self.step = 0
        if cfg.resume:
            self._resume()
        elif (self.out / CHECKPOINT).exists():  # every rank checks, so all of them stop
            raise FileExistsError(
                f"{self.out / CHECKPOINT} exists: pass --resume to continue that run, or choose "
                f"another --out"
            )
        self.net: nn.Module = self.model
        if info.enabled:
            ids = [device.index] if device.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        if cfg.compile:
            self.net = torch.compile(self.net)

    def _datasets(self) -> tuple[ImageClassificationData, ImageClassificationData]:
        cfg, info = self.cfg, self.info

        def load(split: str, n: int | None) -> ImageClassificationData:
            return make_dataset(
                cfg.dataset,
                split,
                n,
                seed=cfg.data_seed,
                data_dir=cfg.data_dir,
                download=cfg.download,
            )

        # With several processes, rank 0 fetches CIFAR-10 (if it must) before the others read it.
        if info.enabled and cfg.dataset == "cifar10" and not info.is_main:
            dist.barrier()
        data = load("train", cfg.train_size), load("test", cfg.test_size)
        if info.enabled and cfg.dataset == "cifar10" and info.is_main:
            dist.barrier()
        return data

    def _resume(self) -> None:
        ckpt = load_checkpoint(self.out / CHECKPOINT)
        check_resume_compatible(ckpt, self.cfg, self.info.world_size)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.scaler.load_state_dict(ckpt["scaler"])
        set_rng_state(ckpt["rng"], self.data_gen, self.aug_gen)
        self.start_epoch = ckpt["epoch"]
        self.history = list(ckpt["history"])
        self.step = self.start_epoch * self.steps_per_epoch
        _log(self.info, f"resumed from {self.out / CHECKPOINT} after epoch {self.start_epoch}")

    def header(self) -> dict[str, Any]:
        return {
            "config": _config_dict(self.cfg),
            "world_size": self.info.world_size,
            "device": str(self.device),
            "precision": self.precision,
            "torch": torch.__version__,
            "num_params": sum(p.numel() for p in self.model.parameters()),
        }

    def _check_finite(self, loss: Tensor, epoch: int, batch: int) -> None:
        bad = torch.tensor(0.0 if torch.isfinite(loss) else 1.0, device=self.device)
        if self.info.enabled:  # every rank must stop together, or the others would hang
            dist.all_reduce(bad)
        if bad.item():
            raise FloatingPointError(
                f"loss is {loss.item()} at step {self.step} (epoch {epoch + 1}, batch {batch}): "
                f"training diverged; lower --lr (now {self.cfg.lr}) or raise --warmup-epochs"
            )

    def train_epoch(self, epoch: int) -> dict[str, float]:
        cfg, data = self.cfg, self.train_data
        self.net.train()
        if isinstance(self.sampler, DistributedSampler):
            self.sampler.set_epoch(epoch)
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        seen = 0
        start = time.perf_counter()
        bar = _progress_bar(
            cfg.progress and self.info.is_main,
            f"epoch {epoch + 1}/{cfg.epochs}",
            self.steps_per_epoch,
        )
        for batch, (images, labels) in enumerate(self.train_loader):
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            if data.augment:
                images = random_crop_flip(images, 4, self.aug_gen)
            with torch.autocast(
                self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None
            ):
                logits = self.net(data.normalize(images))
            loss = F.cross_entropy(logits.float(), labels, label_smoothing=cfg.label_smoothing)
            self._check_finite(loss, epoch, batch)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            if cfg.clip_grad:
                self.scaler.unscale_(self.optimizer)  # clip the true gradients, not scaled ones
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_grad)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.scheduler.step()
            self.step += 1
            loss_sum += loss.detach().double() * labels.shape[0]
            correct += (logits.argmax(1) == labels).sum()
            seen += labels.shape[0]
            if bar is not None:
                bar.update(1)
                if batch % 10 == 0:
                    bar.set_postfix(loss=f"{loss.item():.3f}")
        if bar is not None:
            bar.close()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        elapsed = time.perf_counter() - start
        loss_total, correct_total, seen_total = _all_sum(
            [loss_sum.item(), correct.item(), seen], self.info, self.device
        )
        return {
            "train_loss": loss_total / seen_total,
            "train_acc": correct_total / seen_total,
            "images_per_s": seen_total / elapsed,
            "train_time_s": elapsed,
        }

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Plain cross-entropy and accuracy on the test split (each rank takes every
        ``world_size``-th image; the sums are then added over ranks)."""
        self.net.eval()
        loss_sum, correct, seen = 0.0, 0, 0
        for images, labels in self.test_loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            with torch.autocast(
                self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None
            ):
                logits = self.model(self.test_data.normalize(images))
            loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
            seen += labels.shape[0]
        loss_sum, correct, seen = _all_sum([loss_sum, correct, seen], self.info, self.device)
        return {"test_loss": loss_sum / seen, "test_acc": correct / seen}

    def release(self) -> None:
        """Drop the DDP/compiled wrapper and collect it now (see :func:`shutdown_distributed`)."""
        self.net = self.model
        gc.collect()

    def checkpoint(self, epoch: int) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "config": _config_dict(self.cfg),
            "world_size": self.info.world_size,
            "epoch": epoch,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng_state(self.data_gen, self.aug_gen),
            "history": self.history,
        }


def train(cfg: TrainConfig, model_factory: ModelFactory | None = None) -> TrainResult:
    """Run (or resume) training as ``cfg`` says; see the module docstring.

    ``model_factory(num_classes, pos)`` builds the network; by default a Swin from
    ``companion.swin.CONFIGS[cfg.config]``. Returns the history and the trained model.
    """
    validate_config(cfg, check_model_config=model_factory is None)
    factory = model_factory or (lambda n, _pos: build_model(cfg, n))
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    info = dist_info_from_env()
    device = pick_device(cfg.device)
    if info.enabled and device.type == "cuda":
        device = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(device)
    if info.enabled:
        init_distributed(info, device)
    clean = False
    try:
        result = _train(cfg, info, device, factory)
        clean = True
        return result
    except FloatingPointError:
        # Every rank raises it at the same step (the finite check is all-reduced), so nothing
        # is in flight: a clean shutdown is safe.
        clean = True
        raise
    finally:
        shutdown_distributed(clean)


def _train(cfg: TrainConfig, info: DistInfo, device: torch.device, factory) -> TrainResult:
    run = _Run(cfg, info, device, factory)
    try:
        return _epochs(run)
    finally:
        run.release()


def _epochs(run: _Run) -> TrainResult:
    cfg, info, device = run.cfg, run.info, run.device
    out = run.out
    _log(
        info,
        f"training {cfg.config} pos={cfg.pos} on {cfg.dataset} ({len(run.train_data)} train / "
        f"{len(run.test_data)} test images), {device} {run.precision}, "
        f"{info.world_size} process(es), {run.steps_per_epoch} steps/epoch",
    )
    for epoch in range(run.start_epoch, cfg.epochs):
        start = time.perf_counter()
        stats = run.train_epoch(epoch)
        stats.update(run.evaluate())
        record = {
            "epoch": epoch + 1,
            **{k: stats[k] for k in ("train_loss", "train_acc", "test_loss", "test_acc")},
            "lr": run.optimizer.param_groups[0]["lr"],
            "epoch_time_s": time.perf_counter() - start,
            "images_per_s": stats["images_per_s"],
        }
        run.history.append(record)
        if info.is_main:
            save_checkpoint(out / CHECKPOINT, run.checkpoint(epoch + 1))
            write_metrics(out, run.history, run.header())
        _log(
            info,
            f"epoch {epoch + 1}/{cfg.epochs}  train loss {record['train_loss']:.4f} "
            f"acc {record['train_acc']:.3f}  test loss {record['test_loss']:.4f} "
            f"acc {record['test_acc']:.3f}  lr {record['lr']:.2e}  "
            f"{record['epoch_time_s']:.1f} s  {record['images_per_s']:.0f} img/s",
        )
        if cfg.stop_after_epochs and epoch + 1 - run.start_epoch >= cfg.stop_after_epochs:
            if epoch + 1 < cfg.epochs:
                _log(info, f"stopping after epoch {epoch + 1} as asked; continue with --resume")
            break
    if cfg.dump_rank_state:
        state = {k: v.detach().cpu() for k, v in run.model.state_dict().items()}
        save_checkpoint(out / f"rank{info.rank}_state.pt", state)
    return TrainResult(run.history, run.model, out, {"precision": run.precision})


# --------------------------------------------------------------------------- the chapter's live run


def demo_config(out: str | os.PathLike[str], cuda: bool | None = None) -> TrainConfig:
    """The run chapter 5 trains live.

    With a CUDA GPU (``cuda=None`` asks ``torch.cuda.is_available()``; on Colab pick a T4): the
    ``cifar`` Swin with relative position bias on CIFAR-10 (downloaded, MD5-checked) for 10
    epochs in float16 on a T4 (several minutes; not timed for this edition of the book).
    Without one: a CPU run of well under a minute,
    the ``tiny-cpu`` Swin with an absolute embedding on the ``grid-cell`` task, just long enough
    to leave the loss plateau.
    """
    if cuda is None:
        cuda = torch.cuda.is_available()
    if cuda:
        return TrainConfig(
            config="cifar",
            dataset="cifar10",
            pos="rel",
            epochs=10,
            batch_size=128,
            lr=1e-3,
            warmup_epochs=1.0,
            label_smoothing=0.1,
            download=True,
            out=str(out),
        )
    return TrainConfig(
        config="tiny-cpu",
        dataset="grid-cell",
        pos="abs",
        epochs=10,
        batch_size=16,
        lr=1e-3,
        warmup_epochs=1.0,
        train_size=2000,
        test_size=500,
        out=str(out),
        device="cpu",
        # One thread, no bars: on a small or shared CPU, OpenMP threads that wait for each other
        # can slow a model this small down many times over; the epoch lines say enough.
        threads=1,
        progress=False,
    )


def train_demo(out: str | os.PathLike[str]) -> TrainResult:
    """Train :func:`demo_config`'s run (GPU if there is one, else the short CPU run)."""
    return train(demo_config(out))


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = argparse.ArgumentParser(
        prog="companion-train",
        description="Train a small Swin on a generated position task or CIFAR-10 "
        "(also under torchrun for several processes).",
    )
    p.add_argument("--config", default=d.config, help="a name in companion.swin.CONFIGS")
    p.add_argument("--dataset", default=d.dataset, choices=DATASETS)
    p.add_argument("--pos", default=d.pos, choices=POS_CHOICES, help="position encoding")
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="per process")
    p.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--warmup-epochs", type=float, default=d.warmup_epochs)
    p.add_argument("--label-smoothing", type=float, default=d.label_smoothing)
    p.add_argument("--clip-grad", type=float, default=d.clip_grad, help="0 turns it off")
    p.add_argument(
        "--drop-path-rate", type=float, default=None, help="default: the config's own rate"
    )
    p.add_argument("--seed", type=int, default=d.seed, help="weights, data order, augmentation")
    p.add_argument("--data-seed", type=int, default=d.data_seed, help="the generated images")
    p.add_argument("--train-size", type=int, default=None, help="images (default: all/5000)")
    p.add_argument("--test-size", type=int, default=None, help="images (default: all/1000)")
    p.add_argument("--out", default=d.out, help="folder for checkpoint and metrics")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    p.add_argument("--device", default=d.device, help="auto, cpu, mps, cuda or cuda:N")
    p.add_argument("--precision", default=d.precision, choices=PRECISIONS)
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no bars")
    p.add_argument("--num-workers", type=int, default=d.num_workers)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p.add_argument("--data-dir", default=d.data_dir, help="where CIFAR-10 is (or goes)")
    p.add_argument("--download", action="store_true", help="download CIFAR-10 if missing")
    p.add_argument(
        "--stop-after-epochs",
        type=int,
        default=None,
        help="stop this run after N epochs (resume later with --resume)",
    )
    p.add_argument(
        "--dump-rank-state",
        action="store_true",
        help="debug: every rank saves its final weights to OUT/rank<R>_state.pt",
    )
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    values = {f.name: getattr(args, f.name) for f in fields(TrainConfig)}
    if values["clip_grad"] == 0:
        values["clip_grad"] = None
    return TrainConfig(**values)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``companion-train`` / ``python -m companion.train``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    cfg = config_from_args(args)
    try:
        validate_config(cfg)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))  # exits with status 2, like argparse's own errors
    try:
        train(cfg)
    except (ValueError, FloatingPointError, OSError, RuntimeError) as exc:
        # Expected failures (diverged loss, missing data or checkpoint, a resume that does not
        # match) get one clear line instead of a traceback.
        print(f"companion-train: error: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
