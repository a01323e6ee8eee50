"""The interior hold-out read by placements: the unit, the bootstrap over it, and the geometry."""

import numpy as np
import torch

from companion.experiments.chapter5 import pair_line, placement_interval, placements
from companion.experiments.evaluation import labels_text, pack_bits

N = 200
IDS = np.repeat(np.arange(4), N // 4)  # four placements of 50 images each


def _results(rates_by_seed: list[list[float]]) -> dict:
    """One cell ``task:rel`` on split ``test``; seed s gets placement p's images right at
    ``rates_by_seed[s][p]`` (the first ones of each placement)."""
    runs = []
    for s, rates in enumerate(rates_by_seed):
        hits = np.zeros(N, dtype=bool)
        for p, rate in enumerate(rates):
            where = np.flatnonzero(np.equal(IDS, p))
            hits[where[: round(rate * len(where))]] = True
        bits = pack_bits(torch.from_numpy(hits))
        runs.append({"dataset": "task", "pos": "rel", "variant": "swin", "seed": s,
                     "splits": {"test": {"n": N, "correct": bits}}})  # fmt: skip
    labels = labels_text(torch.zeros(N, dtype=torch.long))
    return {"runs": runs, "test_sets": {"task": {"test": {"labels": labels}}}}


def test_a_pair_is_named_by_the_row_or_column_it_lies_along():
    assert pair_line(((2, 3), (2, 5))) == "row 2"
    assert pair_line(((3, 4), (5, 4))) == "column 4"


def test_the_placement_bootstrap_is_wide_when_one_placement_carries_the_loss():
    uniform = _results([[0.9] * 4] * 3)
    one_bad = _results([[1.0, 1.0, 1.0, 0.6]] * 3)
    est, low, high = placement_interval(uniform, [(1.0, "task:rel", "test", IDS)], 500)
    assert (est, low, high) == (0.9, 0.9, 0.9)
    est, low, high = placement_interval(one_bad, [(1.0, "task:rel", "test", IDS)], 500)
    assert est == 0.9 and high - low > 0.1  # 1000 images would give a far narrower interval


def test_the_interior_splits_differ_in_the_windows_lines_not_only_in_being_seen():
    seen = {pair_line(k) for k in placements("far-relation-interior", "seen", 1000)[1]}
    unseen = {pair_line(k) for k in placements("far-relation-interior", "unseen", 1000)[1]}
    assert seen == {"row 2", "row 5", "column 2", "column 5"}  # the window's edge lines
    assert unseen == {"row 3", "row 4", "column 3", "column 4"}  # through its centre


def test_a_lift_gap_whose_positive_control_failed_is_not_readable_by_placements_either():
    from companion.experiments.chapter5 import (
        find_results,
        load_predictions,
        load_results,
        placement_readings,
    )

    folder = find_results("interior-holdout")
    results, plan = load_results(folder), load_predictions(folder)
    task, ids, keys = "far-relation-interior", {}, {}
    for split in ("seen", "unseen"):
        ids[split], keys[split] = placements(task, split, results["test_sets"][task][split]["n"])
    text = placement_readings(results, plan, ids, keys)
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  I")}
    assert lines["I8"].endswith("not readable: abs failed its positive control I5")
    assert lines["I7"].endswith("above -5 points: no")  # its interval reaches past -5
    assert lines["I10"].endswith("below 0 points: yes")
