"""Test metrics, and the checks that stop a run whose numbers stopped being numbers."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from companion.data.dataset import ImageClassificationData
from companion.train.config import TrainConfig
from companion.train.runtime import DistInfo, accumulator_dtype, all_sum


class NonFiniteError(FloatingPointError):
    """A NaN or infinite input, loss or test metric; the message says where and what to change."""


@torch.no_grad()
def evaluate(
    model: nn.Module,
    loader: DataLoader,
    data: ImageClassificationData,
    autocast: dict[str, Any],
    info: DistInfo,
    device: torch.device,
) -> dict[str, float]:
    """Plain cross-entropy and accuracy on the test split (each rank takes every
    ``world_size``-th image; the sums are then added over ranks)."""
    model.eval()
    loss_sum = torch.zeros((), dtype=accumulator_dtype(device), device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    seen = 0
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(**autocast):
            logits = model(data.normalize(images))
        loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").to(loss_sum.dtype)
        correct += (logits.argmax(1) == labels).sum()
        seen += labels.shape[0]
    loss, hits, total = all_sum([loss_sum.item(), correct.item(), seen], info, device)
    return {"test_loss": loss / total, "test_acc": hits / total}


def check_finite(bad: list[bool], first: int, last: int, epoch: int, cfg: TrainConfig) -> None:
    """Stop when ``bad = [input not finite, loss not finite]`` says steps ``first+1 .. last`` went
    wrong; a broken input is named as such (no learning rate fixes it)."""
    bad_input, bad_loss = bad
    where = f"steps {first + 1}-{last} (epoch {epoch + 1})"
    if bad_input:
        raise NonFiniteError(
            f"the normalised input images hold NaN or inf in {where}: the data is broken, not "
            f"the training (dataset {cfg.dataset!r}: check its images and its mean/std)"
        )
    if bad_loss:
        raise NonFiniteError(
            f"the loss became NaN or inf in {where}: training diverged; lower --lr (now "
            f"{cfg.lr}), raise --warmup-epochs (now {cfg.warmup_epochs}) or clip gradients "
            f"(--clip-grad, now {cfg.clip_grad})"
        )


def check_test_metrics(test: dict[str, float], epoch: int, cfg: TrainConfig) -> None:
    """A NaN or infinite test metric is an error, never a number in the results."""
    if not all(math.isfinite(v) for v in test.values()):
        raise NonFiniteError(
            f"test metrics after epoch {epoch + 1} are not finite ({test}): the model's outputs "
            f"overflowed; lower --lr (now {cfg.lr}) or use --precision fp32"
        )
