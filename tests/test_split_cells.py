"""Chapter 5's split-by-split reading: counts for split cells, bootstrap intervals, Holm."""

from pathlib import Path

import numpy as np
import pytest
import torch
from test_predictions import table_rows

from companion.experiments.chapter5 import (
    beside_their_swin,
    encoding_glance,
    gaps_lines,
    lift_lines,
    load_results,
    split_rows,
    variant_pairs,
)
from companion.experiments.evaluation import labels_text, pack_bits
from companion.experiments.predictions import (
    accuracy_table,
    cells_of,
    is_split_cell,
    load_predictions,
    with_counts,
)
from companion.experiments.results import find_results
from companion.figures.training import plot_seed_dots

ROOT = Path(__file__).resolve().parents[1]
N = 300
LABELS = np.random.default_rng(0).choice(4, N, p=[0.4, 0.2, 0.2, 0.2])
RULE = {"split": "seen", "threshold": 0.9}


def run(pos, seed, seen, unseen, variant="swin"):
    rng = np.random.default_rng(seed * 7 + len(pos) + len(variant))
    splits = {}
    for name, p in (("seen", seen), ("unseen", unseen)):
        flags = torch.from_numpy(rng.random(N) < p)
        splits[name] = {"n": N, "correct": pack_bits(flags)}
    return {"dataset": "t", "pos": pos, "variant": variant, "seed": seed, "splits": splits}


@pytest.fixture
def results():
    labels = labels_text(torch.from_numpy(LABELS))
    constant = float(np.bincount(LABELS).max() / N)
    kept = {"labels": labels, "constant_answer": constant}
    runs = [run("rel", s, 0.98, 0.97) for s in range(10)]
    runs += [run("abs", s, 0.98 if s < 6 else 0.3, 0.2) for s in range(10)]
    runs += [run("none", s, constant, constant) for s in range(10)]
    runs += [run("none", s, constant, constant, "pool-merge") for s in range(5)]
    found = {"runs": runs, "test_sets": {"t": {"seen": kept, "unseen": kept}}}
    return with_counts(found, table_rows(found))


def test_cells_come_main_grid_first_then_variants(results):
    assert cells_of(results, "t") == ["t:rel", "t:abs", "t:none", "t:none:pool-merge"]
    assert cells_of(results, "t", variants=False) == ["t:rel", "t:abs", "t:none"]


def test_each_variant_stands_beside_the_swin_it_changes(results):
    assert variant_pairs(results, "t") == [("t:none:pool-merge", "t:none")]
    assert beside_their_swin(results, "t") == ["t:none", "t:none:pool-merge"]


def test_a_split_cell_is_read_as_a_count_and_its_gaps_get_no_interval(results):
    assert is_split_cell(results, "t:abs", RULE) and not is_split_cell(results, "t:rel", RULE)
    table = accuracy_table(results, "t", ["seen", "unseen"], RULE)
    abs_line = next(line for line in table.splitlines() if line.startswith("| `abs`"))
    assert "(split)" in abs_line and "6 of 10" in abs_line
    lines = gaps_lines(results, [("t:rel", "t:abs"), ("t:rel", "t:none")], "seen", RULE)
    assert "rel − abs" in lines and "a split cell: read the counts" in lines
    assert "over the 1 intervals printed" in lines.splitlines()[0]


def test_every_interval_stays_inside_the_attainable_range(results):
    for row in split_rows(results, "t", "unseen"):
        assert 0.0 <= row["low"] <= row["mean"] <= row["high"] <= 1.0
        assert len(row["values"]) == row["n"] == len(row["seeds"])


def test_a_variant_is_compared_on_the_seeds_it_has(results):
    lines = gaps_lines(results, [("t:none:pool-merge", "t:none")], "seen", RULE)
    line = next(x for x in lines.splitlines() if x.startswith("none:pool-merge − none"))
    low, high = (float(v) for v in line.split("[")[1].split("]")[0].split(","))
    assert low <= 0.0 <= high  # both score the same rate on the same seeds


def test_lift_lines_read_each_split_against_its_own_constant_answer(results):
    text = lift_lines(results, "t", "seen", "unseen", ["t:rel", "t:abs"])
    rel, abs_ = text.splitlines()[1:]
    assert rel.startswith("rel") and abs_.startswith("abs")
    change = float(abs_.split("change")[1].split("[")[0])
    assert change < -30  # abs loses what it had on the seen split


def test_seed_dots_draw_the_rows_own_interval_and_name_the_level(results):
    rows = split_rows(results, "t", "seen") + split_rows(results, "t", "unseen")
    fig = plot_seed_dots(rows, {"seen": 0.4, "unseen": 0.4}, level="constant answer",
                         panel="split")  # fmt: skip
    assert [ax.get_title() for ax in fig.axes[:2]] == [
        "seen (dotted: constant answer)", "unseen (dotted: constant answer)"]  # fmt: skip


def test_gaps_from_several_datasets_name_their_dataset(results):
    other = [{**r, "dataset": "u"} for r in results["runs"]]
    both = {"runs": results["runs"] + other,
            "test_sets": {**results["test_sets"], "u": results["test_sets"]["t"]}}  # fmt: skip
    lines = gaps_lines(both, [("t:rel", "t:none"), ("u:rel", "u:none")], "seen", RULE)
    assert "t: rel − none" in lines and "u: rel − none" in lines


def test_a_p_value_at_its_floor_prints_as_a_bound_after_holm(results):
    lines = gaps_lines(results, [("t:rel", "t:none"), ("t:none:pool-merge", "t:none")], "seen",
                       RULE)  # fmt: skip
    rel = next(x for x in lines.splitlines() if x.startswith("rel − none"))
    assert rel.endswith("p_Holm < 0.0005 *")  # 2 x 1/4001: every replicate above 0
    pool = next(x for x in lines.splitlines() if x.startswith("none:pool-merge"))
    assert "p_Holm = " in pool and "<" not in pool


def test_the_glance_reads_each_split_against_its_constant_answer_and_counts_split_cells(results):
    table = encoding_glance([(results, "t", ["seen", "unseen"], RULE)], pos=("none", "abs", "rel"))
    head, _, seen, unseen, _, note = table.splitlines()
    assert head == "| task, split | `none` | `abs` | `rel` |"
    constant = 100 * float(np.bincount(LABELS).max() / N)
    cells = [c.strip() for c in seen.split("|")[2:-1]]
    assert abs(float(cells[0])) < 3  # none scores about the constant answer
    assert cells[1].startswith("6/10 solved: ") and "· others: " in cells[1]
    assert len(cells[1].split("· others: ")[1].split(", ")) == 4  # each unsolved seed, not a mean
    assert float(cells[2]) == pytest.approx(98 - constant, abs=1.5)
    assert "solved: `t`: `seen` ≥ 90 %" in note
    assert unseen.startswith("| `t` `unseen` | ")


def test_the_glance_of_the_committed_results_matches_the_chapter_s_lifts():
    folder = find_results("cpu-far-relation", search=[ROOT / "results"])
    found = load_results(folder)
    rule = load_predictions(folder)["solved"]["far-relation-heldout"]
    table = encoding_glance([(found, "far-relation-heldout", ["seen", "unseen"], rule)])
    lifts = lift_lines(found, "far-relation-heldout", "seen", "unseen",
                       [f"far-relation-heldout:{p}" for p in ("none", "abs")])  # fmt: skip
    none, abs_ = (line.split()[1:3] for line in lifts.splitlines()[1:])
    seen = table.splitlines()[2].split("|")
    assert seen[2].strip() == none[0] and seen[3].strip() == abs_[0]
    assert seen[4].strip().startswith("9/10 solved: ")
