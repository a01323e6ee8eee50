"""Chapter 6's paired reading of a transfer: moved − reference in points, same seeds and images."""

import numpy as np
import pytest
import torch

from companion.experiments.bootstrap import Interval
from companion.experiments.chapter6 import kind_gap, points
from companion.experiments.evaluation import labels_text, pack_bits, unpack_bits
from companion.experiments.far_transfer import Cell, FarTransfer
from companion.experiments.predictions import correct_by_seed
from companion.experiments.results import find_results, load_results, load_transfer

IMAGES = 200
#: Labels with a constant answer of 0.5 (label 0 on half the images).
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)
SEEDS = (0, 1, 2)
D = "far-relation"


def _bits(rate: float, seed: int) -> np.ndarray:
    """A fixed pattern of ``rate * IMAGES`` right answers (different images per seed)."""
    hits = np.zeros(IMAGES, dtype=bool)
    hits[: round(rate * IMAGES)] = True
    return np.roll(hits, 7 * seed)


def _per_seed(rate, seeds):
    """``{seed: rate}`` from one rate for every seed or a rate per seed."""
    return {
        s: r
        for s, r in zip(
            seeds, rate if isinstance(rate, tuple) else [rate] * len(seeds), strict=True
        )
    }


def _results(rates: dict[str, float | tuple], rendering="world", size=48, seeds=SEEDS) -> dict:
    """A results.json of an ablation on far-relation (runs listed in reverse seed order)."""
    runs = [
        {"dataset": D, "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering, "img_size": size},
         "splits": {"test": {"n": IMAGES, "correct": pack_bits(torch.from_numpy(_bits(r, s)))}}}
        for pos, rate in rates.items()
        for s, r in reversed(_per_seed(rate, seeds).items())
    ]  # fmt: skip
    return {
        "runs": runs,
        "test_sets": {D: {"test": {"labels": labels_text(torch.from_numpy(LABELS))}}},
    }


def _rows(rates: dict[tuple[str, str, str], tuple], seeds=SEEDS) -> list[dict]:
    """transfer.json rows: ``(pos, rendering, condition) -> (moved, fine-tuned)`` rates, each one
    rate or a rate per seed (rows listed in reverse seed order)."""
    rows = []
    for (pos, rendering, condition), (moved, tuned) in rates.items():
        moved, tuned = _per_seed(moved, seeds), _per_seed(tuned, seeds)
        for s in reversed(seeds):
            rows.append(
                {"dataset": D, "pos": pos, "rendering": rendering, "size": 48,
                 "condition": condition, "seed": s, "variant": "swin",
                 "acc": moved[s], "acc_finetuned": tuned[s],
                 "correct": pack_bits(torch.from_numpy(_bits(moved[s], s))),
                 "correct_finetuned": pack_bits(torch.from_numpy(_bits(tuned[s], s)))}
            )  # fmt: skip
    return rows


def _cell(pos="rel", rendering="world", condition="window-kept", metric="acc"):
    return Cell(pos, rendering, condition, metric)


def _gap(kind: str, rows: list[dict], cells: list[tuple], references=None):
    references = references or {"world": _results({"rel": 0.9})}
    far = FarTransfer({}, rows, references, {"size": 48}, (), (), {})
    return kind_gap(far, kind, cells)[0]


def test_moved_minus_reference_pairs_seeds_and_images():
    # Each seed's moved model gets exactly its own reference seed's images right: paired by seed
    # and image, every replicate's gap is 0, although the seeds' accuracies differ.
    rates = (0.6, 0.75, 0.9)
    references = {"world": _results({"rel": rates})}
    rows = _rows({("rel", "world", "window-kept"): (rates, 0.5)})
    same = _gap("moved-gap", rows, [_cell()], references)
    assert (same.estimate, same.low, same.high, same.p) == (0.0, 0.0, 0.0, 1.0)
    rows = _rows({("rel", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5)})
    gap = _gap("moved-gap", rows, [_cell()], references)
    assert gap.estimate == pytest.approx(0.6 - 0.75)  # the difference of the two means
    assert gap.low <= gap.estimate <= gap.high < 0


def test_identical_cells_give_a_zero_width_interval_at_zero():
    rows = _rows({("rel", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5),
                  ("abs", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5)})  # fmt: skip
    gap = _gap("code-gap", rows, [_cell(), _cell(pos="abs")])
    assert (gap.estimate, gap.low, gap.high, gap.p) == (0.0, 0.0, 0.0, 1.0)


def test_code_gap_is_the_paired_difference_of_the_two_cells():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("abs", "world", "window-kept"): (0.6, 0.9)})  # fmt: skip
    gap = _gap("code-gap", rows, [_cell(), _cell(pos="abs")])
    # rel's right images include abs's on every seed: each replicate's gap is a share of 40 images
    assert gap.estimate == pytest.approx(0.2) and 0 < gap.low < 0.2 < gap.high
    assert gap.p == pytest.approx(gap.floor)
    tuned = _gap("code-gap", rows, [_cell(metric="acc_finetuned"),
                                    _cell(pos="abs", metric="acc_finetuned")])  # fmt: skip
    assert tuned.estimate == 0.0


def test_code_gap_refuses_cells_on_other_test_images():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("rel", "scaled", "window-kept"): (0.8, 0.9)})  # fmt: skip
    with pytest.raises(ValueError, match=r"one rendering .*'world'.*'scaled'"):
        _gap("code-gap", rows, [_cell(), _cell(rendering="scaled")])


def test_points_prints_signed_points_and_the_interval():
    assert points(Interval(0.123, 0.045, 0.201, 0.012, 1 / 4001)) == "+12.3 [+4.5, +20.1]"


def test_the_committed_transfer_records_read_end_to_end():
    folder = find_results("cpu-transfer-far")
    rows = load_transfer(folder, load_results(folder))["rows"]
    references = {"world": load_results(find_results("cpu-transfer-far-48-world"))}
    gap = _gap("moved-gap", rows, [_cell()], references)
    assert -1 <= gap.low <= gap.estimate <= gap.high <= 1
    reference = correct_by_seed(references["world"], f"{D}:rel", "test")
    moved = [r["correct"] for r in rows if (r["dataset"], r["pos"], r["rendering"], r["size"],
             r["condition"]) == (D, "rel", "world", 48, "window-kept")]  # fmt: skip
    n = len(next(iter(reference.values())))
    direct = np.mean([unpack_bits(bits, n).mean() for bits in moved]) - np.mean(
        [c.mean() for c in reference.values()]
    )
    assert gap.estimate == pytest.approx(direct)


def test_a_moved_cell_missing_or_read_by_an_unknown_metric_is_named():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9)})
    with pytest.raises(ValueError, match="have no seed to read on both sides"):
        _gap("moved-gap", rows, [_cell(condition="window-grown")])
    with pytest.raises(ValueError, match="metric must be one of"):
        _gap("moved-gap", rows, [_cell(metric="loss")])
