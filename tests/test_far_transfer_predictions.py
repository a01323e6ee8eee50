"""Chapter 6's planned comparisons for far-relation moved from 32 px to 48 px, on synthetic runs."""

import json

import numpy as np
import pytest
import torch

from companion.experiments.chapter6 import (
    check_far_transfer_prediction,
    far_transfer_predictions_table,
    learned_line,
)
from companion.experiments.evaluation import labels_text, pack_bits, unpack_bits
from companion.experiments.far_transfer import FarTransfer, merge_runs
from companion.experiments.predictions import parse_far_transfer_predictions

D = "far-relation"
IMAGES = 200
#: Labels with a constant answer of 0.5 (label 0 on half the images).
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)
SEEDS = (0, 1, 2)
PLAN = {
    "size": 48,
    "solved": {"threshold": 0.9},
    "learned": {"threshold": 0.9, "seeds": 3},
    "references": {"world": "ref-48-world", "scaled": "ref-48-scaled"},
}


def _bits(rate: float, seed: int) -> str:
    """Hex bits of ``rate * IMAGES`` right answers (the first ones, rolled by seed)."""
    hits = np.zeros(IMAGES, dtype=bool)
    hits[: round(rate * IMAGES)] = True
    return pack_bits(torch.from_numpy(np.roll(hits, 7 * seed)))


def _per_seed(rate, seeds):
    return dict(zip(seeds, rate if isinstance(rate, tuple) else [rate] * len(seeds), strict=True))


def _results(rates, rendering="scaled", size=32, seeds=SEEDS, labels=LABELS) -> dict:
    """A results.json: ``{pos: rate, or a rate per seed}`` on far-relation's test split."""
    runs = [
        {"dataset": D, "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering, "img_size": size},
         "splits": {"test": {"n": IMAGES, "correct": _bits(r, s)}}}
        for pos, rate in rates.items()
        for s, r in _per_seed(rate, seeds).items()
    ]  # fmt: skip
    return {"runs": runs, "test_sets": {D: {"test": {"labels": labels_text(torch.tensor(labels))}}}}


def _rows(rates, seeds=SEEDS) -> list[dict]:
    """transfer.json rows: ``(pos, rendering, condition) -> (moved, fine-tuned)`` rates."""
    rows = []
    for (pos, rendering, condition), (moved, tuned) in rates.items():
        moved, tuned = _per_seed(moved, seeds), _per_seed(tuned, seeds)
        rows += [
            {"dataset": D, "pos": pos, "rendering": rendering, "size": 48, "condition": condition,
             "seed": s, "variant": "swin", "acc": moved[s], "acc_finetuned": tuned[s],
             "correct": _bits(moved[s], s), "correct_finetuned": _bits(tuned[s], s)}
            for s in seeds
        ]  # fmt: skip
    return rows


def _cell(pos="rel", rendering="world", condition="window-kept", **more):
    return {"dataset": D, "pos": pos, "rendering": rendering, "condition": condition, **more}


BEFORE = _results({"rel": 1.0, "abs": (1.0, 1.0, 0.6)})
REFERENCES = {"world": _results({"rel": 0.95, "abs": (0.95, 0.95, 0.6)}, "world", 48)}
ROWS = _rows({
    ("rel", "world", "window-kept"): (0.7, 0.95),
    ("rel", "world", "window-grown-geometric"): (0.9, 0.95),
    ("abs", "world", "window-kept"): (0.6, 0.9),
})  # fmt: skip


def reading(before: dict, rows: list[dict], references: dict, plan: dict = PLAN) -> FarTransfer:
    """The records as one :class:`FarTransfer`, each run's test accuracy counted from its bits as
    the record table counts them."""
    n = before["runs"][0]["splits"]["test"]["n"]
    accuracy = {}
    for rendering, runs in [(None, before["runs"])] + [
        (r, x["runs"]) for r, x in references.items()
    ]:
        for run in runs:
            correct = unpack_bits(run["splits"]["test"]["correct"], n)
            accuracy[run["pos"], rendering, "trained", "acc", run["seed"]] = float(correct.mean())
    for row in rows:
        for metric, bits in (("acc", "correct"), ("acc_finetuned", "correct_finetuned")):
            key = (row["pos"], row["rendering"], row["condition"], metric, row["seed"])
            accuracy[key] = float(unpack_bits(row[bits], n).mean())
    codes = tuple(dict.fromkeys(run["pos"] for run in before["runs"]))
    return FarTransfer(before=before, rows=rows, references=references, plan=plan, records=(),
                       codes=codes, accuracy=accuracy)  # fmt: skip


def _check(prediction: dict) -> tuple[str, bool | None]:
    far = reading(BEFORE, ROWS, REFERENCES)
    return check_far_transfer_prediction(far, {"id": "x", "text": "", **prediction})


def test_count_holds_when_the_32px_cell_is_solved_in_the_expected_seeds():
    assert _check({"kind": "count", "cell": f"{D}:rel", "expect": [3, 3]}) == (
        "solved 3 of 3 (rate 0.29-1.00)",
        True,
    )
    assert _check({"kind": "count", "cell": f"{D}:abs", "expect": [3, 3]})[1] is False


def test_a_count_that_says_most_seeds_fails_at_half_of_them_whatever_its_range():
    most = {"kind": "count", "cell": f"{D}:abs", "text": "abs solves it in most seeds"}
    half = _results({"abs": (1.0, 1.0, 0.6, 0.6)}, seeds=(0, 1, 2, 3))
    measured, held = check_far_transfer_prediction(
        reading(half, ROWS, REFERENCES), {"id": "x", **most, "expect": [2, 10]}
    )
    assert (measured, held) == ("solved 2 of 4 (rate 0.07-0.93): not most of 4", False)
    assert _check({**most, "expect": [2, 10]})[1] is True  # 2 of 3 is most


def test_moved_count_counts_the_moved_seeds_that_reach_the_threshold():
    tuned = _cell(metric="acc_finetuned")
    assert _check({"kind": "moved-count", "cell": tuned, "expect": [3, 3]})[1] is True
    measured, held = _check({"kind": "moved-count", "cell": _cell(), "expect": [1, 3]})
    assert measured.startswith("solved 0 of 3") and held is False


def test_lift_change_is_the_moved_lift_minus_the_same_seeds_lift_at_32px():
    # rel: lift +50 points at 32 px, +20 moved: a change of -30 points
    measured, held = _check({"kind": "lift-change", "cell": _cell(), "expect": "below 0"})
    assert measured.startswith("-30.0 [") and held is True
    assert _check({"kind": "lift-change", "cell": _cell(), "expect": "above -0.1"})[1] is False


def test_moved_gap_reads_moved_minus_reference_where_the_reference_learned():
    measured, held = _check({"kind": "moved-gap", "cell": _cell(), "expect": "below -0.15"})
    assert measured.startswith("-25.0 [") and held is True
    assert _check({"kind": "moved-gap", "cell": _cell(), "expect": "within 0.1"})[1] is False


def test_moved_gap_is_not_readable_where_the_reference_learned_in_too_few_seeds():
    measured, held = _check({"kind": "moved-gap", "cell": _cell("abs"), "expect": "below 0"})
    assert held is None
    assert measured == (
        "not readable: abs trained at 48 px in world (ref-48-world) learned in 2 of 3 seeds, "
        "3 needed"
    )


def test_code_gap_and_window_gain_read_two_moved_cells_paired():
    measured, held = _check(
        {"kind": "code-gap", "a": _cell(), "b": _cell("abs"), "expect": "above 0.02"}
    )
    assert measured.startswith("+10.0 [") and held is True
    # "window-grown" is read as the code's own grown condition (geometric for rel's table)
    gain = {"kind": "window-gain", "a": _cell(condition="window-grown"), "b": _cell()}
    measured, held = _check({**gain, "expect": "above 0.1"})
    assert measured.startswith("+20.0 [") and held is True
    assert _check({**gain, "expect": "below 0"})[1] is False
    with pytest.raises(ValueError, match="a window-gain reads one code under two conditions"):
        _check({**gain, "b": _cell("abs"), "expect": "above 0"})


def test_p_is_printed_only_beside_above_or_below_zero():
    gap = {"kind": "code-gap", "a": _cell(), "b": _cell("abs")}
    assert "(against 0: p < 0.00025)" in _check({**gap, "expect": "above 0"})[0]
    assert "(against 0: p" in _check({**gap, "expect": "below 0"})[0]
    for expect in ("above 0.2", "within 0.05", "below 0.3"):
        assert "p " not in _check({**gap, "expect": expect})[0]


def test_a_gap_reading_a_code_whose_32px_seeds_split_says_so():
    gap = {"kind": "code-gap", "a": _cell(), "b": _cell("abs"), "expect": "above 0"}
    assert _check(gap)[0].endswith(" (split cell: abs)")
    lift = {"kind": "lift-change", "cell": _cell(), "expect": "below 0"}
    assert "split cell" not in _check(lift)[0]


def test_cells_with_different_seeds_are_read_on_the_seeds_both_have():
    extra = _rows({("rel", "world", "window-kept"): (0.7, 0.95)}, seeds=(5, 6))
    rows = ROWS + extra
    gap = {"id": "x", "text": "", "kind": "code-gap", "a": _cell(), "b": _cell("abs"),
           "expect": "above 0"}  # fmt: skip
    measured, _ = check_far_transfer_prediction(reading(BEFORE, rows, REFERENCES), gap)
    assert "(on the 3 seeds both have)" in measured
    assert "seeds both have" not in _check(gap)[0]


def test_table_marks_failures_and_unreadable_gaps_and_prints_expectations_in_points():
    predictions = {**PLAN, "predictions": [
        {"id": "P1", "text": "rel solved", "kind": "count", "cell": f"{D}:rel", "expect": [3, 3]},
        {"id": "P2", "text": "rel loses", "kind": "moved-gap", "cell": _cell(),
         "expect": "above -0.05"},
        {"id": "P3", "text": "abs loses", "kind": "moved-gap", "cell": _cell("abs"),
         "expect": "below 0"},
    ]}  # fmt: skip
    lines = far_transfer_predictions_table(reading(BEFORE, ROWS, REFERENCES, predictions))
    lines = lines.splitlines()
    assert lines[0] == "| id | prediction | expected | measured | held |"
    assert lines[2] == "| P1 | rel solved | 3-3 seeds | solved 3 of 3 (rate 0.29-1.00) | yes |"
    assert lines[3].startswith("| P2 | rel loses | above -5 points | -25.0 [")
    assert lines[3].endswith(" | **no** |")
    assert lines[4].endswith(" | not readable |")


def test_learned_line_counts_each_reference_seeds_that_reach_the_threshold():
    line = learned_line(reading(BEFORE, ROWS, REFERENCES))
    assert "world rel 3/3, world abs 2/3 (not learned)." in line and "at 48 px" in line


def test_merge_runs_concatenates_seeds():
    extra = _results({"rel": 0.5}, seeds=(5, 6))
    merged = merge_runs(BEFORE, extra)
    assert len(merged["runs"]) == len(BEFORE["runs"]) + 2
    assert merged["test_sets"] == BEFORE["test_sets"]


def test_merge_runs_refuses_other_test_labels():
    other = _results({"rel": 0.5}, seeds=(5,), labels=np.roll(LABELS, 1))
    with pytest.raises(ValueError, match=f"the records' '{D}' test sets"):
        merge_runs(BEFORE, other)


def test_parse_refuses_an_unknown_kind_and_a_missing_key():
    block = {**PLAN, "predictions": [{"id": "P9", "kind": "kept", "expect": "above 0"}]}
    text = "Prose.\n\n```json\n{}\n```\n"
    with pytest.raises(ValueError, match=r"prediction P9: kind must be one of .* got 'kept'"):
        parse_far_transfer_predictions(text.format(json.dumps(block)))
    fine = {**block, "predictions": [{**block["predictions"][0], "kind": "code-gap"}]}
    assert parse_far_transfer_predictions(text.format(json.dumps(fine)))["size"] == 48
    no_learned = {k: v for k, v in fine.items() if k != "learned"}
    with pytest.raises(ValueError, match=r"lacks \['learned'\]"):
        parse_far_transfer_predictions(text.format(json.dumps(no_learned)))
