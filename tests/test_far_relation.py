"""The far-relation tasks (direction between objects apart, held-out positions) and their exact
position-only bounds."""

import hashlib
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.data import dataset_splits, make_dataset, num_classes, tasks
from companion.data.far_relation_bounds import (
    constant_answer_accuracy,
    pair_distribution,
    position_only_bounds,
)
from companion.data.tasks import (
    FAR_TEST_DISTANCE,
    FAR_TRAIN_MIX,
    HELDOUT_COLUMNS,
    PATCHES,
    RELATION_STEPS,
    far_split_design,
    place_pair,
)
from companion.train.cli import build_parser
from companion.train.config import TrainConfig

BOUNDS_JSON = Path(__file__).resolve().parents[1] / "results/pilots/out/bounds.json"
HELDOUT = "far-relation-heldout"
#: Every far-relation split, as (task, split).
FAR_SPLITS = [("far-relation", s) for s in ("train", "test", "near")] + [
    (HELDOUT, s) for s in ("train", "test", "seen", "unseen", "near")
]


def patches(ds, size=32):
    """``(n, 2, 2)`` int: A's and B's ``(row, col)`` patch, from the objects' centres."""
    return (ds.meta["centres"] // (size // PATCHES)).long()


@pytest.fixture(scope="module")
def far():
    """Every far-relation split, 400 images each, drawn once for the module."""
    return {key: make_dataset(*key, n=400, seed=0) for key in FAR_SPLITS}


@pytest.mark.parametrize("size", [32, 48])
def test_b_is_a_plus_distance_label_steps_for_every_example(far, size):
    for key in FAR_SPLITS:
        ds = far[key] if size == 32 else make_dataset(*key, n=60, seed=0, size=size)
        steps = torch.tensor(RELATION_STEPS)[ds.labels]
        p = patches(ds, size)
        assert torch.equal(p[:, 1] - p[:, 0], ds.meta["distance"][:, None] * steps), key
        assert ((p >= 0) & (p < PATCHES)).all()


def test_every_test_example_is_at_distance_2_and_every_near_one_at_distance_1(far):
    assert FAR_TEST_DISTANCE == 2
    for key in FAR_SPLITS:
        if key[1] != "train":
            want = 1 if key[1] == "near" else 2
            assert (far[key].meta["distance"] == want).all(), key


def test_training_images_mix_distances_1_and_2_about_half_each():
    for task in ("far-relation", HELDOUT):
        d = make_dataset(task, "train", 2000).meta["distance"]
        assert set(d.tolist()) == {1, 2} and dict(FAR_TRAIN_MIX) == {1: 0.5, 2: 0.5}
        # binomial(2000, 1/2): sd 22, so 4 sd is 90
        assert abs(int((d == 1).sum()) - 1000) < 90


def test_labels_follow_the_designed_mix_in_every_split(far):
    for key in FAR_SPLITS:
        mix, inside = far_split_design(*key)
        # the label marginal of the exact pair distribution, averaged over the split's distances
        want = torch.zeros(4, dtype=torch.float64)
        for distance, weight in mix:
            for (_, label), prob in pair_distribution(distance, inside).items():
                want[label] += weight * float(prob)
        counts = torch.bincount(far[key].labels, minlength=4).double()
        sd = (400 * want * (1 - want)).sqrt()
        assert ((counts - 400 * want).abs() < 4 * sd).all(), (key, counts, want)
    # far-relation's own test labels are exactly uniform (label-first placement)
    marginal = [Fraction(0)] * 4
    for (_, label), prob in pair_distribution(2).items():
        marginal[label] += prob
    assert marginal == [Fraction(1, 4)] * 4


def test_heldout_training_and_seen_pairs_lie_in_the_left_columns_and_unseen_ones_reach_out(far):
    for split in ("train", "seen", "near", "unseen", "test"):
        right = patches(far[(HELDOUT, split)])[:, :, 1].max(1).values
        inside = right < HELDOUT_COLUMNS
        assert inside.all() if split in ("train", "seen", "near") else not inside.any(), split


def test_heldout_test_split_is_its_unseen_split():
    a, b = make_dataset(HELDOUT, "test", 30), make_dataset(HELDOUT, "unseen", 30)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert dataset_splits(HELDOUT) == ("train", "test", "seen", "unseen", "near")
    assert dataset_splits("far-relation") == ("train", "test", "near")
    assert dataset_splits("cifar10") == ("train", "test")


def test_each_split_has_its_own_constant_answer_from_its_labels(far):
    for key in FAR_SPLITS:
        labels = far[key].labels
        assert constant_answer_accuracy(labels) == torch.bincount(labels).max().item() / 400
    # the pilot's analytic values: seen and unseen differ because the border cuts differently
    seen, unseen = (position_only_bounds(2, inside) for inside in (True, False))
    assert seen["constant_answer"] == Fraction(9, 34)  # 0.265
    assert unseen["constant_answer"] == Fraction(2, 7)  # 0.286


@pytest.mark.parametrize(("task", "split"), FAR_SPLITS)
def test_same_seed_gives_identical_images_and_another_seed_different_ones(task, split):
    a, b = make_dataset(task, split, 12, seed=3), make_dataset(task, split, 12, seed=3)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert torch.equal(a.meta["distance"], b.meta["distance"])
    assert not torch.equal(a.images, make_dataset(task, split, 12, seed=4).images)
    assert torch.equal(make_dataset(task, split, 5, seed=3).images, a.images[:5])


def test_splits_and_tasks_share_no_image():
    sets = {key: make_dataset(*key, n=120).images.flatten(1) for key in FAR_SPLITS}
    sets["relation"] = make_dataset("relation", "train", 120).images.flatten(1)
    keys = [k for k in sets if k != (HELDOUT, "test")]  # test is unseen's alias
    for i, k in enumerate(keys):
        for other in keys[i + 1 :]:
            same = (sets[k][:, None, :] == sets[other][None, :, :]).all(-1)
            assert not same.any(), (k, other)


def test_adding_far_relation_leaves_the_existing_tasks_images_unchanged():
    # sha256 of the first 16 training images and labels (seed 0), from before far-relation existed
    pinned = {
        "grid-cell": "e5e0080281280200363286aef8b3cd1fd6b5d418f9d3db543af68f0a3e315266",
        "relation": "8702358dc217ac78c60ac8b82dec89186c265a59b51075ebf72dafa24f06b6c2",
    }
    for name, digest in pinned.items():
        ds = make_dataset(name, "train", 16, seed=0)
        data = ds.images.numpy().tobytes() + ds.labels.numpy().tobytes()
        assert hashlib.sha256(data).hexdigest() == digest, name


@pytest.mark.parametrize("size", [32, 64])
def test_far_relation_draws_its_objects_exactly_as_relation_does(size):
    # the same stream through relation's drawing and far-relation's (at distance 1) gives the
    # same label, objects and pixels: "drawn like relation" is an identity, not a likeness
    for seed in range(20):
        image, label, centres = tasks.draw_relation(np.random.default_rng(seed), size)
        rng = np.random.default_rng(seed)
        far_label, patch_a, patch_b = place_pair(rng, 1)
        far_image, far_centres = tasks.draw_pair(rng, patch_a, patch_b, size)
        assert far_label == label and np.array_equal(far_image, image)
        assert np.array_equal(far_centres, centres)


def test_place_pair_samples_the_exact_pair_distribution():
    rng = np.random.default_rng(0)
    for inside in (None, True, False):
        exact = pair_distribution(2, inside)
        counts: dict = {}
        n = 20000
        for _ in range(n):
            label, a, _ = place_pair(rng, 2, inside)
            key = ((int(a[0]), int(a[1])), label)
            counts[key] = counts.get(key, 0) + 1
        assert set(counts) <= set(exact)
        tv = sum(abs(counts.get(k, 0) / n - float(p)) for k, p in exact.items()) / 2
        assert tv < 0.06, (inside, tv)


def test_position_only_bounds_at_distance_2_are_the_pilots():
    b = position_only_bounds()
    assert b == {
        "constant_answer": Fraction(1, 4),
        "a_patch_only": Fraction(1, 3),
        "merge_slots_and_shared_windows": Fraction(1, 4),
        "merge_slots_shared_windows_and_window_sizes": Fraction(11, 24),
        "both_patches": Fraction(1),
    }
    rows = json.loads(BOUNDS_JSON.read_text())["rows"]
    for row in rows:
        if row["sampling"] != "label-first" or row["region"] not in (None, "left6"):
            continue
        inside = None if row["region"] is None else row["inside"]
        ours = position_only_bounds(row["d"], inside)
        for name, value in ours.items():
            assert float(value) == pytest.approx(row[name], abs=1e-9), (row["d"], inside, name)


def test_distance_3_is_not_proof_against_merge_slots():
    # why the test split is distance 2 and not "distance >= 2"
    assert position_only_bounds(3)["merge_slots_and_shared_windows"] == 1
    assert position_only_bounds(1)["merge_slots_and_shared_windows"] == 1


def test_far_relation_is_a_four_class_dataset_companion_train_accepts():
    assert num_classes("far-relation") == num_classes(HELDOUT) == 4
    for name in ("far-relation", HELDOUT):
        TrainConfig(dataset=name)
        assert build_parser().parse_args(["--dataset", name]).dataset == name


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: make_dataset("far-relation", "seen"), "split must be one of"),
        (lambda: make_dataset("relation", "unseen"), "split must be one of"),
        (lambda: make_dataset(HELDOUT, "val"), "split must be one of"),
        (lambda: far_split_design("relation", "train"), "task must be one of"),
        (lambda: pair_distribution(0), "distance must be an int >= 1"),
        (lambda: pair_distribution(8), "distance must be below 8"),
        (lambda: pair_distribution(2, inside="left"), "inside must be one of"),
        (lambda: constant_answer_accuracy(torch.zeros(0, dtype=torch.long)), "labels must be"),
    ],
)
def test_bad_arguments_get_a_one_line_error_naming_them(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
