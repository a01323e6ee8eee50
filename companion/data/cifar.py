"""CIFAR-10 from the ``cifar-10-batches-py`` folder: download (torchvision), checksums, reading.

See :func:`load_cifar10` for how its integrity is checked.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from companion._checks import check_choice
from companion.data.dataset import SPLITS, ImageClassificationData

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
# Per-channel mean and std of the CIFAR-10 training images (pixel values in [0, 1]).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
DEFAULT_DATA_DIR = Path.home() / ".cache" / "vit-position-book"
OFFLINE_FALLBACK = (
    "the generated tasks need no download: use --dataset grid-cell (needs absolute position) "
    "or --dataset relation (needs relative position)"
)


def cifar10_md5s() -> dict[str, str]:
    """The published MD5 of every file of ``cifar-10-batches-py``, as torchvision records them."""
    from torchvision.datasets import CIFAR10

    sums = dict(CIFAR10.train_list + CIFAR10.test_list)
    sums[CIFAR10.meta["filename"]] = CIFAR10.meta["md5"]
    return sums


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One python-pickle batch -> ``(images (n, 3, 32, 32) uint8, labels (n,) int64)``.

    Structural checks: the keys are there, ``data`` is ``uint8`` of shape ``(n, 3072)`` and every
    label is in ``[0, 10)``. A truncated or foreign file fails here with the file's name.
    """
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except Exception as exc:
        raise RuntimeError(f"CIFAR-10 file {path} cannot be read as a pickle batch: {exc}") from exc
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise RuntimeError(f"CIFAR-10 file {path} lacks the b'data' and b'labels' entries")
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"], dtype=np.int64)
    n = labels.shape[0]
    if data.dtype != np.uint8 or data.shape != (n, 3 * 32 * 32):
        raise RuntimeError(
            f"CIFAR-10 file {path}: b'data' must be uint8 of shape ({n}, 3072), "
            f"got {data.dtype} {data.shape}"
        )
    if n and (labels.min() < 0 or labels.max() >= len(CIFAR10_CLASSES)):
        raise RuntimeError(f"CIFAR-10 file {path}: labels outside [0, 10)")
    return data.reshape(n, 3, 32, 32), labels


def load_cifar10(
    split: str,
    data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR,
    download: bool = False,
    md5s: Mapping[str, str] | None = None,
) -> ImageClassificationData:
    """CIFAR-10 ``split`` (``"train"``: 50 000 images, ``"test"``: 10 000) from ``data_dir``.

    Integrity, in two layers:

    1. **Checksums** — every file of ``data_dir/cifar-10-batches-py`` must have the MD5 in
       ``md5s``, which defaults to the published sums (:func:`cifar10_md5s`). This is the real
       check for the genuine data: one flipped byte fails it.
    2. **Structure** — every batch must unpickle to ``uint8`` rows of 3072 values and labels in
       ``[0, 10)`` (:func:`_read_batch`), so a wrong file never becomes silent garbage.

    Tests build a small fake folder in the same format and pass the fake files' own MD5s: both
    layers then run exactly as for the genuine data (and a corrupted fake file fails layer 1).

    With ``download=True`` a missing folder is fetched by ``torchvision.datasets.CIFAR10``
    (which verifies the archive's MD5). When that is impossible (offline, no torchvision) the
    error says so and names the offline fallback.
    """
    check_choice("split", split, SPLITS)
    folder = Path(data_dir) / "cifar-10-batches-py"
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    if not all((folder / name).is_file() for name in names):
        if not download:
            raise RuntimeError(
                f"CIFAR-10 is not in {folder}. Pass download=True (--download) to fetch it "
                f"(about 170 MB, needs internet); offline, {OFFLINE_FALLBACK}."
            )
        _download_cifar10(Path(data_dir))
    sums = cifar10_md5s() if md5s is None else md5s
    for name in names:
        if name not in sums:
            raise RuntimeError(f"md5s has no checksum for CIFAR-10 file {name!r}")
        got = _md5(folder / name)
        if got != sums[name]:
            raise RuntimeError(
                f"CIFAR-10 file {folder / name} is corrupt or not the genuine file: "
                f"MD5 {got}, expected {sums[name]}. Delete the folder and download it again."
            )
    parts = [_read_batch(folder / name) for name in names]
    images = torch.from_numpy(np.concatenate([p[0] for p in parts]))
    labels = torch.from_numpy(np.concatenate([p[1] for p in parts]))
    return ImageClassificationData(
        "cifar10",
        images,
        labels,
        CIFAR10_CLASSES,
        CIFAR10_MEAN,
        CIFAR10_STD,
        augment=split == "train",
    )


def _download_cifar10(root: Path) -> None:
    """Fetch and unpack CIFAR-10 into ``root`` with torchvision; clear error when impossible."""
    try:
        from torchvision.datasets import CIFAR10
    except ImportError as exc:
        raise RuntimeError(
            f"downloading CIFAR-10 needs torchvision, which is not installed ({exc}); "
            f"{OFFLINE_FALLBACK}."
        ) from exc
    try:
        CIFAR10(str(root), train=True, download=True)
    except Exception as exc:  # URLError, socket errors, HTTP errors: all mean "no CIFAR-10 here"
        raise RuntimeError(
            f"could not download CIFAR-10 into {root} ({type(exc).__name__}: {exc}); "
            f"offline, {OFFLINE_FALLBACK}."
        ) from exc
