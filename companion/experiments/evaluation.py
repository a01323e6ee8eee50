"""A finished run measured on every test split of its task, image by image.

Which images each run got right is kept (one bit per image, packed as hex), so that an interval
can include the test set's own sampling error (a bootstrap over test images), not only the seeds'.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from companion.data import dataset_splits, make_dataset
from companion.data.dataset import ImageClassificationData
from companion.data.tasks import IMAGE_SIZE
from companion.train.config import TrainConfig, data_size


def evaluation_splits(dataset: str) -> tuple[str, ...]:
    """Every split of ``dataset`` but ``train``, ``test`` first."""
    return tuple(s for s in dataset_splits(dataset) if s != "train")


@functools.lru_cache(maxsize=16)
def load_split(
    dataset: str,
    split: str,
    n: int | None,
    data_seed: int,
    size: int = IMAGE_SIZE,
    rendering: str = "scaled",
) -> ImageClassificationData:
    """The images a run is measured (or fine-tuned) on, drawn once per process (read-only)."""
    return make_dataset(dataset, split, n, seed=data_seed, size=size, rendering=rendering)


def pack_bits(flags: Tensor) -> str:
    """``(n,)`` bool -> hex string of ``ceil(n / 8)`` bytes (first image in the high bit)."""
    return np.packbits(flags.cpu().numpy().astype(np.uint8)).tobytes().hex()


def unpack_bits(text: str, n: int) -> np.ndarray:
    """The inverse of :func:`pack_bits`: ``(n,)`` bool, the first ``n`` images' bits (bytes too
    few to hold ``n`` are refused; a run tested on more images is read on the first ``n``)."""
    if len(text) * 4 < n:
        raise ValueError(f"bits of {len(text) * 4} images at most cannot be read on {n} images")
    return np.unpackbits(np.frombuffer(bytes.fromhex(text), dtype=np.uint8))[:n].astype(bool)


def labels_text(labels: Tensor) -> str:
    """``(n,)`` labels below 16 -> one hex digit each (a test set's labels, kept once)."""
    if labels.numel() and int(labels.max()) >= 16:
        raise ValueError(f"labels must be below 16 to be kept as hex digits, got {labels.max()}")
    return "".join(f"{int(v):x}" for v in labels)


def labels_from_text(text: str) -> np.ndarray:
    """The inverse of :func:`labels_text`: ``(n,)`` int64."""
    return np.array([int(c, 16) for c in text], dtype=np.int64)


@torch.no_grad()
def hits(model: nn.Module, data: ImageClassificationData, batch_size: int = 256) -> Tensor:
    """``(len(data),)`` bool: which images of ``data`` ``model`` classifies right."""
    model.eval()
    device = next(model.parameters()).device
    found = []
    for start in range(0, len(data), batch_size):
        images, labels = data[list(range(start, min(start + batch_size, len(data))))]
        logits = model(data.normalize(images.to(device, non_blocking=True)))
        found.append((logits.argmax(-1) == labels.to(device, non_blocking=True)).cpu())
    return torch.cat(found)


def split_results(model: nn.Module, cfg: TrainConfig) -> dict[str, dict[str, Any]]:
    """``{split: {"n", "accuracy", "correct", "labels_sha256"}}`` for every test split of the run
    ``cfg``'s task, drawn as it was trained."""
    found = {}
    for split in evaluation_splits(cfg.dataset):
        drawn = (cfg.test_size, cfg.data_seed, data_size(cfg), cfg.rendering)
        data = load_split(cfg.dataset, split, *drawn)
        right = hits(model, data, batch_size=500)
        found[split] = {
            "n": len(data),
            "accuracy": float(right.float().mean()),
            "correct": pack_bits(right),
            "labels_sha256": labels_record(data.labels)["labels_sha256"],
        }
    return found


def labels_record(labels: Tensor) -> dict[str, Any]:
    """A test split's labels as hex digits, their hash and the constant answer's accuracy on them:
    the share of the most frequent label, the best any input-blind rule can score."""
    text = labels_text(labels)
    return {
        "n": len(labels),
        "labels": text,
        "labels_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "constant_answer": float(torch.bincount(labels).max()) / len(labels),
    }
