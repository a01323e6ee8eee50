"""Image classification data for training a small Swin: two generated tasks and CIFAR-10.

The two generated tasks need no download and are built so that they *separate* the position
encodings a Swin can use:

``grid-cell`` (16 classes) needs **absolute** position.
    One object on a dark, noisy background sits inside one cell of a 4 x 4 grid of 8 x 8-pixel
    cells; the label is the cell's number ``4 * row + col``. Shape (square, disk, diamond, plus),
    size, colour, background and the object's place inside its cell all vary, and none of them
    depends on the label: the *only* thing that tells the classes apart is *where in the frame*
    the object is. A network whose features are the same wherever the object is (a
    translation-equivariant network followed by global average pooling) cannot beat chance, 1/16.

``relation`` (4 classes) needs **relative** position.
    A red object A and a blue object B; the label says where A is seen from B: left of, right
    of, above or below it. The image is cut into the 8 x 8 grid of 4 x 4-pixel patches that the
    small Swin's patch embedding sees. Each object lies inside one patch, and B's patch is A's
    *neighbour* in the label's direction ("A left of B": B in the patch right of A's). A's patch
    is uniform over the 56 patches where that neighbour is still in the frame, so every label is
    one step of the same local pattern, found anywhere: the network has to compare the two
    objects' positions, and the same comparison has to work everywhere. That is exactly what a
    bias indexed by the offset ``query - key`` expresses; an absolute embedding can also do it,
    but it must learn it separately at every location.

    Why adjacent patches: the frame's borders are the only thing that ties a label to an
    absolute position (B must fit in the frame), and the leak grows with the offset. With a
    one-patch offset, each label excludes one border row or column of A's patches, so in every
    cell of an 8 x 8 (or 4 x 4) grid over the image some label has the largest possible share,
    1/56 of its examples per patch: a rule that sees only where A is (or only where B is) gets
    at most 64 / (4 * 56) = 2/7 = 28.6 % right (chance 25 %). A two-patch offset already gives
    33.3 %. ``companion.exercises.ch05.position_only_baselines`` measures these numbers.

    Each object (shape and radius 1-1.5 px vary, colour says which is A) is drawn clipped to its
    own patch, so no 4 x 4 patch holds parts of both: a patch embedding alone never sees the
    relation, only attention across patches (or the patch merging of 2 x 2 neighbours) can.

Every image is drawn from its own random stream ``numpy.random.default_rng([seed, task, split,
i])``: the train and test splits never share a stream, and image ``i`` of a split is the same
whatever ``n`` is.

Both tasks are designed in a 32 x 32 frame and can be *rendered* larger (``size`` 48, 64, ...,
a multiple of 8): the same scene (label, objects, colours, their places in the frame) drawn
with ``size / 32`` times as many pixels per side, fresh pixel noise included. Every label keeps
its meaning, which is what chapter 6's resolution-transfer experiment needs; only at 32 px does
one object fill exactly one 4 x 4 patch of the small Swin.

CIFAR-10 is read from the ``cifar-10-batches-py`` folder (downloaded by torchvision when asked
and online); see :func:`load_cifar10` for how its integrity is checked.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler
from torch.utils.data.sampler import BatchSampler

from companion._checks import check_choice, check_positive_int

IMAGE_SIZE = 32
GRID = 4  # grid-cell: a GRID x GRID grid of cells
CELL = IMAGE_SIZE // GRID  # 8 pixels
SHAPES = ("square", "disk", "diamond", "plus")
RELATIONS = ("A left of B", "A right of B", "A above B", "A below B")
#: relation: the side of the patches the objects are drawn in (the small Swin's patch size) and
#: how many fit across the image.
PATCH = 4
PATCHES = IMAGE_SIZE // PATCH
#: relation: B's patch minus A's patch ``(rows, columns)`` for each label of ``RELATIONS``.
RELATION_STEPS = ((0, 1), (0, -1), (1, 0), (-1, 0))
SPLITS = ("train", "test")
TASKS = ("grid-cell", "relation")
DATASETS = (*TASKS, "cifar10")
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
#: Default number of generated images per split.
DEFAULT_SIZES = {"train": 5000, "test": 1000}
DEFAULT_DATA_DIR = Path.home() / ".cache" / "vit-position-book"
OFFLINE_FALLBACK = (
    "the generated tasks need no download: use --dataset grid-cell (needs absolute position) "
    "or --dataset relation (needs relative position)"
)


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
        mean = torch.tensor(self.mean, device=images.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=images.device).view(1, 3, 1, 1)
        return (images.float() / 255 - mean) / std

    def __repr__(self) -> str:
        return (
            f"ImageClassificationData({self.name!r}, n={len(self)}, "
            f"image={tuple(self.images.shape[1:])}, classes={self.num_classes})"
        )


# --------------------------------------------------------------------------- drawing


def shape_mask(shape: str, cy: float, cx: float, r: float, size: int = IMAGE_SIZE) -> np.ndarray:
    """Boolean ``(size, size)`` mask of a filled ``shape`` centred at ``(cy, cx)``, radius ``r``."""
    check_choice("shape", shape, SHAPES)
    yy, xx = np.mgrid[0:size, 0:size]
    dy, dx = np.abs(yy - cy), np.abs(xx - cx)
    if shape == "square":
        return np.maximum(dy, dx) <= r
    if shape == "disk":
        return dy**2 + dx**2 <= r**2
    if shape == "diamond":
        return dy + dx <= r * 1.3  # a little larger, so its area is close to the others'
    arm = max(r / 3, 0.6)  # plus: two bars of half-width r/3
    return ((dy <= arm) & (dx <= r)) | ((dx <= arm) & (dy <= r))


def check_image_size(size: object) -> int:
    """``size`` must be an int >= 32 and a multiple of 8 (every cell and patch whole pixels)."""
    check_positive_int("size", size)
    if size < IMAGE_SIZE or size % PATCHES:
        raise ValueError(
            f"size must be a multiple of {PATCHES} and >= {IMAGE_SIZE} (the tasks are designed "
            f"in a {IMAGE_SIZE}-px frame and rendered at that size or larger), got {size}"
        )
    return size


def _rendered(y: float, x: float, size: int) -> tuple[float, float]:
    """A point of the 32-px design frame in the pixels of a ``size``-px rendering.

    Pixel ``k``'s centre is at ``k``, so pixel edges sit at ``k +- 1/2``: the frame
    ``[-1/2, 32 - 1/2]`` maps onto ``[-1/2, size - 1/2]``. Written as ``s * y + (s - 1) / 2`` so
    that ``size == 32`` returns ``y`` bit for bit.
    """
    s = size / IMAGE_SIZE
    return s * y + (s - 1) / 2, s * x + (s - 1) / 2


def _background(rng: np.random.Generator, size: int = IMAGE_SIZE) -> np.ndarray:
    """A dark ``(size, size, 3)`` float image: a random grey-ish colour plus pixel noise."""
    base = rng.uniform(0.0, 0.3, size=3)
    noise = rng.normal(0.0, 0.04, size=(IMAGE_SIZE, IMAGE_SIZE, 3))
    if size != IMAGE_SIZE:
        # The scene drawn after the background must not depend on ``size``: the 32-px noise above
        # keeps the stream where it is, and a larger image's noise comes from a child stream.
        noise = rng.spawn(1)[0].normal(0.0, 0.04, size=(size, size, 3))
    return base + noise


def _to_uint8(image: np.ndarray) -> np.ndarray:
    """``(H, W, 3)`` float in [0, 1] -> ``(3, H, W)`` uint8."""
    return (np.clip(image, 0.0, 1.0) * 255).round().astype(np.uint8).transpose(2, 0, 1)


def draw_grid_cell(
    rng: np.random.Generator, size: int = IMAGE_SIZE
) -> tuple[np.ndarray, int, np.ndarray]:
    """One ``grid-cell`` example: ``(image (3, size, size) uint8, label, centre (2,) float)``.

    The label ``4 * row + col`` is drawn first; the object (shape, radius 1.5-2.5 px, a bright
    random colour) is then placed at a random point of that cell where it fits entirely. The
    scene is designed in the 32-px frame and rendered at ``size`` px (the centre is returned in
    the rendered pixels).
    """
    label = int(rng.integers(GRID * GRID))
    row, col = divmod(label, GRID)
    r = rng.uniform(1.5, 2.5)
    # The centre keeps the whole object (radius r) inside the cell's CELL x CELL pixels.
    cy = row * CELL + rng.uniform(r, CELL - 1 - r)
    cx = col * CELL + rng.uniform(r, CELL - 1 - r)
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    color = rng.uniform(0.45, 1.0, size=3)
    color[rng.integers(3)] = 1.0  # at least one bright channel: always visible on the dark ground
    image = _background(rng, size)
    cy, cx = _rendered(cy, cx, size)
    image[shape_mask(shape, cy, cx, r * size / IMAGE_SIZE, size)] = color
    return _to_uint8(image), label, np.array([cy, cx])


def draw_relation(
    rng: np.random.Generator, size: int = IMAGE_SIZE
) -> tuple[np.ndarray, int, np.ndarray]:
    """One ``relation`` example: ``(image (3, size, size) uint8, label, centres (2, 2) float)``.

    ``centres[0]`` is A's ``(y, x)``, ``centres[1]`` B's. The label (an index into
    ``RELATIONS``) is drawn first; then A's patch, uniformly among the patches whose neighbour in
    the label's direction is inside the ``PATCHES x PATCHES`` grid; B takes that neighbour. Each
    object (a random shape of radius 1-1.5 px, placed at a random point of its patch where it
    fits) is clipped to its patch, so no patch holds parts of both objects. Rendered at ``size``
    px, a "patch" is the cell of ``size / 8`` px that holds the 4-px patch of the 32-px design.
    """
    label = int(rng.integers(len(RELATIONS)))
    # step = B's patch - A's patch. "A left of B" means B is one patch to A's right.
    step = np.array(RELATION_STEPS[label])
    # A's patch: uniform over the rows/columns from which the step stays inside the grid.
    lo, hi = np.maximum(0, -step), PATCHES - np.maximum(0, step)
    patch_a = lo + rng.integers(hi - lo)
    image = _background(rng, size)
    cell, scale = size // PATCHES, size / IMAGE_SIZE  # a patch's side in the rendered pixels
    red = np.array([rng.uniform(0.75, 1.0), rng.uniform(0.0, 0.3), rng.uniform(0.0, 0.3)])
    blue = np.array([rng.uniform(0.0, 0.3), rng.uniform(0.2, 0.5), rng.uniform(0.8, 1.0)])
    centres = []
    for patch, color in ((patch_a, red), (patch_a + step, blue)):
        r = rng.uniform(1.0, 1.5)
        # Inside the patch's pixels [p * PATCH, p * PATCH + PATCH - 1] with room for radius r.
        cy, cx = _rendered(*(patch * PATCH + rng.uniform(r, PATCH - 1 - r, size=2)), size)
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        box = np.zeros((size, size), dtype=bool)
        (y0, x0), (y1, x1) = patch * cell, (patch + 1) * cell
        box[y0:y1, x0:x1] = True  # the diamond and plus may reach past r: keep them in the patch
        image[shape_mask(shape, cy, cx, r * scale, size) & box] = color
        centres.append((cy, cx))
    return _to_uint8(image), label, np.array(centres)


_DRAW: dict[str, Callable[[np.random.Generator, int], tuple[np.ndarray, int, np.ndarray]]] = {
    "grid-cell": draw_grid_cell,
    "relation": draw_relation,
}
_CLASSES = {
    "grid-cell": tuple(f"cell ({r}, {c})" for r in range(GRID) for c in range(GRID)),
    "relation": RELATIONS,
}


def num_classes(name: str) -> int:
    """Number of classes of dataset ``name`` (without generating or loading it)."""
    check_choice("name", name, DATASETS)
    return len(CIFAR10_CLASSES) if name == "cifar10" else len(_CLASSES[name])


def example_rng(task: str, split: str, seed: int, index: int) -> np.random.Generator:
    """The random stream of image ``index`` of ``split``: independent of every other image's."""
    return np.random.default_rng([seed, TASKS.index(task), SPLITS.index(split), index])


def make_task(
    task: str, split: str, n: int, seed: int = 0, size: int = IMAGE_SIZE
) -> ImageClassificationData:
    """Generate ``n`` images of a task (``"grid-cell"`` or ``"relation"``) for ``split``,
    rendered at ``size`` x ``size`` px (image ``i`` shows the same scene at every size).

    ``meta["centres"]`` holds the objects' centres in pixels: ``(n, 2)`` for grid-cell,
    ``(n, 2, 2)`` (A then B, each ``(y, x)``) for relation.
    """
    check_choice("task", task, TASKS)
    check_choice("split", split, SPLITS)
    check_positive_int("n", n)
    check_image_size(size)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    draws = [_DRAW[task](example_rng(task, split, seed, i), size) for i in range(n)]
    images = torch.from_numpy(np.stack([d[0] for d in draws]))
    labels = torch.tensor([d[1] for d in draws], dtype=torch.long)
    centres = torch.from_numpy(np.stack([d[2] for d in draws])).float()
    # The generated images are mostly dark background: normalise with their own typical
    # statistics (fixed numbers, so train and test are normalised alike).
    return ImageClassificationData(
        task,
        images,
        labels,
        _CLASSES[task],
        mean=(0.2, 0.2, 0.2),
        std=(0.25, 0.25, 0.25),
        meta={"centres": centres},
    )


# --------------------------------------------------------------------------- CIFAR-10


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


# --------------------------------------------------------------------------- factory, loading


def make_dataset(
    name: str,
    split: str,
    n: int | None = None,
    seed: int = 0,
    data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR,
    download: bool = False,
    size: int = IMAGE_SIZE,
) -> ImageClassificationData:
    """The one entry point: ``name`` in ``DATASETS``, ``split`` in ``("train", "test")``.

    ``n``: number of images (generated tasks: default ``DEFAULT_SIZES[split]``; CIFAR-10: the
    first ``n`` of the split, default all). ``seed`` chooses the generated images; CIFAR-10
    ignores it. ``size``: the generated tasks' rendering size (:func:`make_task`); CIFAR-10's
    photographs exist only at 32 px.
    """
    check_choice("name", name, DATASETS)
    check_choice("split", split, SPLITS)
    if n is not None:
        check_positive_int("n", n)
    check_image_size(size)
    if name == "cifar10":
        if size != IMAGE_SIZE:
            raise ValueError(
                f"size must be {IMAGE_SIZE} for cifar10 (its photographs cannot be rendered "
                f"again at another size), got {size}"
            )
        data = load_cifar10(split, data_dir=data_dir, download=download)
        if n is not None and n < len(data):
            data.images, data.labels = data.images[:n], data.labels[:n]
        return data
    return make_task(name, split, DEFAULT_SIZES[split] if n is None else n, seed, size)


def batch_loader(
    dataset: ImageClassificationData,
    sampler: Sampler[int],
    batch_size: int,
    drop_last: bool = False,
    num_workers: int = 0,
) -> DataLoader:
    """A DataLoader that reads whole batches: ``sampler`` picks the order (a ``RandomSampler``
    with a seeded generator, or a ``DistributedSampler``), ``BatchSampler`` groups it, and each
    group is fetched with one tensor indexing (``dataset[list]``) instead of ``batch_size``
    Python calls. Yields ``(images (B, 3, H, W) uint8, labels (B,) int64)``.
    """
    check_positive_int("batch_size", batch_size)
    return DataLoader(
        dataset,
        batch_size=None,  # each "item" is already a batch
        sampler=BatchSampler(sampler, batch_size, drop_last),
        num_workers=num_workers,
    )


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
