"""CIFAR-style augmentation of a whole batch, on the device the batch is on."""

from __future__ import annotations

import torch
from torch import Tensor


def random_crop_flip(images: Tensor, padding: int, generator: torch.Generator) -> Tensor:
    """CIFAR-style augmentation of a batch, on whatever device ``images`` is.

    ``images`` ``(B, C, H, W)``: each image is zero-padded by ``padding`` pixels, cropped back to
    ``H x W`` at a random offset and flipped left-right with probability 1/2. The random numbers
    come from the CPU ``generator`` (saved in checkpoints), so a resumed run augments alike.
    """
    b, _, h, w = images.shape
    dy = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    flip = torch.rand(b, generator=generator) < 0.5
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    rows = (dy[:, None] + torch.arange(h)[None]).to(images.device)  # (B, H)
    cols = dx[:, None] + torch.arange(w)[None]  # (B, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols).to(images.device)
    batch = torch.arange(b, device=images.device)[:, None, None, None]
    chans = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    return padded[batch, chans, rows[:, None, :, None], cols[:, None, None, :]]
