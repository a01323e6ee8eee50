"""Predictions written before a run are read from their file and checked by their own rules."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.experiments import chapter5
from companion.experiments.chapter5 import (
    predictions_list,
    predictions_table,
    split_seed_readings,
)
from companion.experiments.evaluation import labels_text, pack_bits, unpack_bits
from companion.experiments.predictions import (
    check_prediction,
    load_predictions,
    per_seed,
    prediction_interval,
    solved_seeds,
    split_cells,
    with_counts,
)
from companion.experiments.records import load_table

RESULTS = Path(__file__).resolve().parents[1] / "results"

N = 400
LABELS = np.random.default_rng(0).choice(4, N, p=[0.4, 0.2, 0.2, 0.2])
SOLVED = {"task": {"split": "test", "threshold": 0.9}}


def run(pos, seed, accuracy, variant="swin", split="test"):
    rng = np.random.default_rng(seed + 100 * len(pos))
    correct = torch.from_numpy(rng.random(N) < accuracy)
    return {"dataset": "task", "pos": pos, "variant": variant, "seed": seed,
            "splits": {split: {"n": N, "correct": pack_bits(correct)}}}  # fmt: skip


def table_rows(results):
    """The record table's rows of made-up ``results``: each run's ``correct / total`` on each
    split counted from its bits, as ``companion.experiments.records`` writes them."""
    return [{"task": r["dataset"], "code": r["pos"], "variant": r["variant"], "seed": r["seed"],
             "split": split, "correct": int(unpack_bits(found["correct"], found["n"]).sum()),
             "total": found["n"],
             "bits_sha256": hashlib.sha256(found["correct"].encode("ascii")).hexdigest()}
            for r in results["runs"] for split, found in r["splits"].items()]  # fmt: skip


def results(*runs):
    """Made-up results with their counts from the record table, as a chapter loads them."""
    constant = float(np.bincount(LABELS).max() / N)
    found = {"runs": list(runs), "test_sets": {"task": {"test": {"labels": labels_text(
        torch.from_numpy(LABELS)), "constant_answer": constant}}}}  # fmt: skip
    return with_counts(found, table_rows(found))


def test_solved_follows_the_record_tables_correct_over_total_not_the_bits():
    found = results(*(run("rel", s, 0.99) for s in range(4)))  # by the bits, every seed solved
    rows = table_rows(found)
    rows[0]["correct"] = 10  # the table says seed 0 got 10 of 400 right
    counted = with_counts(found, rows)
    assert solved_seeds(counted, "task:rel", SOLVED["task"]) == {
        0: False,
        1: True,
        2: True,
        3: True,
    }
    p = {"kind": "count", "cell": "task:rel", "expect": [4, 4]}
    assert check_prediction(counted, p, SOLVED)[0].startswith("solved 3 of 4")
    missing = with_counts(found, rows[1:])  # a run the table does not hold is refused, not counted
    bare = {**found, "runs": [{k: v for k, v in r.items() if k != "table"} for r in found["runs"]]}
    for uncounted in (missing, bare):
        with pytest.raises(ValueError, match="'task:rel' has no count from the record table"):
            solved_seeds(uncounted, "task:rel", SOLVED["task"])


def test_a_chapter_reads_each_runs_counts_from_the_record_table():
    found = chapter5.load_results(RESULTS / "cpu-ablation")
    read = {(r["dataset"], r["pos"], r["variant"], r["seed"], split): value
            for r in found["runs"] for split, value in r["table"].items()}  # fmt: skip
    held = {(r["task"], r["code"], r["variant"], r["seed"], r["split"]): r["correct"] / r["total"]
            for r in load_table(RESULTS) if r["experiment"] == "cpu-ablation"}  # fmt: skip
    assert read == held


def test_a_count_holds_when_the_solved_seeds_fall_in_the_expected_range():
    found = results(*(run("rel", s, 0.99 if s < 7 else 0.3) for s in range(10)))
    p = {"kind": "count", "cell": "task:rel", "expect": [6, 10]}
    measured, held = check_prediction(found, p, SOLVED)
    assert held and measured.startswith("solved 7 of 10")
    assert not check_prediction(found, {**p, "expect": [8, 10]}, SOLVED)[1]


def test_a_gap_against_the_constant_answer_reads_the_same_images():
    mode = np.bincount(LABELS).argmax()
    constant = {"dataset": "task", "pos": "none", "variant": "swin", "splits": {"test": {
        "n": N, "correct": pack_bits(torch.from_numpy(mode == LABELS))}}}  # fmt: skip
    found = results(*({**constant, "seed": s} for s in range(5)))
    p = {"kind": "gap", "cell": "task:none", "against": "constant", "split": "test",
         "expect": "within 0.05"}  # fmt: skip
    assert check_prediction(found, p, SOLVED)[1]
    assert not check_prediction(found, {**p, "expect": "above 0.0"}, SOLVED)[1]


def test_a_variant_is_paired_with_its_swin_on_the_seeds_both_have():
    found = results(*(run("rel", s, 0.95) for s in range(10)),
                    *(run("rel", s, 0.3, "pool-merge") for s in range(5)))  # fmt: skip
    p = {"kind": "gap", "cell": "task:rel:pool-merge", "against": "task:rel", "split": "test",
         "expect": "below -0.5"}  # fmt: skip
    measured, held = check_prediction(found, p, SOLVED)
    assert held and measured.startswith("-0.6")


def test_a_count_gap_needs_fishers_test_not_only_the_direction():
    found = results(*(run("rel", s, 0.99) for s in range(10)),
                    *(run("abs", s, 0.99 if s < 7 else 0.2) for s in range(10)),
                    *(run("none", s, 0.2) for s in range(10)))  # fmt: skip
    p = {"kind": "count-gap", "cell": "task:rel", "against": "task:abs", "expect": "more"}
    assert not check_prediction(found, p, SOLVED)[1]  # 10 of 10 against 7 of 10: p = 0.21
    assert check_prediction(found, {**p, "against": "task:none"}, SOLVED)[1]


def test_a_gap_against_a_comparator_whose_positive_control_failed_is_not_readable():
    found = results(*(run("rel", s, 0.99) for s in range(10)),
                    *(run("abs", s, 0.99 if s < 2 else 0.3) for s in range(10)))  # fmt: skip
    plan = {"solved": SOLVED, "predictions": [
        {"id": "C", "text": "abs solves", "kind": "count", "cell": "task:abs", "expect": [8, 10]},
        {"id": "G", "text": "rel beats abs", "kind": "gap", "cell": "task:rel",
         "against": "task:abs", "split": "test", "expect": "above 0.2"},
    ]}  # fmt: skip
    assert check_prediction(found, plan["predictions"][1], SOLVED)[1]  # its interval alone holds
    row = predictions_table(found, plan).splitlines()[-1]
    assert row.endswith("| not readable |")
    assert "not readable: abs failed its positive control C" in row
    plan["predictions"][0]["expect"] = [2, 10]  # the control held: the gap is read
    assert predictions_table(found, plan).splitlines()[-1].endswith("| yes |")


def test_a_prediction_whose_named_control_failed_is_not_readable():
    found = results(*(run("abs", s, 0.99 if s < 2 else 0.3) for s in range(10)))
    plan = {"solved": SOLVED, "predictions": [
        {"id": "C1", "text": "abs solves (the control for G1)", "kind": "count", "cell": "task:abs",
         "expect": [8, 10]},
        {"id": "G1", "text": "abs beats the constant answer", "kind": "gap", "cell": "task:abs",
         "against": "constant", "split": "test", "expect": "above 0.0"},
    ]}  # fmt: skip
    row = predictions_table(found, plan).splitlines()[-1]
    assert row.endswith("| not readable |")
    assert "not readable: abs failed its positive control C1" in row
    plan["predictions"][0]["text"] = "abs solves"  # names no control: G1 is read
    assert predictions_table(found, plan).splitlines()[-1].endswith("| **no** |")


def test_a_gaps_seed_by_seed_line_keeps_only_the_seeds_where_its_baseline_solved():
    found = results(*(run("rel", s, 0.99 if s != 5 else 0.5) for s in range(8)),
                    *(run("abs", s, 0.99 if s in (1, 5) else 0.3) for s in range(8)))  # fmt: skip
    plan = {"solved": SOLVED, "predictions": [
        {"id": "G", "text": "rel beats abs", "kind": "gap", "cell": "task:rel",
         "against": "task:abs", "split": "test", "expect": "above 0.2"}]}  # fmt: skip
    lines = split_seed_readings(found, plan).splitlines()
    seeds = next(line for line in lines if line.strip().startswith("seed"))
    assert seeds.split()[1:] == ["1", "5"]
    assert "the 1 seed where both solved" in "\n".join(lines)  # seed 1: both solved


def test_a_count_on_fewer_seeds_is_read_as_the_same_share():
    found = results(*(run("rel", s, 0.99 if s < 9 else 0.3) for s in range(10)))
    p = {"id": "C", "text": "rel solves", "kind": "count", "cell": "task:rel", "expect": [9, 10]}
    assert check_prediction(found, p, SOLVED, [0, 1, 2, 3, 4])[1]  # 5 of 5 as 10 of 10
    assert not check_prediction(found, p, SOLVED, [5, 6, 7, 8, 9])[1]  # 4 of 5 as 8 of 10
    assert check_prediction(found, p, SOLVED, [5, 6, 7, 8, 9])[0].startswith("solved 4 of 5")


def test_a_lift_gap_compares_two_splits_each_against_its_own_constant_answer():
    runs = []
    for s in range(6):
        seen, unseen = run("abs", s, 0.95), run("abs", s + 50, 0.3)
        seen["splits"]["unseen"] = unseen["splits"]["test"]
        runs.append(seen)
    found = results(*runs)
    found["test_sets"]["task"]["unseen"] = found["test_sets"]["task"]["test"]
    p = {"kind": "lift-gap", "cell": "task:abs", "first": "test", "second": "unseen",
         "expect": "below -0.3"}  # fmt: skip
    assert check_prediction(found, p, SOLVED)[1]


def test_predictions_are_read_from_the_one_json_block_of_the_file(tmp_path, publish_file):
    block = {
        "solved": SOLVED,
        "predictions": [
            {
                "id": "P1",
                "text": "rel solves",
                "kind": "count",
                "cell": "task:rel",
                "expect": [1, 2],
            }
        ],
    }
    publish_file(
        tmp_path, "predictions.md", f"# Why\n\nprose\n\n```json\n{json.dumps(block)}\n```\n"
    )
    loaded = load_predictions(tmp_path)
    assert loaded == block
    table = predictions_table(results(run("rel", 0, 0.99), run("rel", 1, 0.1)), loaded)
    assert "| P1 | rel solves | 1-2 seeds | solved 1 of 2" in table and "| yes |" in table
    publish_file(tmp_path, "predictions.md", "no block")
    with pytest.raises(ValueError, match="exactly one ```json block, found 0"):
        load_predictions(tmp_path)
    block["predictions"][0]["kind"] = "vibes"
    publish_file(tmp_path, "predictions.md", f"```json\n{json.dumps(block)}\n```")
    with pytest.raises(ValueError, match="kind must be one of"):
        load_predictions(tmp_path)


def test_a_chapter_shows_the_predictions_it_names_before_and_after_the_run():
    block = {"solved": SOLVED, "predictions": [
        {"id": "P1", "text": "rel solves", "kind": "count", "cell": "task:rel", "expect": [1, 2]},
        {"id": "P2", "text": "none fails", "kind": "count", "cell": "task:none", "expect": [0, 0]},
    ]}  # fmt: skip
    assert predictions_list(block, ["P2"]).splitlines()[2] == "| P2 | none fails | 0-0 seeds |"
    found = results(run("rel", 0, 0.99), run("none", 0, 0.3))
    table = predictions_table(found, block, ["P2"])
    assert "P1" not in table and "| P2 | none fails | 0-0 seeds | solved 0 of 1" in table
    with pytest.raises(ValueError, match=r"ids: \['P9'\] are not predictions"):
        predictions_list(block, ["P9"])


def lifted(accuracies):
    """``task:abs``: seed ``s`` scores ``accuracies[s]`` on ``test`` and 0.3 on ``unseen``."""
    runs = []
    for s, accuracy in enumerate(accuracies):
        seen, unseen = run("abs", s, accuracy), run("abs", s + 50, 0.3)
        seen["splits"]["unseen"] = unseen["splits"]["test"]
        runs.append(seen)
    found = results(*runs)
    found["test_sets"]["task"]["unseen"] = found["test_sets"]["task"]["test"]
    return found


LIFT = {"id": "L1", "text": "abs loses its lift", "kind": "lift-gap", "cell": "task:abs",
        "first": "test", "second": "unseen", "expect": "below -0.3"}  # fmt: skip


def test_a_p_value_is_printed_only_beside_a_threshold_it_tests():
    found = lifted([0.95] * 6)
    measured, _ = check_prediction(found, LIFT, SOLVED)
    assert "p" not in measured.split("]")[1]  # it tests 0, not the prediction's -0.3
    measured, _ = check_prediction(found, {**LIFT, "expect": "below 0.0"}, SOLVED)
    assert measured.endswith("(against 0: p < 0.00025)")  # at its floor: a bound
    within = {"kind": "gap", "cell": "task:abs", "against": "constant", "split": "test",
              "expect": "within 0.05"}  # fmt: skip
    assert "p" not in check_prediction(found, within, SOLVED)[0].split("]")[1]


def test_a_prediction_on_a_split_cell_is_also_read_seed_by_seed_and_on_the_solved_seeds():
    accuracies = [0.95, 0.97, 0.96, 0.98, 0.95, 0.40]  # seed 5 did not solve
    found = lifted(accuracies)
    block = {"solved": SOLVED, "predictions": [LIFT]}
    assert split_cells(found, LIFT, SOLVED) == ["task:abs"]
    assert "(split cell: abs)" in predictions_table(found, block)
    values = per_seed(found, LIFT)
    assert sorted(values) == list(range(6))
    planned = prediction_interval(found, LIFT)
    assert planned.estimate == pytest.approx(np.mean(list(values.values())))
    kept = prediction_interval(found, LIFT, seeds=[0, 1, 2, 3, 4])
    assert kept.estimate == pytest.approx(np.mean([values[s] for s in range(5)]))
    assert kept.estimate < planned.estimate  # the split seed had less lift to lose
    text = split_seed_readings(found, block)
    assert text.startswith("L1  abs loses its lift (expected: below -30 points)")
    assert "abs solved `test` in 5 of 6 seeds" in text
    assert f"{100 * values[5]:+7.1f}" in text
    assert "all 6 seeds (the planned reading)" in text
    assert "the 5 solved seeds (exploratory)" in text
    assert f"{100 * kept.estimate:+6.1f} [" in text
    whole = lifted([0.95] * 6)
    assert split_seed_readings(whole, block) == "no gap prediction here reads a split cell"
    with pytest.raises(ValueError, match="seeds must be some of"):
        prediction_interval(found, LIFT, seeds=[7])
