"""What a run will hold in memory, checked before it allocates it: a size the machine cannot hold
is refused at once, in one line naming the setting, instead of the process being killed for
memory minutes later (``--train-size 100000000`` drew images for ever; ``--finetune-batch-size
100000`` was killed after 82 s)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from companion._checks import available_memory_bytes, check_fits_in_memory
from companion.data import DEFAULT_SIZES


def check_generated_images_fit(name: str, n: int | None, split: str, size: int) -> None:
    """Refuse ``n`` generated ``size``-px images (``None``: the split's default number) that
    cannot be held: each takes ``3 * size**2`` bytes (uint8) and its label 8."""
    count = DEFAULT_SIZES[split] if n is None else n
    check_fits_in_memory(name, count, 3 * size * size + 8, f"{size}-px images")


def device_memory_bytes(device: torch.device) -> int | None:
    """Free memory of ``device``: CUDA's own count, the host's for the CPU, ``None`` (unknown,
    nothing checked) elsewhere."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return available_memory_bytes() if device.type == "cpu" else None


def saved_bytes_per_image(
    model: nn.Module, size: int, device: torch.device, autocast: dict[str, Any] | None = None
) -> int:
    """The bytes one ``size``-px image's forward pass keeps for the backward pass, measured on
    one image (``torch.autograd.graph.saved_tensors_hooks``) under the run's ``autocast``
    arguments (``None``: fp32), in eval mode and with the random state put back, so the run that
    follows is the same as without it."""
    total = 0

    def count(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    training = model.training
    devices = [device] if device.type == "cuda" else []
    mixed = torch.autocast(**autocast) if autocast else nullcontext()
    hooks = torch.autograd.graph.saved_tensors_hooks(count, lambda t: t)
    try:
        with torch.random.fork_rng(devices=devices), mixed, hooks:
            model.eval()
            model(torch.zeros(1, 3, size, size, device=device))
    finally:
        model.train(training)
    return total


def check_batch_fits(
    name: str,
    batch_size: int,
    model: nn.Module,
    size: int,
    device: torch.device,
    autocast: dict[str, Any] | None = None,
    compiled: bool = False,
) -> None:
    """Refuse a ``batch_size`` whose training step cannot fit in ``device``'s free memory: per
    image, its input (uint8, then float32 twice: augmented and normalised) and what its forward
    pass saves for the backward pass (:func:`saved_bytes_per_image`; not counted for a
    ``compiled`` model, which may save less than the eager one measured). A lower bound, so a
    size it lets through may still be too large for a crowded machine; one it refuses cannot
    fit."""
    available = device_memory_bytes(device)
    if available is None:
        return
    each = 9 * 3 * size * size
    if not compiled:
        each += saved_bytes_per_image(model, size, device, autocast)
    check_fits_in_memory(name, batch_size, each, "a training step's images", available)
