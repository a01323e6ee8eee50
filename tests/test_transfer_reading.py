"""Chapter 6's planned reading: a moved cell as the share of its reference's lift it keeps."""

import numpy as np
import pytest
import torch

from companion.experiments.bootstrap import kept_interval, kept_replicates
from companion.experiments.evaluation import labels_text, pack_bits
from companion.experiments.predictions import load_predictions
from companion.experiments.transfer_reading import (
    check_transfer_prediction,
    kept_gap,
    kept_share,
    kept_table,
    load_references,
    load_transfer_predictions,
    moved_correct,
    reference_seeds,
    transfer_predictions_table,
)

IMAGES = 200
#: Labels with a constant answer of 0.5 (label 0 on half the images).
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)


def _bits(rate: float, seed: int) -> np.ndarray:
    """A fixed pattern of ``rate * IMAGES`` right answers (different images per seed)."""
    hits = np.zeros(IMAGES, dtype=bool)
    hits[: round(rate * IMAGES)] = True
    return np.roll(hits, 7 * seed)


def _reference(rates: dict[str, float], rendering: str = "world") -> dict:
    runs = [
        {"dataset": "d", "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering, "img_size": 48},
         "final": {"test_acc": rate},
         "splits": {"test": {"n": IMAGES, "correct": pack_bits(torch.from_numpy(_bits(rate, s)))}}}
        for pos, rate in rates.items()
        for s in range(3)
    ]  # fmt: skip
    labels = labels_text(torch.from_numpy(LABELS))
    return {"runs": runs, "test_sets": {"d": {"test": {"labels": labels}}}}


def _rows(rates: dict[tuple[str, str, str], tuple[float, float]]) -> list[dict]:
    return [
        {"dataset": "d", "pos": pos, "rendering": rendering, "size": 48, "condition": cond,
         "seed": s, "acc": moved, "acc_finetuned": tuned,
         "correct": pack_bits(torch.from_numpy(_bits(moved, s))),
         "correct_finetuned": pack_bits(torch.from_numpy(_bits(tuned, s)))}
        for (pos, rendering, cond), (moved, tuned) in rates.items()
        for s in range(3)
    ]  # fmt: skip


def _cell(pos="rel", rendering="world", condition="window-kept", metric="acc"):
    return {"dataset": "d", "pos": pos, "rendering": rendering, "condition": condition,
            "metric": metric}  # fmt: skip


def test_kept_is_one_at_the_reference_and_zero_at_the_constant_answer():
    reference = np.stack([_bits(0.9, s) for s in range(3)])
    same, values = kept_replicates(reference, reference, LABELS)
    assert same == pytest.approx(1.0)
    constant = np.stack([LABELS == 0] * 3)  # always answering label 0
    nothing, values = kept_replicates(constant, reference, LABELS)
    assert nothing == pytest.approx(0.0)
    interval = kept_interval(values, nothing)
    assert interval.low < 0 < interval.high  # the constant answer is recomputed per replicate
    halfway, _ = kept_replicates(np.stack([_bits(0.7, s) for s in range(3)]), reference, LABELS)
    assert halfway == pytest.approx(0.5)  # (0.7 - 0.5) / (0.9 - 0.5)


def test_kept_refuses_images_that_differ_and_a_reference_with_no_lift():
    with pytest.raises(ValueError, match="the same 200 images"):
        kept_replicates(np.ones((3, IMAGES)), np.ones((3, 100)), LABELS)
    flat = np.stack([LABELS == 0] * 3)
    estimate, values = kept_replicates(flat, flat, LABELS)
    with pytest.raises(ValueError, match="a share of its lift is not defined"):
        kept_interval(values, estimate)


def test_kept_share_reads_a_moved_cell_against_the_reference_of_its_rendering():
    references = {"world": _reference({"rel": 0.9, "cpb": 0.9}),
                  "scaled": _reference({"rel": 0.7}, "scaled")}  # fmt: skip
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("rel", "scaled", "window-kept"): (0.6, 0.7),
                  ("cpb", "world", "window-kept"): (0.6, 0.9)})  # fmt: skip
    world = kept_share(rows, references, _cell(), 48)
    assert world.estimate == pytest.approx(0.75) and world.low < 0.75 < world.high
    scaled = kept_share(rows, references, _cell(rendering="scaled"), 48)
    assert scaled.estimate == pytest.approx(0.5)  # (0.6 - 0.5) / (0.7 - 0.5)
    tuned = kept_share(rows, references, _cell(metric="acc_finetuned"), 48)
    assert tuned.estimate == pytest.approx(1.0)
    gap = kept_gap(rows, references, _cell(), _cell(pos="cpb"), 48)
    assert gap.estimate == pytest.approx(0.5) and gap.low > 0
    text, held = check_transfer_prediction(
        rows, references, {"kind": "kept-gap", "a": _cell(), "b": _cell(pos="cpb"),
                           "expect": "above 0"}, 48,
    )  # fmt: skip
    assert held and text.startswith("+0.500 [")
    predictions = {"size": 48, "predictions": [
        {"id": "X1", "text": "rel keeps most", "kind": "kept", "cell": _cell(),
         "expect": "above 0.9"}]}  # fmt: skip
    assert transfer_predictions_table(rows, references, predictions).endswith("| **no** |")
    table = kept_table(rows, references, "d", [("rel", "window-kept"), ("cpb", "window-kept")], 48)
    lines = table.splitlines()
    assert lines[2] == "  world" and lines[3].split()[:4] == [
        "rel:window-kept",
        "80.0",
        "90.0",
        "90.0",
    ]
    assert "  scaled" in lines and not any(line.split()[0] == "cpb:window-kept"
                                           for line in lines[lines.index("  scaled"):])  # fmt: skip


def test_moved_correct_names_a_missing_cell_and_a_bad_metric():
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9)})
    assert sorted(moved_correct(rows, "d", "rel", "world", 48, "window-kept")) == [0, 1, 2]
    with pytest.raises(ValueError, match="no cell rel:window-grown on d/world at 48 px"):
        moved_correct(rows, "d", "rel", "world", 48, "window-grown")
    with pytest.raises(ValueError, match="metric must be one of"):
        moved_correct(rows, "d", "rel", "world", 48, "window-kept", "loss")


def test_a_reference_must_be_drawn_in_the_rendering_it_is_read_for(tmp_path, monkeypatch):
    import companion.experiments.transfer_reading as reading

    monkeypatch.setattr(reading, "load_results", lambda folder: _reference({"rel": 0.9}))
    assert load_references(tmp_path, {"world": "w"})["world"]["runs"][0]["pos"] == "rel"
    with pytest.raises(ValueError, match=r"its runs were drawn in \['world'\], not in 'scaled'"):
        load_references(tmp_path, {"scaled": "w"})


def test_transfer_predictions_have_kinds_of_their_own(tmp_path, publish_file):
    publish_file(
        tmp_path,
        "predictions.md",
        '```json\n{"size": 48, "predictions": [{"id": "T", "kind": "kept"}]}\n```\n',
    )
    assert load_transfer_predictions(tmp_path)["size"] == 48
    with pytest.raises(ValueError, match="prediction T: kind must be one of"):
        load_predictions(tmp_path)


def test_the_committed_transfer_predictions_name_cells_the_run_produces():
    from companion.experiments.results import find_results

    found = load_transfer_predictions(find_results("cpu-transfer"))
    assert found["size"] == 48 and set(found["references"]) == {"scaled", "world"}
    for p in found["predictions"]:
        for cell in [p["cell"]] if p["kind"] == "kept" else [p["a"], p["b"]]:
            assert cell["pos"] in ("abs", "rel", "cpb") and cell["dataset"] in (
                "grid-cell",
                "relation",
            )


def test_a_reference_that_learned_nothing_makes_a_planned_reading_not_readable():
    # The reference answers like the constant answer (label 0 on half the images): no lift.
    references = {"world": _reference({"rel": 0.5, "cpb": 0.9})}
    rows = _rows({("rel", "world", "window-kept"): (0.8, 0.9),
                  ("cpb", "world", "window-kept"): (0.8, 0.9)})  # fmt: skip
    prediction = {"id": "X", "text": "t", "kind": "kept-gap", "expect": "above 0",
                  "a": _cell(pos="cpb"), "b": _cell()}  # fmt: skip
    text, held = check_transfer_prediction(rows, references, prediction, 48)
    assert held is None and text.startswith("no reference lift: d:rel (world) trained at the new")
    table = transfer_predictions_table(rows, references, {"size": 48, "predictions": [prediction]})
    assert table.endswith("| not readable |")
    lines = kept_table(rows, references, "d", [("rel", "window-kept"), ("cpb", "window-kept")], 48)
    assert lines.splitlines()[3].endswith("no reference lift to keep a share of")
    reached = {"id": "R", "text": "t", "kind": "reference", "expect": "above 0.8",
               "cell": _cell(pos="cpb")}  # fmt: skip
    text, held = check_transfer_prediction(rows, references, reached, 48)
    assert held and text.startswith("+0.900 [")


def test_accuracies_ignore_the_padding_bits_of_a_test_set_not_a_multiple_of_8():
    labels = np.array([0] * 7 + [1] * 6)  # 13 images: the packed bits carry 3 padding bits
    right = torch.ones(13, dtype=torch.bool)
    runs = [
        {
            "dataset": "d",
            "pos": "rel",
            "seed": s,
            "variant": "swin",
            "settings": {"rendering": "world"},
            "final": {"test_acc": 1.0},
            "splits": {"test": {"n": 13, "correct": pack_bits(right)}},
        }
        for s in range(3)
    ]
    reference = {
        "runs": runs,
        "test_sets": {"d": {"test": {"labels": labels_text(torch.from_numpy(labels))}}},
    }
    rows = [{"dataset": "d", "pos": "rel", "rendering": "world", "size": 48,
             "condition": "window-kept", "seed": s, "acc": 1.0, "acc_finetuned": 1.0,
             "correct": pack_bits(right), "correct_finetuned": pack_bits(right)}
            for s in range(3)]  # fmt: skip
    line = kept_table(rows, {"world": reference}, "d", [("rel", "window-kept")], 48).splitlines()[3]
    assert line.split()[1:4] == ["100.0", "100.0", "100.0"]


def test_reference_seeds_prints_each_codes_accuracy_seed_by_seed():
    text = reference_seeds(_reference({"rel": 0.9, "cpb": 0.5}), "d").splitlines()
    assert text == ["  rel  seed 0:  90.0  seed 1:  90.0  seed 2:  90.0",
                    "  cpb  seed 0:  50.0  seed 1:  50.0  seed 2:  50.0"]  # fmt: skip
