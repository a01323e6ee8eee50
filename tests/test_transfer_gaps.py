"""Chapter 6's paired reading of a transfer: moved − reference in points, same seeds and images."""

import numpy as np
import pytest
import torch

from companion.experiments.bootstrap import Interval
from companion.experiments.evaluation import labels_text, pack_bits
from companion.experiments.predictions import correct_by_seed
from companion.experiments.results import find_results, load_results, load_transfer
from companion.experiments.transfer_gaps import (
    code_gap,
    moved_matrix,
    moved_minus_reference,
    points,
    reference_matrix,
    solved_flags,
    transfer_glance,
)
from companion.experiments.transfer_results import moved_correct

IMAGES = 200
#: Labels with a constant answer of 0.5 (label 0 on half the images).
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)
SEEDS = (0, 1, 2)


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
    """A results.json of an ablation on dataset ``d`` (runs listed in reverse seed order)."""
    runs = [
        {"dataset": "d", "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering, "img_size": size},
         "splits": {"test": {"n": IMAGES, "correct": pack_bits(torch.from_numpy(_bits(r, s)))}}}
        for pos, rate in rates.items()
        for s, r in reversed(_per_seed(rate, seeds).items())
    ]  # fmt: skip
    return {
        "runs": runs,
        "test_sets": {"d": {"test": {"labels": labels_text(torch.from_numpy(LABELS))}}},
    }


def _rows(rates: dict[tuple[str, str, str], tuple], seeds=SEEDS) -> list[dict]:
    """transfer.json rows: ``(pos, rendering, condition) -> (moved, fine-tuned)`` rates, each one
    rate or a rate per seed (rows listed in reverse seed order)."""
    rows = []
    for (pos, rendering, condition), (moved, tuned) in rates.items():
        moved, tuned = _per_seed(moved, seeds), _per_seed(tuned, seeds)
        for s in reversed(seeds):
            rows.append(
                {"dataset": "d", "pos": pos, "rendering": rendering, "size": 48,
                 "condition": condition, "seed": s, "variant": "swin",
                 "acc": moved[s], "acc_finetuned": tuned[s],
                 "correct": pack_bits(torch.from_numpy(_bits(moved[s], s))),
                 "correct_finetuned": pack_bits(torch.from_numpy(_bits(tuned[s], s)))}
            )  # fmt: skip
    return rows


def _cell(pos="rel", rendering="world", condition="window-kept", metric="acc"):
    return {"dataset": "d", "pos": pos, "rendering": rendering, "condition": condition,
            "metric": metric}  # fmt: skip


def test_moved_minus_reference_pairs_seeds_and_images():
    # Each seed's moved model gets exactly its own reference seed's images right: paired by seed
    # and image, every replicate's gap is 0, although the seeds' accuracies differ.
    rates = (0.6, 0.75, 0.9)
    references = {"world": _results({"rel": rates})}
    same = moved_minus_reference(_rows({("rel", "world", "window-kept"): (rates, 0.5)}),
                                 references, _cell(), 48)  # fmt: skip
    assert (same.estimate, same.low, same.high, same.p) == (0.0, 0.0, 0.0, 1.0)
    rows = _rows({("rel", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5)})
    gap = moved_minus_reference(rows, references, _cell(), 48)
    assert gap.estimate == pytest.approx(0.6 - 0.75)  # the difference of the two means
    assert gap.low <= gap.estimate <= gap.high < 0


def test_matrices_are_in_seed_order_and_cut_to_the_reference_images():
    references = {"world": _results({"rel": (0.6, 0.75, 0.9)})}
    seeds, reference, labels = reference_matrix(references, _cell())
    assert seeds == [0, 1, 2] and reference.shape == (3, IMAGES) and (labels == LABELS).all()
    assert reference.mean(1) == pytest.approx([0.6, 0.75, 0.9])
    rows = _rows({("rel", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5)})
    seeds, moved = moved_matrix(rows, _cell(), 48, 150)
    assert seeds == [0, 1, 2] and moved.shape == (3, 150) and moved.dtype == bool
    with pytest.raises(ValueError, match="images must be at most the 200"):
        moved_matrix(rows, _cell(), 48, 300)


def test_identical_cells_give_a_zero_width_interval_at_zero():
    rows = _rows({("rel", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5),
                  ("abs", "world", "window-kept"): ((0.5, 0.6, 0.7), 0.5)})  # fmt: skip
    gap = code_gap(rows, _cell(), _cell(pos="abs"), 48, IMAGES)
    assert (gap.estimate, gap.low, gap.high, gap.p) == (0.0, 0.0, 0.0, 1.0)


def test_code_gap_is_the_paired_difference_of_the_two_cells():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("abs", "world", "window-kept"): (0.6, 0.9)})  # fmt: skip
    gap = code_gap(rows, _cell(), _cell(pos="abs"), 48, IMAGES)
    # rel's right images include abs's on every seed: each replicate's gap is a share of 40 images
    assert gap.estimate == pytest.approx(0.2) and 0 < gap.low < 0.2 < gap.high
    assert gap.p == pytest.approx(gap.floor)
    tuned = code_gap(rows, _cell(metric="acc_finetuned"), _cell(pos="abs", metric="acc_finetuned"),
                     48, IMAGES)  # fmt: skip
    assert tuned.estimate == 0.0


def test_differing_seed_sets_raise_naming_both_sets():
    references = {"world": _results({"rel": 0.9}, seeds=(0, 1))}
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("abs", "world", "window-kept"): (0.8, 0.9)})  # fmt: skip
    with pytest.raises(ValueError, match=r"moved and reference must hold the same seeds .*"
                                         r"got \[0, 1, 2\] and \[0, 1\]"):  # fmt: skip
        moved_minus_reference(rows, references, _cell(), 48)
    fewer = [r for r in rows if not (r["pos"] == "abs" and r["seed"] == 2)]
    with pytest.raises(ValueError, match=r"a and b must hold the same seeds .*"
                                         r"got \[0, 1, 2\] and \[0, 1\]"):  # fmt: skip
        code_gap(fewer, _cell(), _cell(pos="abs"), 48, IMAGES)


def test_code_gap_refuses_cells_on_other_test_images():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("rel", "scaled", "window-kept"): (0.8, 0.9)})  # fmt: skip
    with pytest.raises(ValueError, match=r"must share the rendering .* got 'world' and 'scaled'"):
        code_gap(rows, _cell(), _cell(rendering="scaled"), 48, IMAGES)
    with pytest.raises(ValueError, match=r"must share the dataset .* got 'd' and 'e'"):
        code_gap(rows, _cell(), {**_cell(), "dataset": "e"}, 48, IMAGES)


def test_points_prints_signed_points_and_a_p_at_its_floor_as_a_bound():
    interval = Interval(0.123, 0.045, 0.201, 0.012, 1 / 4001)
    assert points(interval) == "+12.3 [+4.5, +20.1]"
    assert points(interval, p_against_zero=True) == "+12.3 [+4.5, +20.1] (p = 0.012)"
    at_floor = Interval(-0.2, -0.3, -0.1, 1 / 4001, 1 / 4001)
    assert points(at_floor, p_against_zero=True) == "-20.0 [-30.0, -10.0] (p < 0.00025)"


def test_solved_flags_compare_each_seed_with_the_threshold():
    correct = np.stack([_bits(r, s) for s, r in enumerate((0.5, 0.8, 0.95))])
    assert solved_flags(correct, 0.8).tolist() == [False, True, True]


def test_glance_shows_a_split_cell_as_a_count_and_a_solved_cell_as_a_number():
    before = _results({"rel": 1.0, "abs": (1.0, 1.0, 0.6)}, "scaled", 32)
    references = {"world": _results({"rel": 0.95})}
    rows = _rows({("rel", "world", "window-kept"): ((0.9, 0.9, 0.5), 0.95),
                  ("rel", "world", "window-grown-geometric"): (0.6, 0.7),
                  ("abs", "world", "window-kept"): (0.55, 0.6),
                  ("abs", "world", "window-grown"): (0.5, (0.9, 0.5, 0.5))})  # fmt: skip
    table = transfer_glance(before, rows, references, "d", ["rel", "abs"], 48, ["world"],
                            ["window-kept", "window-grown"], 0.8)  # fmt: skip
    lines = table.splitlines()
    assert lines[0] == ("| code | 32 px | world, kept | world, kept, ft | world, grown | "
                        "world, grown, ft | world, ref |")  # fmt: skip
    assert lines[2] == ("| `rel` | +50.0 | 2/3 solved: +40.0 · 1 other: +0.0 | +45.0 | +10.0 | "
                        "+20.0 | +45.0 |")  # fmt: skip
    # abs split at 32 px: every moved entry reads the seeds that solved there apart from the other
    assert lines[3] == ("| `abs` | 2/3 solved: +50.0 · 1 other: +10.0 | 2 solved at 32 px: +5.0 · "
                        "1 not at 32 px: +5.0 | 2 solved at 32 px: +10.0 · 1 not at 32 px: +10.0 | "
                        "2 solved at 32 px: +0.0 · 1 not at 32 px: +0.0 | "
                        "2 solved at 32 px: (1/2 solved: +40.0 · 1 other: +0.0) · "
                        "1 not at 32 px: +0.0 | — |")  # fmt: skip
    assert lines[-1].startswith("*`d`: lift over the constant answer (points)")
    assert "accuracy ≥ 80 %" in lines[-1]


def test_the_committed_transfer_records_read_end_to_end():
    folder = find_results("cpu-transfer")
    rows = load_transfer(folder, load_results(folder))["rows"]
    references = {"world": load_results(find_results("cpu-transfer-48-world"))}
    cell = {"dataset": "relation", "pos": "rel", "rendering": "world",
            "condition": "window-kept", "metric": "acc"}  # fmt: skip
    gap = moved_minus_reference(rows, references, cell, 48)
    assert -1 <= gap.low <= gap.estimate <= gap.high <= 1
    reference = correct_by_seed(references["world"], "relation:rel", "test")
    moved = moved_correct(rows, "relation", "rel", "world", 48, "window-kept")
    n = len(next(iter(reference.values())))
    direct = np.mean([moved[s][:n].mean() for s in moved]) - np.mean(
        [c.mean() for c in reference.values()]
    )
    assert gap.estimate == pytest.approx(direct)
