"""The training loop, top to bottom: set up, (resume,) then per epoch train, test, save."""

from __future__ import annotations

import random
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, RandomSampler

from companion._checks import check_int_in_range
from companion._io import file_sha256
from companion.data.augment import random_crop_flip
from companion.data.dataset import ImageClassificationData
from companion.data.loaders import batch_loader
from companion.train import checkpoint as ck
from companion.train.build import (
    ModelFactory,
    build_model,
    build_optimizer,
    curriculum_loader,
    load_data,
    make_loaders,
    param_groups,
)
from companion.train.config import MAX_STEPS, TrainConfig, data_size, recorded_settings
from companion.train.evaluate import NonFiniteError, check_finite, check_test_metrics, evaluate
from companion.train.limits import check_batch_fits, check_generated_images_fit
from companion.train.provenance import source_digest
from companion.train.rundir import RunLock, check_out_folder, check_run_state
from companion.train.runtime import (
    AMP_DTYPES,
    DistInfo,
    accumulator_dtype,
    all_sum,
    any_rank,
    dist_info_from_env,
    init_distributed,
    log,
    native_bf16,
    process_device,
    progress_bar,
    resolve_precision,
    shutdown_distributed,
)
from companion.train.stop import batches, check, requested, stop_signals


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during training; the message says where the last checkpoint is."""


def _interrupted(when: str, path: Path, after_epoch: int | None) -> TrainingInterrupted:
    """The stop's one line: when it came and the checkpoint to continue from, ``path``, holding
    ``after_epoch`` epochs (``0``: none written yet; ``None``: whatever ``path`` holds, if any)."""
    if after_epoch == 0 or (after_epoch is None and not path.is_file()):
        return TrainingInterrupted(f"interrupted {when}; the last checkpoint is not written yet")
    after = "" if after_epoch is None else f" (after epoch {after_epoch})"
    return TrainingInterrupted(
        f"interrupted {when}; the last checkpoint is {path}{after}; continue with --resume"
    )


@dataclass
class TrainResult:
    """What :func:`train` returns: per-epoch metrics, the trained (unwrapped) model, the run's
    recorded header (settings, code hash, hardware) and its folder."""

    history: list[dict[str, float]]
    model: nn.Module
    out: Path
    header: dict[str, Any] = field(default_factory=dict)


def train(cfg: TrainConfig, model_factory: ModelFactory | None = None) -> TrainResult:
    """Run (or with ``cfg.resume`` continue) the training ``cfg`` describes, in ``cfg.out``."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    info = dist_info_from_env()
    device = process_device(cfg.device, info)
    out = Path(cfg.out)
    check_out_folder(out)  # before any work, so a bad --out costs nothing
    init_distributed(info, device)
    clean = False  # whether every rank reached the same point (see shutdown_distributed)
    try:
        with stop_signals(), RunLock(out) if info.is_main else nullcontext():
            check_run_state(out, cfg.resume)
            try:
                result = _train(cfg, info, device, model_factory, out)
            except KeyboardInterrupt as exc:  # before the first epoch: still one line
                if isinstance(exc, TrainingInterrupted):
                    raise
                raise _interrupted("before training started", out / ck.CHECKPOINT, None) from None
        clean = True
        return result
    except NonFiniteError:
        clean = True  # every rank read the same all-reduced flags and stopped at the same step
        raise
    finally:
        shutdown_distributed(clean)


def _train(
    cfg: TrainConfig,
    info: DistInfo,
    device: torch.device,
    factory: ModelFactory | None,
    out: Path,
) -> TrainResult:
    precision = resolve_precision(cfg.precision, device.type, native_bf16(device))
    dtype = AMP_DTYPES[precision]
    autocast: dict[str, Any] = {"device_type": device.type, "dtype": dtype}
    autocast["enabled"] = dtype is not None
    for split, n in (("train", cfg.train_size), ("test", cfg.test_size)):
        if cfg.dataset != "cifar10":  # (CIFAR-10 is what it is: 60,000 images)
            check_generated_images_fit(f"{split}_size", n, split, data_size(cfg))
    train_data, test_data = load_data(cfg, info)
    for seed_fn in (torch.manual_seed, random.seed, np.random.seed):
        seed_fn(cfg.seed)  # identical initial weights on every rank (DDP checks it)
    model = build_model(cfg, train_data.num_classes, factory).to(device)
    check_batch_fits(
        "batch_size", cfg.batch_size, model, data_size(cfg), device, autocast, cfg.compile
    )
    if info.rank:  # different stochastic-depth draws per rank, as for independent batches
        torch.manual_seed(cfg.seed + info.rank)
    data_gen = torch.Generator().manual_seed(cfg.seed)
    # Augmentation has its own stream (one per rank), so crops never shift the data order.
    aug_gen = torch.Generator().manual_seed(cfg.seed + 1_000_003 * (info.rank + 1))
    train_loader, test_loader, sampler = make_loaders(
        cfg, train_data, test_data, info, data_gen, pin_memory=device.type == "cuda"
    )
    near_loader = curriculum_loader(cfg, train_data, info, data_gen, device.type == "cuda")

    def loader_of(epoch: int) -> DataLoader:  # the curriculum's images first, then all of them
        return (
            near_loader
            if near_loader is not None and epoch < cfg.curriculum_epochs
            else train_loader
        )

    epoch_steps = [len(loader_of(e)) for e in range(cfg.epochs)]
    optimizer, scheduler = build_optimizer(cfg, model, epoch_steps)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    header = {
        "config": recorded_settings(cfg),
        "code_sha256": source_digest(),
        "precision": precision,
        "device": str(device),
        "world_size": info.world_size,
        "torch": torch.__version__,
        "num_params": sum(p.numel() for p in model.parameters()),
    }
    history: list[dict[str, float]] = []
    start_epoch, path = 0, out / ck.CHECKPOINT
    if cfg.resume:
        saved = ck.load_checkpoint(path)
        ck.check_resume_compatible(saved, recorded_settings(cfg, ["result"]), info.world_size, path)
        ck.load_states(path, saved, model=model, optimizer=optimizer, scheduler=scheduler)
        scaler.load_state_dict(saved["scaler"])
        ck.set_rng_state(saved["rng"], data_gen, aug_gen)
        history, start_epoch = list(saved["history"]), saved["epoch"]
        if info.is_main:  # a kill between the checkpoint and the metrics left them short
            ck.write_metrics(out, history, {**header, "checkpoint_sha256": file_sha256(path)})
        log(info, f"resumed from {path} after epoch {start_epoch}")
    ids = [device.index] if device.type == "cuda" else None
    net = nn.parallel.DistributedDataParallel(model, device_ids=ids) if info.enabled else model
    if cfg.compile:
        net = cast(nn.Module, torch.compile(net))
    variant = "" if cfg.variant == "swin" else f" variant={cfg.variant}"
    log(
        info,
        f"training {cfg.model_config_name} pos={cfg.pos}{variant} on {cfg.dataset} "
        f"({len(train_data)} train / {len(test_data)} test images)",
    )
    first = f"{epoch_steps[0]} for {cfg.curriculum_epochs} epoch(s), then " if near_loader else ""
    log(
        info,
        f"  {device} {precision}, {info.world_size} process(es), {first}{epoch_steps[-1]} "
        f"steps/epoch",
    )
    step, last_saved = sum(epoch_steps[:start_epoch]), start_epoch
    epoch = start_epoch
    parts = Optimisation(net, model, optimizer, scheduler, scaler, autocast)
    try:
        for epoch in range(start_epoch, cfg.epochs):
            start = time.perf_counter()
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            steps = epoch_steps[epoch]
            bar = progress_bar(cfg.progress and info.is_main, f"epoch {epoch + 1}", steps)
            loss_sum, correct, step = train_epoch(
                cfg, parts, loader_of(epoch), train_data, aug_gen, info, device, epoch, step, bar
            )
            if bar is not None:
                bar.close()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            train_time = time.perf_counter() - start
            loss_total, correct_total, seen = all_sum(
                [loss_sum.item(), correct.item(), steps * cfg.batch_size], info, device
            )
            test = evaluate(model, test_loader, test_data, autocast, info, device)
            check_test_metrics(test, epoch, cfg)
            history.append(
                {
                    "epoch": epoch + 1,
                    "train_loss": loss_total / seen,
                    "train_acc": correct_total / seen,
                    **test,
                    "lr": optimizer.param_groups[0]["lr"],
                    "epoch_time_s": time.perf_counter() - start,
                    "images_per_s": seen / train_time,
                }
            )
            if info.is_main:
                states = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
                states["scaler"] = scaler
                rng = ck.rng_state(data_gen, aug_gen)
                ck.save_checkpoint(
                    path, ck.checkpoint_state(header, epoch + 1, states, rng, history)
                )
                last_saved = epoch + 1
                # The checkpoint's content hash, for whoever uses it later to check it is this one.
                ck.write_metrics(out, history, {**header, "checkpoint_sha256": file_sha256(path)})
            r = history[-1]
            log(
                info,
                f"epoch {epoch + 1}/{cfg.epochs}  train loss {r['train_loss']:.4f} "
                f"acc {r['train_acc']:.3f}  test loss {r['test_loss']:.4f} "
                f"acc {r['test_acc']:.3f}  lr {r['lr']:.2e}  "
                f"{r['epoch_time_s']:.1f} s  {r['images_per_s']:.0f} img/s",
            )
            if cfg.stop_after_epochs and epoch + 1 - start_epoch >= cfg.stop_after_epochs:
                if epoch + 1 < cfg.epochs:
                    log(info, f"stopping after epoch {epoch + 1} as asked; continue with --resume")
                break
        check()  # a stop that came and was lost since the last step (see companion.train.stop)
    except KeyboardInterrupt:
        raise _interrupted(f"in epoch {epoch + 1}", path, last_saved) from None
    except Exception:
        if not requested():
            raise
        # What the stop caused (a DataLoader worker the same signal ended, torch says, first).
        raise _interrupted(f"in epoch {epoch + 1}", path, last_saved) from None
    if cfg.dump_rank_state:
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        ck.save_checkpoint(out / f"rank{info.rank}_state.pt", state)
    return TrainResult(history, model, out, header)


@dataclass
class Optimisation:
    """What one optimiser step touches: the network called (``net``: DDP-wrapped or compiled),
    the model it wraps, AdamW, its per-step schedule, the fp16 loss scaler (off otherwise) and
    the ``torch.autocast`` arguments of the forward pass."""

    net: nn.Module
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler
    autocast: dict[str, Any]


def train_epoch(
    cfg: TrainConfig,
    opt: Optimisation,
    loader: DataLoader,
    data: ImageClassificationData,
    aug_gen: torch.Generator,
    info: DistInfo,
    device: torch.device,
    epoch: int,
    step: int,
    bar: Any = None,
    losses: list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """One pass over ``loader``: the one training loop of the package (a run's epoch, and a
    short fine-tune's steps, :func:`train_steps`).

    Returns ``(loss_sum, correct, step)``: the summed training loss (weighted by batch size) and
    the number of correct predictions as device tensors (no host sync per step), and the global
    step count after the pass. With ``losses`` each step's loss is appended to it (detached).
    """
    opt.net.train()
    bad = torch.zeros(2, dtype=torch.bool, device=device)  # input, loss not finite
    loss_sum = torch.zeros((), dtype=accumulator_dtype(device), device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    checked, last = step, step + len(loader)
    for images, labels in batches(loader):  # a stop checked before every batch
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        if data.augment:
            images = random_crop_flip(images, 4, aug_gen)
        x = data.normalize(images)
        with torch.autocast(**opt.autocast):
            logits = opt.net(x)
        loss = F.cross_entropy(logits.float(), labels, label_smoothing=cfg.label_smoothing)
        # No .item() here: a host sync per step would stall the GPU. The flags are read
        # every log_every steps instead, and name the range of steps that went wrong.
        bad |= torch.stack((~torch.isfinite(x).all(), ~torch.isfinite(loss)))
        opt.optimizer.zero_grad(set_to_none=True)
        opt.scaler.scale(loss).backward()
        if cfg.clip_grad > 0:
            opt.scaler.unscale_(opt.optimizer)  # clip the true gradients, not scaled ones
            nn.utils.clip_grad_norm_(opt.model.parameters(), cfg.clip_grad)
        opt.scaler.step(opt.optimizer)
        opt.scaler.update()
        opt.scheduler.step()
        step += 1
        loss_sum += loss.detach().to(loss_sum.dtype) * labels.shape[0]
        correct += (logits.argmax(1) == labels).sum()
        if losses is not None:
            losses.append(loss.detach())
        if bar is not None:
            bar.update(1)
        if step % cfg.log_every == 0 or step == last:
            check_finite(any_rank(bad, info), checked, step, epoch, cfg)
            bad.zero_()
            checked = step
            if bar is not None:
                bar.set_postfix(loss=f"{loss.item():.3f}")
    return loss_sum, correct, step


def train_steps(
    model: nn.Module,
    data: ImageClassificationData,
    cfg: TrainConfig,
    steps: int,
    batch_name: str = "batch_size",
) -> torch.Tensor:
    """``steps`` AdamW steps of ``model`` (in place, on its device) on batches of
    ``cfg.batch_size`` images of ``data`` drawn at random with replacement (by ``cfg.seed``), at
    the constant rate ``cfg.lr``: a short fine-tune, through :func:`train_epoch`, with
    ``cfg``'s weight decay, label smoothing, gradient clip and loss checks, in this process (no
    folder, no checkpoint, fp32).

    Returns the training loss of every step, a ``(steps,)`` CPU tensor. A batch the device
    cannot hold is refused first, naming ``batch_name`` (the caller's name for it).
    """
    check_int_in_range("steps", steps, 1, MAX_STEPS)
    device = next(model.parameters()).device
    check_batch_fits(batch_name, cfg.batch_size, model, data.images.shape[-1], device)
    generator = torch.Generator().manual_seed(cfg.seed)
    sampler = RandomSampler(data, True, steps * cfg.batch_size, generator)
    loader = batch_loader(data, sampler, cfg.batch_size)
    loader.pin_memory = device.type == "cuda"  # see build.make_loaders
    optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr)
    opt = Optimisation(
        net=model,
        model=model,
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0),
        scaler=torch.amp.GradScaler(device.type, enabled=False),
        autocast={"device_type": device.type, "enabled": False},
    )
    losses: list[torch.Tensor] = []
    aug_gen = torch.Generator().manual_seed(cfg.seed)  # drawn from only if data.augment
    train_epoch(cfg, opt, loader, data, aug_gen, DistInfo(), device, 0, 0, losses=losses)
    model.eval()
    return torch.stack(losses).cpu()
