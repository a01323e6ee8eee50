"""The dataset type every task and CIFAR-10 loads into: uint8 images in memory and their labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor
from torch.utils.data import Dataset

SPLITS = ("train", "test")


class ImageClassificationData(Dataset):
    """Images held in memory as ``uint8`` and their labels.

    Attributes:
        images: ``(n, 3, H, W)`` uint8.
        labels: ``(n,)`` int64 class numbers.
        classes: class names, ``classes[label]``.
        mean, std: per-channel statistics used by :meth:`normalize`.
        meta: extra per-image tensors (object centres of the generated tasks).
        augment: whether training should randomly crop and flip (CIFAR-10 only; flipping a
            generated image would change its label).

    ``dataset[i]`` gives ``(image, label)``; ``dataset[[i, j, ...]]`` gives a whole batch
    ``((B, 3, H, W), (B,))`` in one indexing operation, which is how :func:`batch_loader` reads.
    """

    def __init__(
        self,
        name: str,
        images: Tensor,
        labels: Tensor,
        classes: Sequence[str],
        mean: Sequence[float],
        std: Sequence[float],
        meta: Mapping[str, Tensor] | None = None,
        augment: bool = False,
    ) -> None:
        if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(
                f"images must be a uint8 tensor of shape (n, 3, H, W), "
                f"got {images.dtype} {tuple(images.shape)}"
            )
        if labels.shape != (images.shape[0],):
            raise ValueError(
                f"labels must have shape ({images.shape[0]},), got {tuple(labels.shape)}"
            )
        self.name = name
        self.images = images
        self.labels = labels.long()
        self.classes = tuple(classes)
        self.mean = tuple(mean)
        self.std = tuple(std)
        self.meta = dict(meta or {})
        self.augment = augment
        self._stats: dict[tuple[object, ...], tuple[Tensor, Tensor]] = {}

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int | Sequence[int] | Tensor) -> tuple[Tensor, Tensor]:
        if not isinstance(index, int):
            index = torch.as_tensor(index, dtype=torch.long)
        return self.images[index], self.labels[index]

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def normalize(self, images: Tensor) -> Tensor:
        """uint8 ``(B, 3, H, W)`` -> float ``(B, 3, H, W)`` with the dataset's mean and std."""
        mean, std = self._statistics(images.device)
        return (images.float() / 255 - mean) / std

    def _statistics(self, device: torch.device) -> tuple[Tensor, Tensor]:
        # Made once per device, not once per batch (a host-to-device copy each time otherwise).
        key = (device, self.mean, self.std)  # mean and std are plain attributes: may change
        if key not in self._stats:
            mean = torch.tensor(self.mean, device=device).view(1, 3, 1, 1)
            std = torch.tensor(self.std, device=device).view(1, 3, 1, 1)
            self._stats[key] = mean, std
        return self._stats[key]

    def __getstate__(self) -> dict[str, object]:
        # DataLoader workers get a copy of the dataset: without the device tensors.
        return {**self.__dict__, "_stats": {}}

    def __repr__(self) -> str:
        return (
            f"ImageClassificationData({self.name!r}, n={len(self)}, "
            f"image={tuple(self.images.shape[1:])}, classes={self.num_classes})"
        )
