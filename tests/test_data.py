"""The generated position tasks, the batch loader, augmentation and the CIFAR-10 reader."""

import hashlib
import pickle
import urllib.error

import numpy as np
import pytest
import torch
from torch.utils.data import RandomSampler

from companion.data import cifar, make_dataset, tasks
from companion.data.augment import random_crop_flip
from companion.data.cifar import load_cifar10
from companion.data.dataset import ImageClassificationData
from companion.data.loaders import batch_loader
from companion.data.tasks import CELL, PATCH, RELATION_STEPS, RELATIONS, shape_mask

# --------------------------------------------------------------------------- generated tasks


@pytest.mark.parametrize(("name", "classes"), [("grid-cell", 16), ("relation", 4)])
def test_generated_task_has_uint8_images_and_labels_of_every_class(name, classes):
    ds = make_dataset(name, "train", 400, seed=0)
    assert ds.images.shape == (400, 3, 32, 32) and ds.images.dtype == torch.uint8
    assert ds.labels.dtype == torch.int64 and ds.num_classes == classes
    assert set(ds.labels.tolist()) == set(range(classes))


@pytest.mark.parametrize("name", ["grid-cell", "relation"])
def test_same_seed_gives_identical_images_and_another_seed_different_ones(name):
    a, b = make_dataset(name, "train", 20, seed=3), make_dataset(name, "train", 20, seed=3)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, make_dataset(name, "train", 20, seed=4).images)


@pytest.mark.parametrize("name", ["grid-cell", "relation"])
def test_image_i_does_not_depend_on_how_many_are_generated(name):
    small, large = make_dataset(name, "test", 5), make_dataset(name, "test", 12)
    assert torch.equal(small.images, large.images[:5])


@pytest.mark.parametrize("name", ["grid-cell", "relation"])
def test_train_and_test_splits_share_no_image(name):
    train = make_dataset(name, "train", 300).images.flatten(1)
    test = make_dataset(name, "test", 300).images.flatten(1)
    same = (train[:, None, :] == test[None, :, :]).all(-1)
    assert not same.any()


@pytest.mark.parametrize("size", [32, 48, 64])
def test_grid_cell_label_is_the_cell_that_holds_every_object_pixel(size):
    ds = make_dataset("grid-cell", "train", 200, size=size)
    cell = CELL * size // 32
    for image, label, centre in zip(ds.images, ds.labels, ds.meta["centres"], strict=True):
        row, col = divmod(int(label), 4)
        assert (int(centre[0]) // cell, int(centre[1]) // cell) == (row, col)
        # The object is the only bright thing: some channel is at full brightness.
        ys, xs = np.nonzero((image.max(0).values == 255).numpy())
        assert len(ys) > 0
        assert (ys // cell == row).all() and (xs // cell == col).all()


def test_relation_label_matches_where_the_red_object_is_seen_from_the_blue_one():
    ds = make_dataset("relation", "train", 200)
    for image, label, centres in zip(ds.images, ds.labels, ds.meta["centres"], strict=True):
        img = image.int()
        red = (img[0] > 180) & (img[1] < 100) & (img[2] < 100)
        blue = (img[2] > 190) & (img[0] < 100)
        ya, xa = (c.float().mean().item() for c in torch.nonzero(red, as_tuple=True))
        yb, xb = (c.float().mean().item() for c in torch.nonzero(blue, as_tuple=True))
        dy, dx = yb - ya, xb - xa  # from A to B
        expected = (0 if dx > 0 else 1) if abs(dx) > abs(dy) else (2 if dy > 0 else 3)
        assert RELATIONS[int(label)] == RELATIONS[expected]
        (cay, cax), (cby, cbx) = centres.tolist()
        assert max(abs(cay - ya), abs(cax - xa), abs(cby - yb), abs(cbx - xb)) < 1.5


@pytest.mark.parametrize("size", [32, 48, 64])
def test_relation_objects_sit_in_neighbouring_patches_in_the_labels_direction(size):
    ds = make_dataset("relation", "train", 300, size=size)
    cell = PATCH * size // 32  # the 32-px design's patch, rendered at size px
    for image, label, centres in zip(ds.images, ds.labels, ds.meta["centres"], strict=True):
        img = image.int()
        red = (img[0] > 180) & (img[1] < 100) & (img[2] < 100)
        blue = (img[2] > 190) & (img[0] < 100)
        patches = []
        for mask in (red, blue):
            ys, xs = torch.nonzero(mask, as_tuple=True)
            # Every pixel of an object lies in one patch: no patch holds parts of both.
            assert len(set((ys // cell).tolist())) == 1 and len(set((xs // cell).tolist())) == 1
            patches.append((int(ys[0]) // cell, int(xs[0]) // cell))
        (ay, ax), (by, bx) = patches
        assert (by - ay, bx - ax) == RELATION_STEPS[int(label)]
        assert [tuple(int(v) // cell for v in c) for c in centres.tolist()] == patches


@pytest.mark.parametrize("name", ["grid-cell", "relation"])
@pytest.mark.parametrize("size", [48, 64])
def test_a_larger_rendering_shows_the_same_scene_with_more_pixels(name, size):
    small, large = make_dataset(name, "test", 50), make_dataset(name, "test", 50, size=size)
    assert large.images.shape == (50, 3, size, size)
    assert torch.equal(small.labels, large.labels)
    # Centres map from the 32-px frame: pixel edges k -+ 1/2 scale by size / 32.
    s = size / 32
    torch.testing.assert_close(large.meta["centres"], s * small.meta["centres"] + (s - 1) / 2)
    # The larger image is not the small one resized: its pixel noise is drawn at its own size,
    # from a stream that leaves the rest of the scene's random numbers where they were.
    assert not torch.equal(make_dataset(name, "test", 50, size=size, seed=1).images, large.images)


def test_rendering_at_32_px_is_the_default():
    for name in ("grid-cell", "relation"):
        a, b = make_dataset(name, "test", 30), make_dataset(name, "test", 30, size=32)
        assert torch.equal(a.images, b.images) and torch.equal(a.meta["centres"], b.meta["centres"])


@pytest.mark.parametrize("name", ["grid-cell", "relation", "far-relation"])
def test_both_renderings_draw_the_same_images_at_32_px(name):
    scaled = make_dataset(name, "test", 40)
    world = make_dataset(name, "test", 40, rendering="world")
    assert torch.equal(scaled.images, world.images) and torch.equal(scaled.labels, world.labels)


def _object_pixels(ds, name):
    img = ds.images.int()
    if name == "grid-cell":
        return (img.max(1).values == 255).flatten(1).sum(1)
    return ((img[:, 0] > 180) & (img[:, 1] < 100) & (img[:, 2] < 100)).flatten(1).sum(1)


@pytest.mark.parametrize("name", ["grid-cell", "relation", "far-relation"])
def test_the_world_rendering_keeps_each_objects_size_and_the_scaled_one_grows_it(name):
    small = _object_pixels(make_dataset(name, "test", 300), name).float().mean()
    world = _object_pixels(make_dataset(name, "test", 300, size=64, rendering="world"), name)
    scaled = _object_pixels(make_dataset(name, "test", 300, size=64), name)
    assert abs(world.float().mean() - small) < 0.15 * small  # the same size, in pixels
    assert scaled.float().mean() > 3 * small  # (64 / 32)^2 = 4 times the area


@pytest.mark.parametrize(("name", "split"), [("relation", "train"), ("far-relation", "train"),
                                             ("far-relation", "test")])  # fmt: skip
@pytest.mark.parametrize("size", [48, 64])
def test_world_pairs_keep_their_patch_offset_anywhere_on_the_larger_grid(name, split, size):
    ds = make_dataset(name, split, 400, size=size, rendering="world")
    distances = ds.meta.get("distance", torch.ones(len(ds.labels), dtype=torch.long))
    patches = size // PATCH
    seen = set()
    rows = zip(ds.images, ds.labels, ds.meta["centres"], distances, strict=True)
    for image, label, centres, distance in rows:
        assert ((centres // PATCH) < patches).all()
        img = image.int()
        red = (img[0] > 180) & (img[1] < 100) & (img[2] < 100)
        blue = (img[2] > 190) & (img[0] < 100)
        found = []
        for mask in (red, blue):
            ys, xs = torch.nonzero(mask, as_tuple=True)
            assert len(set((ys // PATCH).tolist())) == 1 and len(set((xs // PATCH).tolist())) == 1
            found.append((int(ys[0]) // PATCH, int(xs[0]) // PATCH))
        (ay, ax), (by, bx) = found
        step = RELATION_STEPS[int(label)]
        assert (by - ay, bx - ax) == (int(distance) * step[0], int(distance) * step[1])
        assert max(ay, ax, by, bx) < patches
        seen.update(found)
    assert max(max(p) for p in seen) == patches - 1  # out to the far border, beyond 32 px


@pytest.mark.parametrize("size", [48, 64])
def test_world_grid_cell_label_is_the_frames_cell_now_size_over_4_wide(size):
    ds = make_dataset("grid-cell", "train", 200, size=size, rendering="world")
    cell = size // 4
    for image, label in zip(ds.images, ds.labels, strict=True):
        ys, xs = np.nonzero((image.max(0).values == 255).numpy())
        assert (ys // cell == int(label) // 4).all() and (xs // cell == int(label) % 4).all()


@pytest.mark.parametrize("task", ["far-relation-heldout", "far-relation-interior"])
def test_a_rendering_is_named_and_world_is_refused_for_the_held_out_tasks(task):
    with pytest.raises(ValueError, match=r"rendering must be one of \['scaled', 'world'\]"):
        make_dataset("relation", "test", 2, rendering="big")
    with pytest.raises(ValueError, match=r"'world' is defined for grid-cell, relation, far-relat"):
        make_dataset(task, "test", 2, rendering="world")


@pytest.mark.parametrize("size", [24, 36, 50])
def test_a_size_below_32_or_not_a_multiple_of_8_is_refused(size):
    with pytest.raises(ValueError, match=rf"size must be a multiple of 8 and >= 32.*got {size}"):
        make_dataset("relation", "test", 2, size=size)


def test_cifar10_cannot_be_rendered_at_another_size(tmp_path):
    with pytest.raises(ValueError, match=r"size must be 32 for cifar10.*got 64"):
        make_dataset("cifar10", "test", size=64, data_dir=tmp_path)


def test_relation_pairs_are_placed_all_over_the_frame():
    centres = make_dataset("relation", "train", 1000).meta["centres"]
    a = centres[:, 0]
    assert a.min() < 5 and a.max() > 26  # A reaches every border region


@pytest.mark.parametrize("shape", tasks.SHAPES)
def test_shape_mask_is_centred_and_bounded_by_its_radius(shape):
    mask = shape_mask(shape, 10.0, 20.0, 2.5)
    ys, xs = np.nonzero(mask)
    assert mask[10, 20] and ys.min() >= 7 and ys.max() <= 13 and xs.min() >= 17 and xs.max() <= 23


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "mnist", "split": "train"}, "name must be one of"),
        ({"name": "relation", "split": "val"}, "split must be one of"),
        ({"name": "relation", "split": "train", "n": 0}, "n must be an int >= 1"),
    ],
)
def test_make_dataset_rejects_bad_arguments_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_dataset(**kwargs)


def test_make_dataset_rejects_a_non_int_size_and_a_negative_seed():
    with pytest.raises(TypeError, match="n must be an int"):
        make_dataset("relation", "train", n="10")
    with pytest.raises(ValueError, match="seed must be an int >= 0, got -1"):
        make_dataset("relation", "train", n=2, seed=-1)


def test_shape_mask_rejects_an_unknown_shape():
    with pytest.raises(ValueError, match="shape must be one of"):
        shape_mask("star", 5, 5, 2)


def test_examples_figure_shows_n_images_with_their_class_names():
    from companion.figures.training import plot_examples

    ds = make_dataset("relation", "train", 6)
    fig = plot_examples(ds, 6)
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    assert titles == [ds.classes[int(y)] for y in ds.labels]


def test_dataset_rejects_images_that_are_not_uint8_nchw():
    with pytest.raises(ValueError, match="images must be a uint8 tensor"):
        ImageClassificationData(
            "x", torch.zeros(2, 3, 4, 4), torch.zeros(2), ["a"], [0] * 3, [1] * 3
        )
    with pytest.raises(ValueError, match="labels must have shape"):
        images = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
        ImageClassificationData("x", images, torch.zeros(3), ["a"], [0] * 3, [1] * 3)


def test_indexing_with_a_list_returns_a_whole_batch_and_normalize_uses_mean_and_std():
    ds = make_dataset("grid-cell", "train", 10)
    images, labels = ds[[3, 1, 4]]
    assert images.shape == (3, 3, 32, 32) and torch.equal(labels, ds.labels[[3, 1, 4]])
    image, label = ds[2]
    assert image.shape == (3, 32, 32) and int(label) == int(ds.labels[2])
    x = ds.normalize(torch.full((1, 3, 1, 1), 51, dtype=torch.uint8))  # 51/255 = 0.2 = mean
    assert torch.allclose(x, torch.zeros_like(x), atol=1e-6)


def test_normalize_makes_its_mean_and_std_once_and_follows_a_change():
    ds = make_dataset("grid-cell", "train", 4)
    cpu = torch.device("cpu")
    assert ds._statistics(cpu)[0] is ds._statistics(cpu)[0]  # not rebuilt on every batch
    ds.std = (0.5, 0.5, 0.5)
    x = ds.normalize(torch.full((1, 3, 1, 1), 255, dtype=torch.uint8))
    assert torch.allclose(x, torch.full_like(x, (1.0 - 0.2) / 0.5))
    assert pickle.loads(pickle.dumps(ds))._stats == {}  # a DataLoader worker's copy has none


# --------------------------------------------------------------------------- loading, augmentation


def test_batch_loader_visits_every_image_once_per_epoch_in_a_seeded_order():
    ds = make_dataset("relation", "train", 50)

    def order(seed):
        loader = batch_loader(
            ds, RandomSampler(ds, generator=torch.Generator().manual_seed(seed)), 8
        )
        return torch.cat([labels for _, labels in loader])

    first = order(0)
    assert len(first) == 50 and torch.equal(first.sort().values, ds.labels.sort().values)
    assert torch.equal(first, order(0))
    assert not torch.equal(first, order(1))


def test_batch_loader_drop_last_yields_only_full_batches():
    ds = make_dataset("relation", "train", 50)
    loader = batch_loader(ds, list(range(50)), 16, drop_last=True)
    assert [len(y) for _, y in loader] == [16, 16, 16]


def test_random_crop_flip_keeps_the_shape_and_is_reproducible():
    images = torch.randint(0, 256, (6, 3, 8, 8), dtype=torch.uint8)
    a = random_crop_flip(images, 2, torch.Generator().manual_seed(0))
    b = random_crop_flip(images, 2, torch.Generator().manual_seed(0))
    assert a.shape == images.shape and a.dtype == torch.uint8 and torch.equal(a, b)


def test_random_crop_flip_without_padding_only_flips():
    images = torch.randint(0, 256, (16, 3, 5, 5), dtype=torch.uint8)
    out = random_crop_flip(images, 0, torch.Generator().manual_seed(0))
    same = [torch.equal(o, i) for o, i in zip(out, images, strict=True)]
    flipped = [torch.equal(o, i.flip(-1)) for o, i in zip(out, images, strict=True)]
    assert all(s or f for s, f in zip(same, flipped, strict=True))
    assert any(same) and any(flipped)


def test_random_crop_flip_shifts_content_by_the_padding_offset():
    image = torch.zeros(1, 1, 6, 6, dtype=torch.uint8)
    image[0, 0, 2, 3] = 200
    gen = torch.Generator().manual_seed(5)
    outs = [random_crop_flip(image, 1, gen) for _ in range(40)]
    positions = {tuple(torch.nonzero(o[0, 0]).flatten().tolist()) for o in outs}
    # Each output is the pixel moved by at most 1 (and maybe mirrored), or cropped away.
    for pos in positions:
        if pos:
            y, x = pos
            assert abs(y - 2) <= 1 and (abs(x - 3) <= 1 or abs(x - (5 - 3)) <= 1)
    assert len(positions) > 3


# --------------------------------------------------------------------------- CIFAR-10 (fake folder)


def test_fake_cifar_folder_loads_with_its_own_checksums(tmp_path, write_fake_cifar):
    md5s = write_fake_cifar(tmp_path)
    train = load_cifar10("train", tmp_path, md5s=md5s)
    test = load_cifar10("test", tmp_path, md5s=md5s)
    assert train.images.shape == (20, 3, 32, 32) and test.images.shape == (4, 3, 32, 32)
    assert train.augment and not test.augment and train.classes[0] == "airplane"
    raw = pickle.loads((tmp_path / "cifar-10-batches-py" / "test_batch").read_bytes())
    assert torch.equal(test.images[1].flatten(), torch.from_numpy(raw[b"data"][1]))


def test_a_flipped_byte_fails_the_checksum_naming_the_file(tmp_path, write_fake_cifar):
    md5s = write_fake_cifar(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_3"
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match="data_batch_3 is corrupt"):
        load_cifar10("train", tmp_path, md5s=md5s)


def test_the_published_checksums_reject_a_fake_folder(tmp_path, write_fake_cifar):
    write_fake_cifar(tmp_path)
    assert cifar.cifar10_md5s()["test_batch"] == "40351d587109b95175f43aff81a1287e"
    with pytest.raises(RuntimeError, match="not the genuine file"):
        load_cifar10("test", tmp_path)


def test_a_batch_with_the_wrong_structure_is_rejected(tmp_path, write_fake_cifar):
    write_fake_cifar(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}))
    md5s = {"test_batch": hashlib.md5(path.read_bytes()).hexdigest()}
    with pytest.raises(RuntimeError, match=r"must be uint8 of shape \(2, 3072\)"):
        load_cifar10("test", tmp_path, md5s=md5s)


def test_missing_cifar_offline_names_the_generated_fallback(tmp_path):
    with pytest.raises(RuntimeError, match="--dataset grid-cell") as info:
        make_dataset("cifar10", "train", data_dir=tmp_path)
    assert "download" in str(info.value)


def test_failed_download_names_the_generated_fallback(tmp_path, monkeypatch):
    import torchvision.datasets

    class Offline:
        def __init__(self, *args, **kwargs):
            raise urllib.error.URLError("no network")

    monkeypatch.setattr(torchvision.datasets, "CIFAR10", Offline)
    with pytest.raises(RuntimeError, match=r"could not download CIFAR-10.*--dataset relation"):
        make_dataset("cifar10", "test", data_dir=tmp_path, download=True)


def test_make_dataset_takes_the_first_n_cifar_images(tmp_path, monkeypatch, write_fake_cifar):
    md5s = write_fake_cifar(tmp_path)
    monkeypatch.setattr(cifar, "cifar10_md5s", lambda: md5s)
    full = make_dataset("cifar10", "train", data_dir=tmp_path)
    first = make_dataset("cifar10", "train", n=7, data_dir=tmp_path)
    assert len(first) == 7 and torch.equal(first.images, full.images[:7])
