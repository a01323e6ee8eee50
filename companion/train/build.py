"""What a run is made of: data, model, optimiser and learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import (
    DataLoader,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SubsetRandomSampler,
)

from companion.data import make_dataset
from companion.data.dataset import ImageClassificationData
from companion.data.loaders import batch_loader
from companion.position import Position
from companion.train.config import TrainConfig, data_size, model_options
from companion.train.runtime import DistInfo

#: ``factory(num_classes, pos)`` -> a classifier; the default builds ``companion.swin``'s Swin.
ModelFactory = Callable[[int, Position], nn.Module]


def build_model(cfg: TrainConfig, num_classes: int, factory: ModelFactory | None) -> nn.Module:
    """``factory(num_classes, cfg.pos)``, or by default ``swin_from_config(cfg.model_config_name,
    ...)``
    with every ``model=True`` setting of the config passed by name and the options of
    ``cfg.variant`` (``companion.swin.variant_overrides``). A ``factory`` builds its own model,
    so it takes no variant."""
    if factory is not None:
        if cfg.variant != "swin":
            raise ValueError(
                f"variant must be 'swin' with a model factory (it builds its own model), "
                f"got {cfg.variant!r}"
            )
        return factory(num_classes, cfg.pos)
    from companion.swin import swin_from_config
    from companion.swin_configs import variant_overrides

    options = model_options(cfg) | variant_overrides(cfg.variant)
    return swin_from_config(cfg.model_config_name, num_classes=num_classes, **options)


def load_data(
    cfg: TrainConfig, info: DistInfo
) -> tuple[ImageClassificationData, ImageClassificationData]:
    """The train and test splits. With several processes, rank 0 fetches CIFAR-10 (if it must)
    before the others read it."""

    def load(split: str, n: int | None) -> ImageClassificationData:
        return make_dataset(
            cfg.dataset, split, n, seed=cfg.data_seed, data_dir=cfg.data_dir,
            download=cfg.download, size=data_size(cfg), rendering=cfg.rendering,
        )  # fmt: skip

    wait = info.enabled and cfg.dataset == "cifar10"
    if wait and not info.is_main:
        dist.barrier()
    try:
        data = load("train", cfg.train_size), load("test", cfg.test_size)
    except RuntimeError as exc:  # companion.data's missing, corrupt or unreadable CIFAR-10
        raise FileNotFoundError(" ".join(str(exc).split())) from None
    if wait and info.is_main:
        dist.barrier()
    return data


def make_loaders(
    cfg: TrainConfig,
    train: ImageClassificationData,
    test: ImageClassificationData,
    info: DistInfo,
    data_gen: torch.Generator,
    pin_memory: bool = False,
) -> tuple[DataLoader, DataLoader, Any]:
    """Training batches (shuffled by ``data_gen``, or a ``DistributedSampler`` under torchrun;
    incomplete last batch dropped) and test batches (every ``world_size``-th image per rank),
    in page-locked memory with ``pin_memory`` (for a CUDA device)."""
    if info.enabled:
        sampler: Any = DistributedSampler(
            train, info.world_size, info.rank, shuffle=True, seed=cfg.seed, drop_last=True
        )
    else:
        sampler = RandomSampler(train, generator=data_gen)
    train_loader = batch_loader(
        train, sampler, cfg.batch_size, drop_last=True, num_workers=cfg.num_workers
    )
    if len(train_loader) == 0:
        raise ValueError(
            f"batch_size must be at most the training images per process, got "
            f"batch_size={cfg.batch_size} for {len(train)} images on "
            f"{info.world_size} process(es)"
        )
    test_indices = list(range(info.rank, len(test), info.world_size))
    # (Any iterable of indices serves as the sampler: the BatchSampler only iterates it.)
    test_sampler = cast("Sampler[int]", test_indices)
    test_loader = batch_loader(test, test_sampler, max(cfg.batch_size, 256))
    for loader in (train_loader, test_loader):
        # Page-locked batches copy to a GPU asynchronously (``.to(device, non_blocking=True)``).
        # (companion.data.batch_loader takes no pin_memory; a DataLoader reads it per iterator.)
        loader.pin_memory = pin_memory
    return train_loader, test_loader, sampler


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
    """Two AdamW groups: decayed weights, and undecayed ones: every 1-D tensor (norms, biases)
    and whatever ``model.no_weight_decay()`` names (timm's convention; the Swin lists its position
    tables there, since decaying a bias table towards 0 would fight the offsets it learns)."""
    named = getattr(model, "no_weight_decay", None)
    skip_names = set(named()) if callable(named) else set()
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.dim() <= 1 or name in skip_names else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def build_optimizer(
    cfg: TrainConfig, model: nn.Module, epoch_steps: Sequence[int]
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW and its per-step warm-up + cosine schedule over every epoch's steps
    (``epoch_steps[e]``: steps of epoch ``e``; a curriculum's first epochs are shorter). The
    warm-up is the steps of the first ``cfg.warmup_epochs`` epochs (a fraction of the next)."""
    # On a CPU, foreach (one multi-tensor kernel per update instead of one per parameter) halves
    # the optimiser's time and gives bit-identical weights; elsewhere PyTorch picks (GPUs: foreach).
    on_cpu = all(p.device.type == "cpu" for p in model.parameters())
    optimizer = torch.optim.AdamW(
        param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.999),
        foreach=True if on_cpu else None,
    )  # fmt: skip
    total = sum(epoch_steps)
    warm = sum(min(1.0, max(0.0, cfg.warmup_epochs - e)) * n for e, n in enumerate(epoch_steps))
    warmup = min(total, round(warm))
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(total, warmup))


def curriculum_loader(
    cfg: TrainConfig,
    train: ImageClassificationData,
    info: DistInfo,
    data_gen: torch.Generator,
    pin_memory: bool = False,
) -> DataLoader | None:
    """The batches of the first ``cfg.curriculum_epochs`` epochs: the training images at distance
    1 only (``train.meta["distance"]``), shuffled by ``data_gen``; ``None`` without a curriculum."""
    if not cfg.curriculum_epochs:
        return None
    if info.enabled:
        raise ValueError(
            f"curriculum_epochs works in one process, got curriculum_epochs="
            f"{cfg.curriculum_epochs} with {info.world_size} processes"
        )
    near = torch.nonzero(train.meta["distance"] == 1).flatten().tolist()
    loader = batch_loader(
        train, SubsetRandomSampler(near, data_gen), cfg.batch_size, drop_last=True,
        num_workers=cfg.num_workers,
    )  # fmt: skip
    if len(loader) == 0:
        raise ValueError(
            f"batch_size must be at most the {len(near)} distance-1 training images of the "
            f"curriculum, got batch_size={cfg.batch_size}"
        )
    loader.pin_memory = pin_memory
    return loader
