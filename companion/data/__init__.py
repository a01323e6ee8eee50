"""Image classification data for training a small Swin: generated tasks and CIFAR-10.

``make_dataset(name, split)`` is the one entry point; the modules below it:

* ``companion.data.dataset``: ``ImageClassificationData``, uint8 images in memory and labels;
* ``companion.data.tasks``: the generated tasks (``TASKS``): ``grid-cell``, ``relation``,
  ``far-relation``, ``far-relation-heldout`` and ``far-relation-interior``;
* ``companion.data.far_relation_bounds``: exact accuracies of position-only rules on far-relation;
* ``companion.data.cifar``: CIFAR-10, downloaded and checked against its published MD5s;
* ``companion.data.loaders``: whole-batch loading;
* ``companion.data.augment``: the CIFAR-style augmentation, on the batch's device.
"""

from __future__ import annotations

import os

from companion._checks import check_choice, check_positive_int
from companion.data.cifar import CIFAR10_CLASSES, DEFAULT_DATA_DIR, load_cifar10
from companion.data.dataset import SPLITS, ImageClassificationData
from companion.data.tasks import (
    CLASSES,
    IMAGE_SIZE,
    RENDERINGS,
    TASK_SPLITS,
    TASKS,
    check_image_size,
    make_task,
)

__all__ = ["DATASETS", "RENDERINGS", "TASKS", "dataset_splits", "make_dataset", "num_classes"]

DATASETS = (*TASKS, "cifar10")
#: Default number of generated images per split (far-relation-heldout's test splits: as test).
DEFAULT_SIZES = {"train": 5000, "test": 1000, "seen": 1000, "unseen": 1000, "near": 1000}


def dataset_splits(name: str) -> tuple[str, ...]:
    """The splits of dataset ``name``: ``("train", "test")``, plus ``"near"`` (distance 1) for
    the far-relation tasks and ``"seen"`` and ``"unseen"`` for ``far-relation-heldout``."""
    check_choice("name", name, DATASETS)
    return SPLITS if name == "cifar10" else TASK_SPLITS[name]


def num_classes(name: str) -> int:
    """Number of classes of dataset ``name`` (without generating or loading it)."""
    check_choice("name", name, DATASETS)
    return len(CIFAR10_CLASSES) if name == "cifar10" else len(CLASSES[name])


def make_dataset(
    name: str,
    split: str,
    n: int | None = None,
    seed: int = 0,
    data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR,
    download: bool = False,
    size: int = IMAGE_SIZE,
    rendering: str = "scaled",
) -> ImageClassificationData:
    """The one entry point: ``name`` in ``DATASETS``, ``split`` in ``dataset_splits(name)``.

    ``n``: number of images (generated tasks: default ``DEFAULT_SIZES[split]``; CIFAR-10: the
    first ``n`` of the split, default all). ``seed`` chooses the generated images; CIFAR-10
    ignores it. ``size`` and ``rendering``: how the generated tasks are drawn (:func:`make_task`:
    ``"scaled"``, the 32-px scene with more pixels; ``"world"``, a larger canvas, objects as at
    32 px); CIFAR-10's photographs exist only at 32 px.
    """
    check_choice("split", split, dataset_splits(name))
    if n is not None:
        check_positive_int("n", n)
    check_image_size(size)
    if name == "cifar10":
        check_choice("rendering", rendering, RENDERINGS)
        if size != IMAGE_SIZE:
            raise ValueError(
                f"size must be {IMAGE_SIZE} for cifar10 (its photographs cannot be rendered "
                f"again at another size), got {size}"
            )
        data = load_cifar10(split, data_dir=data_dir, download=download)
        if n is not None and n < len(data):
            data.images, data.labels = data.images[:n], data.labels[:n]
        return data
    n = DEFAULT_SIZES[split] if n is None else n
    return make_task(name, split, n, seed, size, rendering)
