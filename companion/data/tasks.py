"""Generated image tasks that *separate* the position encodings a Swin can use.

They need no download:

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

``far-relation`` (4 classes, ``RELATIONS``) asks the same question when the objects lie *apart*.
    B's patch is A's plus ``distance`` steps in the label's direction; objects and placement
    (label first) are ``relation``'s. Training images draw the distance from ``FAR_TRAIN_MIX``
    (half 1, half 2); the test split is distance 2 only. There the two objects sit in different
    2 x 2 merge groups in the *same* slot, so neither a patch embedding nor patch merging's
    concatenation order can tell the direction; a position code relating two tokens inside a
    stage-0 window can (``companion.data.far_relation_bounds`` gives the exact bounds of rules
    that see positions only). ``meta["distance"]`` holds each image's distance, which is what a
    curriculum needs: the pilots (results/pilots/README.md) trained the first 5 epochs on the
    distance-1 images only, a schedule ``companion.train`` does not offer yet.

``far-relation-heldout`` is far-relation with held-out positions: training pairs have both
    objects in the left ``HELDOUT_COLUMNS`` = 6 of the 8 patch columns; its ``seen`` test split
    (distance 2) lies there too and its ``unseen`` one (distance 2, also called ``test``) reaches
    into the columns never seen in training. Each split's label mix differs (the frame's border
    cuts differently), so each has its own constant-answer baseline (the most frequent label's
    share of its own labels).

``far-relation-interior`` holds out positions *inside* the frame instead, so that "never seen"
    and "at the border" come apart: no training object ever lies in the 2 x 2 block of patches at
    the centre of the grid (``INTERIOR_BLOCK``, rows and columns 3-4). Both test splits are
    distance-2 pairs inside ``INTERIOR_WINDOW`` (rows and columns 2-5: the stage-0 shifted window
    that no border cuts, of the tiny-cpu Swin's 4-patch windows shifted by 2), so they lie
    equally far from the border: ``seen`` pairs avoid the block (both objects at positions of
    training), ``unseen`` (also called ``test``) pairs have one object in it. ``near`` is
    distance 1 anywhere off the block. :func:`split_region` names each split's region.

Every image is drawn from its own random stream ``numpy.random.default_rng([seed, task, split,
i])``: the train and test splits never share a stream, and image ``i`` of a split is the same
whatever ``n`` is.

``grid-cell``, ``relation`` and ``far-relation`` are designed in a 32 x 32 frame and have two ways
of being drawn larger (``size`` 48, 64, ..., a multiple of 8), chapter 6's two kinds of larger image
(``RENDERINGS``):

``"scaled"`` (same scene, more pixels): the scene of the 32-px image (label, objects, colours,
    their places in the frame) drawn with ``size / 32`` times as many pixels per side, fresh pixel
    noise included. The objects grow with the image: at 48 px a ``relation`` object's cell is
    6 px, so it no longer fills one 4-px patch.
``"world"`` (more of the world): every object keeps its 32-px size in pixels, and so in
    patches, and the canvas grows. ``relation``: the pair is placed on the larger grid of
    ``size / 4`` patches exactly as on the 8 x 8 one (two neighbouring patches, A's uniform over
    the patches whose neighbour is in the frame), so every offset and object looks as in
    training, and pairs appear at positions never seen in training; ``far-relation`` likewise,
    at its own distances (1 or 2 patches in training, 2 in ``test``). ``grid-cell``: the label
    still names one of the frame's 4 x 4 cells, now ``size / 4`` px wide (the label is a place in
    the *frame*, so its cells must grow with it), and the object keeps its 32-px size, placed
    uniformly where it fits in its cell.

At 32 px the two renderings are the same images, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from companion._checks import check_choice, check_positive_int
from companion.data.dataset import SPLITS, ImageClassificationData

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
#: far-relation: the ``(distance, weight)`` mix of the training images' distances (in patches).
#: Distance 1 lets a model leave the symmetric start, distance 2 is the task (results/pilots).
FAR_TRAIN_MIX = ((1, 0.5), (2, 0.5))
#: far-relation: the test split's only distance. At 2 the objects' merge slots carry no
#: direction; at 3 they do (results/pilots/README.md), so the test is not "distance >= 2".
FAR_TEST_DISTANCE = 2
#: far-relation-heldout: training and ``seen`` pairs lie in the first HELDOUT_COLUMNS columns.
HELDOUT_COLUMNS = 6
#: far-relation-interior: the held-out block, patch rows and columns ``[3, 5)`` (the 2 x 2
#: patches at the centre of the 8 x 8 grid), where no training object ever lies.
INTERIOR_BLOCK = (3, 5)
#: far-relation-interior: its test pairs lie in patch rows and columns ``[2, 6)``, the stage-0
#: shifted window that no border cuts (windows of 4 patches shifted by 2).
INTERIOR_WINDOW = (2, 6)
#: The two ways to draw grid-cell and relation larger than 32 px (see the module docstring).
RENDERINGS = ("scaled", "world")
#: Appended, never reordered: a task's index seeds its images (:func:`example_rng`).
TASKS = ("grid-cell", "relation", "far-relation", "far-relation-heldout", "far-relation-interior")
FAR_TASKS = TASKS[2:]
#: The tasks that can be drawn in the ``"world"`` rendering.
WORLD_TASKS = TASKS[:3]
#: The splits of each task (appended, never reordered: a split's index seeds its images). The
#: far-relation tasks add ``near``, test pairs at distance 1 (for heldout: in the seen region),
#: which tells whether a model left the symmetric start at all. The held-out tasks' ``test``
#: is their ``unseen`` split (the same images), so that a trainer that evaluates ``test``
#: measures the held-out positions.
TASK_SPLITS = {
    **{task: SPLITS for task in TASKS[:2]},
    "far-relation": (*SPLITS, "near"),
    "far-relation-heldout": (*SPLITS, "seen", "unseen", "near"),
    "far-relation-interior": (*SPLITS, "seen", "unseen", "near"),
}
#: The tasks whose ``test`` split is their ``unseen`` one.
HELDOUT_TASKS = ("far-relation-heldout", "far-relation-interior")


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
    size = check_positive_int("size", size)
    if size < IMAGE_SIZE or size % PATCHES:
        raise ValueError(
            f"size must be a multiple of {PATCHES} and >= {IMAGE_SIZE} (the tasks are designed "
            f"in a {IMAGE_SIZE}-px frame and rendered at that size or larger), got {size}"
        )
    return size


def check_rendering(rendering: object, task: str) -> str:
    """``rendering`` must be one of ``RENDERINGS``; ``"world"`` exists for ``WORLD_TASKS`` only
    (the held-out tasks' regions are defined on the 8 x 8 patch grid)."""
    check_choice("rendering", rendering, RENDERINGS)
    if rendering == "world" and task not in WORLD_TASKS:
        raise ValueError(
            f"rendering 'world' is defined for {', '.join(WORLD_TASKS)} only (the held-out "
            f"tasks' regions are defined on the 8 x 8 patch grid), got task={task!r}"
        )
    return str(rendering)


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
    rng: np.random.Generator, size: int = IMAGE_SIZE, rendering: str = "scaled"
) -> tuple[np.ndarray, int, np.ndarray]:
    """One ``grid-cell`` example: ``(image (3, size, size) uint8, label, centre (2,) float)``.

    The label ``4 * row + col`` is drawn first; the object (shape, radius 1.5-2.5 px, a bright
    random colour) is then placed at a random point of that cell where it fits entirely.
    ``"scaled"``: the scene is designed in the 32-px frame and drawn at ``size`` px (the centre is
    returned in the drawn pixels). ``"world"``: the cell is ``size / 4`` px and the object keeps
    its radius in pixels.
    """
    world = rendering == "world"
    cell = size // GRID if world else CELL
    label = int(rng.integers(GRID * GRID))
    row, col = divmod(label, GRID)
    r = rng.uniform(1.5, 2.5)
    # The centre keeps the whole object (radius r) inside the cell's pixels.
    cy = row * cell + rng.uniform(r, cell - 1 - r)
    cx = col * cell + rng.uniform(r, cell - 1 - r)
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    color = rng.uniform(0.45, 1.0, size=3)
    color[rng.integers(3)] = 1.0  # at least one bright channel: always visible on the dark ground
    image = _background(rng, size)
    if not world:
        cy, cx = _rendered(cy, cx, size)
        r *= size / IMAGE_SIZE
    image[shape_mask(shape, cy, cx, r, size)] = color
    return _to_uint8(image), label, np.array([cy, cx])


def draw_relation(
    rng: np.random.Generator, size: int = IMAGE_SIZE, rendering: str = "scaled"
) -> tuple[np.ndarray, int, np.ndarray]:
    """One ``relation`` example: ``(image (3, size, size) uint8, label, centres (2, 2) float)``.

    ``centres[0]`` is A's ``(y, x)``, ``centres[1]`` B's. The label (an index into
    ``RELATIONS``) is drawn first; then A's patch, uniformly among the patches whose neighbour in
    the label's direction is inside the ``PATCHES x PATCHES`` grid; B takes that neighbour. Each
    object (a random shape of radius 1-1.5 px, placed at a random point of its patch where it
    fits) is clipped to its patch, so no patch holds parts of both objects. Rendered at ``size``
    px ``"scaled"``, a "patch" is the cell of ``size / 8`` px that holds the 4-px patch of the
    32-px design; ``"world"``, it is a 4-px patch of the grid of ``size / 4`` patches.
    """
    world = rendering == "world"
    patches = size // PATCH if world else PATCHES
    label, patch_a, patch_b = place_pair(rng, distance=1, patches=patches)
    image, centres = draw_pair(rng, patch_a, patch_b, size, world)
    return image, label, centres


def a_patch_range(
    label: int, distance: int, patches: int = PATCHES
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: A's patches ``lo <= (row, col) < hi`` from which B, ``distance`` patches
    away in the label's direction, is still inside the ``patches x patches`` grid."""
    step = distance * np.array(RELATION_STEPS[label])
    return np.maximum(0, -step), patches - np.maximum(0, step)


def in_seen_region(
    patch_a: np.ndarray | tuple[int, int], patch_b: np.ndarray | tuple[int, int]
) -> bool:
    """far-relation-heldout: both objects in the first ``HELDOUT_COLUMNS`` patch columns."""
    return max(int(patch_a[1]), int(patch_b[1])) < HELDOUT_COLUMNS


def _in_block(patch: np.ndarray | tuple[int, int]) -> bool:
    lo, hi = INTERIOR_BLOCK
    return lo <= int(patch[0]) < hi and lo <= int(patch[1]) < hi


def off_block(patch_a: np.ndarray | tuple[int, int], patch_b: np.ndarray | tuple[int, int]) -> bool:
    """far-relation-interior: neither object in the held-out ``INTERIOR_BLOCK``."""
    return not (_in_block(patch_a) or _in_block(patch_b))


def in_interior_window(
    patch_a: np.ndarray | tuple[int, int], patch_b: np.ndarray | tuple[int, int]
) -> bool:
    """far-relation-interior: both objects in ``INTERIOR_WINDOW``'s rows and columns."""
    lo, hi = INTERIOR_WINDOW
    return all(lo <= int(c) < hi for p in (patch_a, patch_b) for c in p)


def interior_seen(
    patch_a: np.ndarray | tuple[int, int], patch_b: np.ndarray | tuple[int, int]
) -> bool:
    """far-relation-interior's ``seen`` region: inside the interior window, off the block."""
    return in_interior_window(patch_a, patch_b) and off_block(patch_a, patch_b)


def interior_heldout(
    patch_a: np.ndarray | tuple[int, int], patch_b: np.ndarray | tuple[int, int]
) -> bool:
    """far-relation-interior's ``unseen`` region: inside the interior window, an object in the
    block."""
    return in_interior_window(patch_a, patch_b) and not off_block(patch_a, patch_b)


Region = Callable[[np.ndarray | tuple[int, int], np.ndarray | tuple[int, int]], bool]


def split_region(task: str, split: str) -> Region:
    """The region that :func:`far_split_design`'s ``inside`` refers to for a far-relation split:
    ``in_seen_region`` (far-relation-heldout; unused where ``inside`` is None), or for
    far-relation-interior the split's own (training and ``near``: off the block; ``seen``:
    :func:`interior_seen`; ``unseen`` and ``test``: :func:`interior_heldout`)."""
    check_choice("task", task, FAR_TASKS)
    check_choice("split", split, TASK_SPLITS[task])
    if task != "far-relation-interior":
        return in_seen_region
    if split in ("train", "near"):
        return off_block
    return interior_seen if split == "seen" else interior_heldout


def place_pair(
    rng: np.random.Generator,
    distance: int,
    inside: bool | None = None,
    patches: int = PATCHES,
    region: Region = in_seen_region,
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(label, A's patch (2,), B's patch (2,))``, placed label first: the label uniform, then
    A's patch uniform over :func:`a_patch_range` of a ``patches x patches`` grid, and B's patch
    ``distance`` steps away in the label's direction. ``inside`` True (False) redraws until the
    pair lies inside (reaches out of) ``region`` (by default the seen region,
    :func:`in_seen_region`); ``None`` keeps every pair."""
    while True:
        label = int(rng.integers(len(RELATIONS)))
        lo, hi = a_patch_range(label, distance, patches)
        patch_a = lo + rng.integers(hi - lo)
        patch_b = patch_a + distance * np.array(RELATION_STEPS[label])
        if inside is None or region(patch_a, patch_b) == inside:
            return label, patch_a, patch_b


def draw_pair(
    rng: np.random.Generator,
    patch_a: np.ndarray,
    patch_b: np.ndarray,
    size: int,
    world: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """A red object in ``patch_a`` and a blue one in ``patch_b`` on a fresh background:
    ``(image (3, size, size) uint8, centres (2, 2) float)``, each object clipped to its patch.

    Each object is a random shape of radius 1-1.5 px, placed at a random point of its patch
    where it fits, and clipped to its patch, so no patch holds parts of both objects. The
    patches are the 8 x 8 design's drawn at ``size`` px, or with ``world`` the 4-px patches of
    the ``size``-px canvas (objects keep their 32-px size)."""
    image = _background(rng, size)
    # A patch's side and the objects' scale in the drawn pixels.
    cell, scale = (PATCH, 1.0) if world else (size // PATCHES, size / IMAGE_SIZE)
    red = np.array([rng.uniform(0.75, 1.0), rng.uniform(0.0, 0.3), rng.uniform(0.0, 0.3)])
    blue = np.array([rng.uniform(0.0, 0.3), rng.uniform(0.2, 0.5), rng.uniform(0.8, 1.0)])
    centres = []
    for patch, color in ((patch_a, red), (patch_b, blue)):
        r = rng.uniform(1.0, 1.5)
        # Inside the patch's pixels [p * PATCH, p * PATCH + PATCH - 1] with room for radius r.
        y, x = patch * PATCH + rng.uniform(r, PATCH - 1 - r, size=2)
        cy, cx = (y, x) if world else _rendered(y, x, size)
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        box = np.zeros((size, size), dtype=bool)
        (y0, x0), (y1, x1) = patch * cell, (patch + 1) * cell
        box[y0:y1, x0:x1] = True  # the diamond and plus may reach past r: keep them in the patch
        image[shape_mask(shape, cy, cx, r * scale, size) & box] = color
        centres.append((cy, cx))
    return _to_uint8(image), np.array(centres)


def far_split_design(task: str, split: str) -> tuple[tuple[tuple[int, float], ...], bool | None]:
    """``(mix, inside)`` of a far-relation split: the ``(distance, weight)`` pairs its images
    draw their distance from, and :func:`place_pair`'s ``inside`` (None: anywhere) for the
    split's region (:func:`split_region`)."""
    check_choice("task", task, FAR_TASKS)
    check_choice("split", split, TASK_SPLITS[task])
    held = task in HELDOUT_TASKS
    if split in ("train", "near"):
        mix = FAR_TRAIN_MIX if split == "train" else ((1, 1.0),)
        return mix, (True if held else None)
    test_mix = ((FAR_TEST_DISTANCE, 1.0),)
    if not held:
        return test_mix, None
    # far-relation-interior: each test split keeps the pairs inside its own region.
    return test_mix, (True if task == "far-relation-interior" else split == "seen")


def draw_far_relation(
    rng: np.random.Generator,
    size: int = IMAGE_SIZE,
    mix: tuple[tuple[int, float], ...] = FAR_TRAIN_MIX,
    inside: bool | None = None,
    region: Region = in_seen_region,
    world: bool = False,
) -> tuple[np.ndarray, int, np.ndarray, int]:
    """One far-relation example: ``(image (3, size, size) uint8, label, centres (2, 2), distance)``.

    The distance (in patches) is drawn from ``mix`` first, then the pair (:func:`place_pair`,
    with ``inside`` and ``region``), then the two objects exactly as in :func:`draw_relation`:
    on the 8 x 8 design grid, or with ``world`` on the grid of ``size / 4`` patches (``inside``
    must then be None: the regions are defined on the 8 x 8 grid).
    """
    distances, weights = zip(*mix, strict=True)
    distance = int(distances[rng.choice(len(distances), p=np.array(weights) / sum(weights))])
    patches = size // PATCH if world else PATCHES
    label, patch_a, patch_b = place_pair(rng, distance, inside, patches, region)
    image, centres = draw_pair(rng, patch_a, patch_b, size, world)
    return image, label, centres, distance


_DRAW: dict[str, Callable[[np.random.Generator, int, str], tuple[np.ndarray, int, np.ndarray]]] = {
    "grid-cell": draw_grid_cell,
    "relation": draw_relation,
}
CLASSES = {
    "grid-cell": tuple(f"cell ({r}, {c})" for r in range(GRID) for c in range(GRID)),
    "relation": RELATIONS,
    "far-relation": RELATIONS,
    "far-relation-heldout": RELATIONS,
    "far-relation-interior": RELATIONS,
}


def example_rng(task: str, split: str, seed: int, index: int) -> np.random.Generator:
    """The random stream of image ``index`` of ``split``: independent of every other image's."""
    if task in HELDOUT_TASKS and split == "test":
        split = "unseen"
    return np.random.default_rng([seed, TASKS.index(task), TASK_SPLITS[task].index(split), index])


def make_task(
    task: str,
    split: str,
    n: int,
    seed: int = 0,
    size: int = IMAGE_SIZE,
    rendering: str = "scaled",
) -> ImageClassificationData:
    """Generate ``n`` images of a task in ``TASKS`` for ``split`` (one of ``TASK_SPLITS[task]``),
    drawn at ``size`` x ``size`` px. ``rendering`` (``RENDERINGS``) says how a size above 32 px
    is drawn: ``"scaled"``, image ``i`` shows the same scene at every size; ``"world"``
    (``WORLD_TASKS`` only), the objects keep their 32-px size on a larger canvas.

    ``meta["centres"]`` holds the objects' centres in pixels: ``(n, 2)`` for grid-cell,
    ``(n, 2, 2)`` (A then B, each ``(y, x)``) for the others. The far-relation tasks add
    ``meta["distance"]`` ``(n,)`` int64: B's patch is A's plus ``distance`` label steps.
    """
    check_choice("task", task, TASKS)
    check_choice("split", split, TASK_SPLITS[task])
    check_positive_int("n", n)
    check_image_size(size)
    check_rendering(rendering, task)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    rngs = [example_rng(task, split, seed, i) for i in range(n)]
    distances = None
    if task in FAR_TASKS:
        mix, inside = far_split_design(task, split)
        region = split_region(task, split)
        world = rendering == "world"
        far = [draw_far_relation(rng, size, mix, inside, region, world) for rng in rngs]
        draws = [d[:3] for d in far]
        distances = torch.tensor([d[3] for d in far], dtype=torch.long)
    else:
        draws = [_DRAW[task](rng, size, rendering) for rng in rngs]
    images = torch.from_numpy(np.stack([d[0] for d in draws]))
    labels = torch.tensor([d[1] for d in draws], dtype=torch.long)
    meta = {"centres": torch.from_numpy(np.stack([d[2] for d in draws])).float()}
    if distances is not None:
        meta["distance"] = distances
    # The generated images are mostly dark background: normalise with their own typical
    # statistics (fixed numbers, so train and test are normalised alike).
    return ImageClassificationData(
        task,
        images,
        labels,
        CLASSES[task],
        mean=(0.2, 0.2, 0.2),
        std=(0.25, 0.25, 0.25),
        meta=meta,
    )
