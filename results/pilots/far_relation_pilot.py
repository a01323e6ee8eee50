"""Pilot (throw-away, not project code): can a relative bias learn the direction between two
objects that lie >= 2 patches apart, and in which learning problem?

Task "far-relation": A (red) and B (blue) sit in patches at an axis offset of d patches; the label
is the direction (the four labels of ``companion.data.RELATIONS``). At d >= 2 the two objects are
always in different 2 x 2 merge groups, so neither a patch's embedding nor patch merging's
concatenation order sees both; only a position code that relates two tokens (a relative bias
inside a stage-0 window) can read the direction. Training draws d from a mix (d = 1 opens the
hierarchy's shortcut, which earlier 20-epoch pilots found lets bias-table models take off);
the test split of the experiment is d = 2 (d = 1 and d = 3 are reported beside it).

Usage (from the repository root, one training process at a time):

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD nice -n 19 python results/pilots/far_relation_pilot.py \
        bounds
    ... far_relation_pilot.py train DESIGN --pos rel abs+rel --seeds 0 1 2 3

Every run appends one JSON line to results/pilots/out/<DESIGN>.jsonl (settings, commit, accuracy
per test distance, the constant answer's accuracy on the same images, wall time, a d = 2 curve);
``results/pilots/far_relation_table.py`` turns those files into the markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import companion.data.tasks as D
from companion.swin import swin_from_config
from companion.train.build import param_groups, warmup_cosine

OUT = Path(__file__).resolve().parent / "out"
GRID = D.PATCHES  # 8 x 8 patches of 4 px
#: B's patch minus A's patch per label, in units of d (same order as companion.data.RELATIONS).
UNIT_STEPS = D.RELATION_STEPS

#: Designs: everything a run depends on besides encoding and seed. ``mix``: training distances
#: and their weights; ``sampling``: how a pair is placed (see ``pair_distribution``);
#: ``region``: None, or "left6" (train and "seen" tests with both objects in the left 6 columns).
BASE = {
    "mix": {1: 0.5, 2: 0.5},
    "train_size": 2000,
    "test_size": 1000,
    "epochs": 20,
    "batch_size": 16,
    "lr": 1e-3,
    "warmup_epochs": 2.0,
    "weight_decay": 0.05,
    "clip_grad": 5.0,
    "label_smoothing": 0.0,
    "num_heads": (2, 4),
    "sampling": "label-first",
    "region": None,
    "data_seed": 0,
    "curriculum_epochs": 0,
}
DESIGNS = {
    # the shared pilot's mix run, in companion.train's optimiser and schedule
    "mix12-base": {},
    # more steps on the same images
    "mix12-e40": {"epochs": 40},
    # more images, same steps per image as e40 in half the epochs
    "mix12-n4k-e20": {"train_size": 4000},
    # stage 0 with 4 heads (one per direction is possible) and 8 at stage 1
    "mix12-h4": {"num_heads": (4, 8)},
    "mix12-h4-lr2": {"num_heads": (4, 8), "lr": 2e-3},
    "mix12-lr2": {"lr": 2e-3},
    "mix12-lr2-e30": {"lr": 2e-3, "epochs": 30},
    "mix12-h4-lr2-e30": {"num_heads": (4, 8), "lr": 2e-3, "epochs": 30},
    # three d = 1 images for every d = 2 one: in `relation` (d = 1 only) every encoding leaves
    # the symmetric start within 20 epochs, so d = 1 is what carries the early gradient
    "d1heavy": {"mix": {1: 0.75, 2: 0.25}},
    "d1heavy-h4": {"mix": {1: 0.75, 2: 0.25}, "num_heads": (4, 8)},
    "d1heavy-e30": {"mix": {1: 0.75, 2: 0.25}, "epochs": 30},
    "d1heavy-n3k-e20": {"mix": {1: 0.75, 2: 0.25}, "train_size": 3000},
    # curriculum: 5 epochs on the d = 1 half of the set, then the whole mix
    "cur5": {"curriculum_epochs": 5},
    "cur5-h4": {"curriculum_epochs": 5, "num_heads": (4, 8)},
    "cur5-e25": {"curriculum_epochs": 5, "epochs": 25},
    "cur5-e40": {"curriculum_epochs": 5, "epochs": 40},
    "heldout-cur5": {"curriculum_epochs": 5, "region": "left6"},
    # the experiment's candidate: held-out training region, curriculum, 40 epochs
    "heldout-cur5-e40": {"curriculum_epochs": 5, "epochs": 40, "region": "left6"},
    # held-out positions: both objects in the left 6 patch columns in training
    "heldout-lr2-e30": {"lr": 2e-3, "epochs": 30, "region": "left6"},
}


def settings(design: str) -> dict:
    return {**BASE, **DESIGNS[design]}


# ---------------------------------------------------------------- where the pair goes
def valid_a(step: tuple[int, int]) -> list[tuple[int, int]]:
    """A's patches from which A + step stays on the grid."""
    return [
        (y, x)
        for y in range(GRID)
        for x in range(GRID)
        if 0 <= y + step[0] < GRID and 0 <= x + step[1] < GRID
    ]


def in_region(a: tuple[int, int], b: tuple[int, int], region: str | None) -> bool:
    if region is None:
        return True
    if region == "left6":
        return a[1] < 6 and b[1] < 6
    if region == "central":
        # both objects in the middle shifted window (rows/columns 2-5) along the pair's axis:
        # there the two objects' shifted windows have the same size, so no border cue is left
        axis = 0 if a[0] != b[0] else 1
        return 2 <= a[axis] <= 5 and 2 <= b[axis] <= 5
    raise ValueError(f"region must be None, 'left6' or 'central', got {region!r}")


def pair_distribution(d: int, sampling: str, region: str | None = None, inside: bool = True):
    """``{(a, label): probability}`` of A's patch and the label at distance ``d``.

    ``label-first``: the label uniform, then A uniform over the patches where it fits (the
    `relation` task's rule). ``a-first``: A uniform over all patches, then the label uniform
    over the directions that fit there. With ``region`` the pair is kept only when it lies
    inside the region (``inside``) or reaches out of it (``not inside``), renormalised.
    """
    p: dict[tuple[tuple[int, int], int], float] = defaultdict(float)
    if sampling == "label-first":
        for label, unit in enumerate(UNIT_STEPS):
            step = (unit[0] * d, unit[1] * d)
            cells = valid_a(step)
            for a in cells:
                p[(a, label)] += 0.25 / len(cells)
    elif sampling == "a-first":
        for a in itertools.product(range(GRID), repeat=2):
            labels = [
                lab
                for lab, u in enumerate(UNIT_STEPS)
                if 0 <= a[0] + u[0] * d < GRID and 0 <= a[1] + u[1] * d < GRID
            ]
            for lab in labels:
                p[(a, lab)] += 1 / GRID**2 / len(labels)
    else:
        raise ValueError(f"sampling must be 'label-first' or 'a-first', got {sampling!r}")
    if region is not None:
        keep = {
            k: v for k, v in p.items() if in_region(k[0], b_of(k[0], k[1], d), region) == inside
        }
        total = sum(keep.values())
        p = defaultdict(float, {k: v / total for k, v in keep.items()})
    return dict(p)


def b_of(a: tuple[int, int], label: int, d: int) -> tuple[int, int]:
    u = UNIT_STEPS[label]
    return (a[0] + u[0] * d, a[1] + u[1] * d)


def window_regions(c: int) -> tuple[int, int]:
    """The stage-0 window a patch row/column falls in: regular windows of 4 ({0-3}, {4-7}) and
    the shifted ones (roll by 2; the wrapped window is masked into {6, 7} and {0, 1})."""
    return c // 4, (c + 2) // 4


def bounds(d: int, sampling: str, region: str | None = None, inside: bool = True) -> dict:
    """Analytic accuracies of position-only rules on the split (exact, from the distribution)."""
    p = pair_distribution(d, sampling, region, inside)

    def bound(feature) -> float:
        joint: dict = defaultdict(lambda: np.zeros(4))
        for (a, label), prob in p.items():
            joint[feature(a, b_of(a, label, d))][label] += prob
        return float(sum(v.max() for v in joint.values()))

    def structural(a, b):
        # what `none` can see without relating the two tokens' positions: each object's slot in
        # its 2 x 2 merge group (the concatenation order) and whether the two share a stage-0
        # window, regular or shifted (attention mixes content inside a window only)
        ra, rb = [tuple(window_regions(c) for c in pt) for pt in (a, b)]
        same_regular = ra[0][0] == rb[0][0] and ra[1][0] == rb[1][0]
        same_shifted = ra[0][1] == rb[0][1] and ra[1][1] == rb[1][1]
        return (a[0] % 2, a[1] % 2, b[0] % 2, b[1] % 2, same_regular, same_shifted)

    def structural_sizes(a, b):
        # ... and the size of each object's shifted window (2 or 4 patches per axis): softmax
        # averages over a window, so how strongly an object shows up tells its window's size
        sizes = tuple(window_regions(c)[1] == 1 for pt in (a, b) for c in pt)
        return (*structural(a, b), *sizes)

    labels = np.zeros(4)
    for (_, label), prob in p.items():
        labels[label] += prob
    return {
        "d": d,
        "sampling": sampling,
        "region": region,
        "inside": inside,
        "constant_answer": float(labels.max()),
        "label_probs": [round(float(v), 4) for v in labels],
        "a_patch_only": bound(lambda a, b: a),
        "b_patch_only": bound(lambda a, b: b),
        "a_or_b_patch_only": max(bound(lambda a, b: a), bound(lambda a, b: b)),
        "merge_slots_and_shared_windows": bound(structural),
        "merge_slots_shared_windows_and_window_sizes": bound(structural_sizes),
        "both_patches": bound(lambda a, b: (a, b)),
    }


# ---------------------------------------------------------------- images
def draw(rng: np.random.Generator, d: int, sampling: str, region, inside: bool):
    """One image (3, 32, 32) uint8 and its label: the pair from ``pair_distribution``, the
    objects drawn as in ``companion.data.draw_relation`` (radius 1-1.5 px, clipped to their
    patch)."""
    while True:
        if sampling == "label-first":
            label = int(rng.integers(4))
            cells = valid_a((UNIT_STEPS[label][0] * d, UNIT_STEPS[label][1] * d))
            a = cells[int(rng.integers(len(cells)))]
        else:
            a = (int(rng.integers(GRID)), int(rng.integers(GRID)))
            fits = [lab for lab in range(4) if all(0 <= c < GRID for c in b_of(a, lab, d))]
            label = fits[int(rng.integers(len(fits)))]
        b = b_of(a, label, d)
        if region is None or in_region(a, b, region) == inside:
            break
    image = D._background(rng)
    red = np.array([rng.uniform(0.75, 1.0), rng.uniform(0.0, 0.3), rng.uniform(0.0, 0.3)])
    blue = np.array([rng.uniform(0.0, 0.3), rng.uniform(0.2, 0.5), rng.uniform(0.8, 1.0)])
    for patch, color in ((np.array(a), red), (np.array(b), blue)):
        r = rng.uniform(1.0, 1.5)
        cy, cx = patch * D.PATCH + rng.uniform(r, D.PATCH - 1 - r, size=2)
        shape = D.SHAPES[int(rng.integers(len(D.SHAPES)))]
        box = np.zeros((32, 32), dtype=bool)
        (y0, x0), (y1, x1) = patch * D.PATCH, (patch + 1) * D.PATCH
        box[y0:y1, x0:x1] = True
        image[D.shape_mask(shape, cy, cx, r) & box] = color
    return D._to_uint8(image), label


def make(n: int, seed: int, mix: dict, sampling: str, region=None, inside=True):
    rng = np.random.default_rng(seed)
    dists, weights = list(mix), np.array(list(mix.values()), dtype=float)
    xs, ys, ds = [], [], []
    for _ in range(n):
        d = int(dists[rng.choice(len(dists), p=weights / weights.sum())])
        x, y = draw(rng, d, sampling, region, inside)
        xs.append(x)
        ys.append(y)
        ds.append(d)
    x = (torch.tensor(np.stack(xs)).float() / 255 - 0.5) / 0.25
    return x, torch.tensor(ys), torch.tensor(ds)


def data_for(s: dict):
    """Training images and the named test sets (each with its own seed stream)."""
    base = 1000 * s["data_seed"]
    train = make(s["train_size"], base + 1, s["mix"], s["sampling"], s["region"], True)
    tests = {}
    for i, d in enumerate((1, 2, 3)):
        if s["region"] is None:
            tests[f"d{d}"] = make(s["test_size"], base + 2 + i, {d: 1}, s["sampling"])[:2]
            if d == 2:
                tests["d2c"] = make(
                    s["test_size"], base + 5, {2: 1}, s["sampling"], "central", True
                )[:2]
        else:
            for j, (name, inside) in enumerate((("seen", True), ("unseen", False))):
                seed = base + 10 + 2 * i + j
                tests[f"{name}-d{d}"] = make(
                    s["test_size"], seed, {d: 1}, s["sampling"], s["region"], inside
                )[:2]
    return train, tests


# ---------------------------------------------------------------- training
def accuracy(model, x, y) -> float:
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(x[i : i + 500]).argmax(1) for i in range(0, len(x), 500)])
    model.train()
    return float((pred == y).float().mean())


def train_one(s: dict, pos: str, seed: int, train, tests) -> dict:
    torch.manual_seed(seed)
    model = swin_from_config("tiny-cpu", num_classes=4, pos=pos, num_heads=tuple(s["num_heads"]))
    x, y, dist = train
    bs = s["batch_size"]
    # curriculum: the first ``curriculum_epochs`` epochs draw only the d = 1 images of the set
    pools = [
        torch.nonzero(dist == 1).flatten()
        if epoch < s["curriculum_epochs"]
        else torch.arange(len(y))
        for epoch in range(s["epochs"])
    ]
    steps = [len(pool) // bs for pool in pools]
    opt = torch.optim.AdamW(param_groups(model, s["weight_decay"]), lr=s["lr"], betas=(0.9, 0.999))
    total = sum(steps)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine(total, min(total, round(s["warmup_epochs"] * steps[0])))
    )
    gen = torch.Generator().manual_seed(seed)
    probe = next(k for k in tests if k.endswith("d2"))
    curve = []
    t0 = time.perf_counter()
    for epoch in range(s["epochs"]):
        perm = pools[epoch][torch.randperm(len(pools[epoch]), generator=gen)]
        loss_sum = 0.0
        for i in range(steps[epoch]):
            idx = perm[i * bs : (i + 1) * bs]
            loss = F.cross_entropy(model(x[idx]), y[idx], label_smoothing=s["label_smoothing"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), s["clip_grad"])
            opt.step()
            sched.step()
            loss_sum += loss.item()
        steps_per_epoch = steps[epoch]
        row = {"epoch": epoch + 1, "train_loss": round(loss_sum / steps_per_epoch, 4)}
        if (epoch + 1) % 5 == 0 or epoch + 1 == s["epochs"]:
            xt, yt = tests[probe]
            row[f"{probe}_first500"] = round(accuracy(model, xt[:500], yt[:500]), 3)
        curve.append(row)
    train_s = time.perf_counter() - t0
    acc = {k: round(accuracy(model, *v), 4) for k, v in tests.items()}
    return {"acc": acc, "train_s": round(train_s, 1), "curve": curve}


def git_state() -> dict:
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout

    # outputs of these pilots (results/pilots/out/) do not count as a dirty tree
    dirty = [
        line
        for line in git("status", "--porcelain").splitlines()
        if "results/pilots/out/" not in line
    ]
    return {"commit": git("rev-parse", "HEAD").strip(), "dirty": dirty}


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("bounds")
    t = sub.add_parser("train")
    t.add_argument("design", choices=sorted(DESIGNS))
    t.add_argument("--pos", nargs="+", default=["rel"])
    t.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.cmd == "bounds":
        OUT.mkdir(exist_ok=True)
        rows = [bounds(d, smp) for d in (1, 2, 3) for smp in ("label-first", "a-first")]
        rows += [
            bounds(d, "label-first", "left6", inside) for d in (1, 2) for inside in (True, False)
        ]
        rows += [bounds(2, smp, "central", True) for smp in ("label-first", "a-first")]
        for r in rows:
            print(json.dumps(r))
        (OUT / "bounds.json").write_text(json.dumps({"git": git_state(), "rows": rows}, indent=1))
        return
    s = settings(args.design)
    state = git_state()
    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    train, tests = data_for(s)
    data_s = time.perf_counter() - t0
    # the constant answer's accuracy on these very test images: the most frequent label's share
    const = {
        k: round(float(torch.bincount(v[1], minlength=4).max()) / len(v[1]), 4)
        for k, v in tests.items()
    }
    print(f"{args.design}: data {data_s:.0f}s, constant answer {const}", flush=True)
    for pos, seed in itertools.product(args.pos, args.seeds):
        r = train_one(s, pos, seed, train, tests)
        rec = {
            "design": args.design,
            "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in s.items()},
            "pos": pos,
            "seed": seed,
            **r,
            "constant_answer": const,
            "data_s": round(data_s, 1),
            "git": state,
            "host": {"cpu_count": os.cpu_count(), "threads": torch.get_num_threads(),
                     "platform": platform.platform(), "torch": torch.__version__,
                     "load_avg_at_end": os.getloadavg()},
        }  # fmt: skip
        with open(OUT / f"{args.design}.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(args.design, pos, seed, r["acc"], f"{r['train_s']:.0f}s", flush=True)


if __name__ == "__main__":
    main()
