"""far-relation-interior: positions held out inside the frame, away from the border, and the
predictions written for it before any run (results/interior-holdout/predictions.md)."""

from __future__ import annotations

import re
import shlex
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from companion.data import make_dataset, num_classes
from companion.data.far_relation_bounds import pair_distribution, position_only_bounds
from companion.data.tasks import (
    INTERIOR_BLOCK,
    INTERIOR_WINDOW,
    TASK_SPLITS,
    far_split_design,
    interior_heldout,
    interior_seen,
    off_block,
    place_pair,
    split_region,
)
from companion.experiments.predictions import KINDS, parse_cell, parse_predictions
from companion.experiments.runs.ablation import GRID, AblationPlan, build_parser
from companion.train.config import config_from_args

ROOT = Path(__file__).resolve().parents[1]
TASK = "far-relation-interior"
PREDICTIONS = ROOT / "results" / "interior-holdout" / "predictions.md"


def patches_of(split: str, n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A's patches, B's patches, distances)`` of ``n`` images of a split, from their centres."""
    data = make_dataset(TASK, split, n)
    centres = data.meta["centres"].numpy()
    return (
        (centres[:, 0] // 4).astype(int),
        (centres[:, 1] // 4).astype(int),
        (data.meta["distance"].numpy()),
    )


def in_block(patches: np.ndarray) -> np.ndarray:
    lo, hi = INTERIOR_BLOCK
    return ((patches >= lo) & (patches < hi)).all(1)


def in_window(patches: np.ndarray) -> np.ndarray:
    lo, hi = INTERIOR_WINDOW
    return ((patches >= lo) & (patches < hi)).all(1)


def test_no_training_object_ever_lies_in_the_central_block():
    a, b, distance = patches_of("train", 600)
    assert not (in_block(a) | in_block(b)).any()
    assert set(distance.tolist()) == {1, 2}
    # ... while the block's neighbours do hold training objects: the block is held out, not
    # a region the task never reaches.
    assert ((a[:, 0] == 2) & (a[:, 1] == 3)).any() or ((b[:, 0] == 2) & (b[:, 1] == 3)).any()


@pytest.mark.parametrize("split", ["seen", "unseen", "test"])
def test_both_test_splits_lie_inside_the_uncut_interior_window_at_distance_2(split):
    a, b, distance = patches_of(split)
    assert (distance == 2).all() and in_window(a).all() and in_window(b).all()
    touches = in_block(a) | in_block(b)
    assert touches.all() if split != "seen" else not touches.any()
    # Never the map's outer ring: no pair of either split is at the border.
    assert a.min() >= 2 and b.min() >= 2 and a.max() <= 5 and b.max() <= 5


def test_test_is_the_unseen_split_and_near_is_distance_1_off_the_block():
    assert np.array_equal(
        make_dataset(TASK, "test", 50).images, make_dataset(TASK, "unseen", 50).images
    )
    a, b, distance = patches_of("near")
    assert (distance == 1).all() and not (in_block(a) | in_block(b)).any()


def test_the_interior_splits_place_16_pairs_each_with_the_labels_balanced():
    for region in (interior_seen, interior_heldout):
        exact = pair_distribution(2, True, region)
        assert len(exact) == 16
        per_label = [sum(p for (_, label), p in exact.items() if label == k) for k in range(4)]
        assert per_label == [Fraction(1, 4)] * 4


def test_place_pair_samples_each_interior_region_exactly():
    rng = np.random.default_rng(0)
    # 16 pairs in each test region (redrawn 11 times in 12), many off the block.
    for region, n in ((interior_seen, 2000), (interior_heldout, 2000), (off_block, 20000)):
        exact = pair_distribution(2, True, region)
        counts: dict = {}
        for _ in range(n):
            label, a, _ = place_pair(rng, 2, True, region=region)
            key = ((int(a[0]), int(a[1])), label)
            counts[key] = counts.get(key, 0) + 1
        assert set(counts) <= set(exact)
        assert sum(abs(counts.get(k, 0) / n - float(p)) for k, p in exact.items()) / 2 < 0.06


def test_position_free_cues_are_worth_exactly_the_constant_answer_on_both_test_splits():
    for split in ("seen", "unseen"):
        bounds = position_only_bounds(2, True, split_region(TASK, split))
        assert bounds == {
            "constant_answer": Fraction(1, 4),
            "a_patch_only": Fraction(3, 4),
            "merge_slots_and_shared_windows": Fraction(1, 4),
            "merge_slots_shared_windows_and_window_sizes": Fraction(1, 4),
            "both_patches": Fraction(1),
        }, split


def test_the_interior_task_is_a_held_out_far_relation_task_the_trainer_accepts():
    assert num_classes(TASK) == 4
    assert TASK_SPLITS[TASK] == ("train", "test", "seen", "unseen", "near")
    assert far_split_design(TASK, "train") == (((1, 0.5), (2, 0.5)), True)
    assert far_split_design(TASK, "unseen") == (((2, 1.0),), True)
    assert split_region(TASK, "train") is off_block and split_region(TASK, "seen") is interior_seen
    with pytest.raises(ValueError, match="split must be one of"):
        split_region(TASK, "val")


def _command() -> list[str]:
    text = PREDICTIONS.read_text()
    block = re.search(r"```bash\n(.*?)\n```", text, re.DOTALL)
    assert block, "the predictions give the command that would run them"
    return shlex.split(block.group(1).replace("\\\n", " "))


def test_the_predictions_read_cells_and_splits_of_the_plan_their_command_runs():
    predictions = parse_predictions(PREDICTIONS.read_text(), PREDICTIONS)
    words = _command()
    # Committed before the commands moved into companion.commands: the same command, spelled so.
    assert words[:3] == ["python", "-m", "companion.ablation"]
    args = build_parser().parse_args(words[3:])
    grid = {name: tuple(getattr(args, name)) for name in GRID}  # as the command line reads it
    assert args.name == "interior-holdout" and grid["dataset"] == (TASK,)
    base = config_from_args(args, **{k: v[0] for k, v in grid.items()}, progress=False)
    plan = AblationPlan(name=args.name, datasets=grid["dataset"], pos=grid["pos"],
                        seeds=grid["seed"], base=base)  # fmt: skip
    cells = {f"{d}:{p}" for d, p, _, _ in plan.runs()}
    assert predictions["solved"] == {TASK: {"split": "seen", "threshold": 0.9}}
    ids = [p["id"] for p in predictions["predictions"]]
    assert ids == [f"I{k}" for k in range(1, len(ids) + 1)]
    for p in predictions["predictions"]:
        assert p["kind"] in KINDS
        for cell in (p["cell"], p.get("against")):
            if cell not in (None, "constant"):
                assert cell in cells and parse_cell(cell)[0] == TASK, p["id"]
        for key in ("split", "first", "second"):
            if key in p:
                assert p[key] in TASK_SPLITS[TASK], p["id"]
    assert plan.base.curriculum_epochs == 5 and plan.base.epochs == 40
