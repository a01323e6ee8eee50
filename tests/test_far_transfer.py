"""Chapter 6's far-relation transfer as one object: the folders read and merged, the glance and
the exploratory family."""

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from test_far_transfer_predictions import _results as _records
from test_far_transfer_predictions import _rows as _moves
from test_far_transfer_predictions import reading
from test_predictions import table_rows

from companion.experiments.chapter6 import (
    check_far_transfer_prediction,
    exploratory_family,
    family_split_readings,
    far_glance,
    far_split_readings,
)
from companion.experiments.evaluation import labels_text, pack_bits
from companion.experiments.far_transfer import FarTransfer, _accuracies, load_far_transfer
from companion.experiments.integrity import ResultsError, write_manifest
from companion.experiments.predictions import correct_by_seed
from companion.experiments.records import write_table
from companion.experiments.results import find_results, load_results
from companion.experiments.runs import split_codes as split_codes_command
from companion.experiments.runs.split_codes import split_codes

ROOT = Path(__file__).resolve().parents[1]
PILOTS = ROOT / "results" / "pilots" / "out" / "transfer"
D = "far-relation"
IMAGES = 200
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)  # constant answer 0.5
SEEDS = (0, 1, 2)
PLAN = {"size": 48, "solved": {"threshold": 0.9}, "learned": {"threshold": 0.75, "seeds": 2}}


def _bits(rate: float, seed: int) -> str:
    hits = np.zeros(IMAGES, dtype=bool)
    hits[: round(rate * IMAGES)] = True
    return pack_bits(torch.from_numpy(np.roll(hits, 7 * seed)))


def _rates(rate):
    return rate if isinstance(rate, tuple) else (rate,) * len(SEEDS)


def _results(rates: dict, rendering: str = "scaled") -> dict:
    runs = [
        {"dataset": D, "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering},
         "splits": {"test": {"n": IMAGES, "correct": _bits(r, s)}}}
        for pos, rate in rates.items() for s, r in zip(SEEDS, _rates(rate), strict=True)
    ]  # fmt: skip
    return {"runs": runs, "test_sets": {D: {"test": {"labels": labels_text(torch.tensor(LABELS))}}}}


def _rows(rates: dict) -> list[dict]:
    """``(pos, rendering, condition) -> moved rate`` (the fine-tune scores the same)."""
    return [
        {"dataset": D, "pos": pos, "rendering": rendering, "size": 48, "condition": condition,
         "seed": s, "variant": "swin", "acc": r, "acc_finetuned": r,
         "correct": _bits(r, s), "correct_finetuned": _bits(r, s)}
        for (pos, rendering, condition), rate in rates.items()
        for s, r in zip(SEEDS, _rates(rate), strict=True)
    ]  # fmt: skip


def _far(before: dict, rows: dict) -> FarTransfer:
    references = {"world": _results({"rel": 0.95}, "world"), "scaled": _results({}, "scaled")}
    return reading(_results(before), _rows(rows), references, PLAN)


FAR = _far(
    {"none": 0.5, "rel": (1.0, 1.0, 0.55)},
    {
        ("none", "world", "window-kept"): 0.5,
        ("none", "world", "window-grown"): 0.5,
        ("rel", "world", "window-kept"): (0.6, 0.6, 0.5),
        ("rel", "world", "window-grown-geometric"): (0.9, 0.9, 0.5),
    },
)


def test_seeds_are_the_32px_seeds_that_solved_and_all_of_them():
    assert FAR.seeds("rel") == ([0, 1], [0, 1, 2])
    assert FAR.seeds("none") == ([], [0, 1, 2])


def test_constants_are_the_most_frequent_labels_share_in_each_rendering():
    assert FAR.constants() == {"world": 0.5, "scaled": 0.5}


def test_the_family_reads_a_split_code_on_its_solved_seeds_and_marks_holm_survivors():
    text = exploratory_family(FAR, ["world"])
    rel = next(line for line in text.splitlines() if line.startswith("| `rel`"))
    assert "(2 solved of 3)" in rel
    kept, grown, gain = (cell.strip() for cell in rel.split("|")[2:5])
    # on seeds 0 and 1: lift 50 points at 32 px, 10 kept, 40 grown
    assert kept.startswith("-40.0") and grown.startswith("-10.0") and gain.startswith("+30.0")
    assert gain.endswith("\\*")
    none = next(line for line in text.splitlines() if line.startswith("| `none`"))
    assert "solved" not in none and "\\*" not in none  # nothing to keep, no gap
    assert "all 6 gaps" in text


def test_the_glance_prints_a_split_32px_cell_as_a_count():
    text = far_glance(FAR, ["world"])
    rel = next(line for line in text.splitlines() if line.startswith("| `rel`"))
    assert "2/3 solved" in rel.split("|")[2]
    assert rel.split("|")[-2].strip() == "+45.0"  # the reference: 0.95 - 0.5
    # moved: the seeds that solved at 32 px and the one that did not, never one mean
    assert rel.split("|")[3].strip() == "2 solved at 32 px: +10.0 · 1 not at 32 px: +0.0"


def test_a_glance_entry_names_each_unsolved_seed_where_several_fell_short():
    moved = {("rel", "world", "window-kept"): 0.5, ("rel", "world", "window-grown-geometric"): 0.5}
    far = _far({"rel": (1.0, 0.6, 0.55)}, moved)
    rel = next(line for line in far_glance(far, ["world"]).splitlines() if "`rel`" in line)
    assert rel.split("|")[2].strip() == "1/3 solved: +50.0 · others: +10.0, +5.0"


def test_a_gap_against_a_reference_is_read_seed_by_seed_only_where_it_learned():
    references = {**FAR.references, "world": _results({"rel": (0.95, 0.95, 0.95)}, "world")}
    references["world"]["runs"][1]["splits"]["test"]["correct"] = _bits(0.5, 1)
    cell = {"dataset": D, "pos": "rel", "rendering": "world", "condition": "window-kept"}
    plan = {**PLAN, "learned": {"threshold": 0.75, "seeds": 2},
            "predictions": [{"id": "X1", "text": "rel stays below", "kind": "moved-gap",
                             "expect": "below -0.1", "cell": cell}]}  # fmt: skip
    text = far_split_readings(reading(FAR.before, FAR.rows, references, plan))
    lines = text.splitlines()
    assert lines[2] == "  not readable on seed 1: the reference did not learn there"
    assert lines[3].split() == ["seed", "0", "2"]
    assert "on the 1 seeds where every code solved and the reference learned" in lines[-1]


def test_split_codes_names_the_codes_some_of_whose_seeds_solved_and_some_did_not(monkeypatch):
    results = _results({"none": 0.3, "rel": 1.0, "cpb": (1.0, 0.4, 0.95), "abs": (0.5, 0.4, 0.95)})
    results["plan"] = {"datasets": [D], "pos": ["none", "abs", "rel", "cpb"]}
    monkeypatch.setattr(split_codes_command, "load_table", lambda: table_rows(results))
    assert split_codes(results, 0.9) == ["abs", "cpb"]
    assert split_codes(results, 0.99) == ["cpb"]  # 0.95 no longer solves


def test_the_split_counted_on_the_record_table_is_the_one_the_per_image_bits_give():
    # which cells need their extra seeds is decided from the table's counts
    results = load_results(find_results("cpu-transfer-far"))
    for threshold in (0.9, 0.99, 0.5):
        solved = {pos: {bool(c.mean() >= threshold)
                        for c in correct_by_seed(results, f"{D}:{pos}", "test").values()}
                  for pos in results["plan"]["pos"]}  # fmt: skip
        by_bits = [pos for pos, flags in solved.items() if flags == {True, False}]
        assert split_codes(results, threshold) == by_bits
    assert split_codes(results, 0.9) == ["abs", "cpb"]


def _published(tmp_path: Path, references: dict[str, str]) -> Path:
    """results/ with the seed-0 pilot as cpu-transfer-far, its predictions naming ``references``
    (pilot folders copied beside it)."""
    results = tmp_path / "results"
    folder = results / "cpu-transfer-far"
    shutil.copytree(PILOTS / "codes-32", folder)
    for name in references.values():
        shutil.copytree(PILOTS / name, results / name)
    text = (ROOT / "results" / "cpu-transfer-far" / "predictions.md").read_text()
    block = json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1))
    block["references"] = references
    text = re.sub(r"```json\n.*?```", "```json\n" + json.dumps(block) + "\n```", text, flags=re.S)
    (folder / "predictions.md").write_text(text)
    write_manifest(folder)
    write_table(results)
    return results


def test_load_reads_the_folders_verified_with_their_references(tmp_path, monkeypatch):
    references = {"world": "ref-48-world-w6", "scaled": "ref-48-scaled-w6"}
    monkeypatch.chdir(_published(tmp_path, references).parent)
    far = load_far_transfer()
    assert far.codes == ("none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed")
    assert sorted(far.references) == ["scaled", "world"]
    assert len(far.records) == 4  # the ablation, its moves, two references
    assert {r["seed"] for r in far.rows} == {0}


def test_load_refuses_a_reference_drawn_in_another_rendering_than_it_is_read_for(
    tmp_path, monkeypatch
):
    references = {"world": "ref-48-scaled-w6", "scaled": "ref-48-world-w6"}
    monkeypatch.chdir(_published(tmp_path, references).parent)
    with pytest.raises(
        ValueError, match=r"ref-48-scaled-w6: drawn in \['scaled'\], read as 'world'"
    ):
        load_far_transfer()


def test_a_seed_of_a_cell_in_two_folders_is_refused(tmp_path):
    results = _published(tmp_path, {"world": "ref-48-world-w6"})
    shutil.copytree(results / "ref-48-world-w6", results / "ref-48-world-w6-blind")
    write_table(results)
    folders = [results / "ref-48-world-w6", results / "ref-48-world-w6-blind"]
    with pytest.raises(ValueError, match=r"ref-48-world-w6-blind: .* seed 0 is read twice"):
        _accuracies(folders, 48)


def test_load_refuses_per_image_bits_the_record_table_does_not_hold(tmp_path, monkeypatch):
    results = _published(tmp_path, {"world": "ref-48-world-w6"})
    table = results / "records.csv"
    first = next(line for line in table.read_text().splitlines() if "cpu-transfer-far," in line)
    cells = first.split(",")
    cells[13] = "0" * 64  # another bits_sha256: a table built from other records
    text = table.read_text().replace(first, ",".join(cells))
    table.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    (results / "records.csv.sha256").write_text(f"{digest}  records.csv\n")
    monkeypatch.chdir(results.parent)
    with pytest.raises(ResultsError, match=r"results.json does not agree with .*records\.csv"):
        load_far_transfer()


def test_load_refuses_a_changed_predictions_file(tmp_path, monkeypatch):
    results = _published(tmp_path, {"world": "ref-48-world-w6"})
    (results / "cpu-transfer-far" / "predictions.md").write_text("changed\n")
    monkeypatch.chdir(results.parent)
    with pytest.raises(ResultsError):
        load_far_transfer()


def test_the_family_sets_each_code_beside_rel_with_the_window_grown_on_common_seeds():
    far = _far(
        {"rel": 1.0, "cpb": (1.0, 1.0, 0.4)},
        {
            ("rel", "world", "window-kept"): 0.6,
            ("rel", "world", "window-grown-geometric"): (0.9, 0.8, 0.9),
            ("cpb", "world", "window-kept"): 0.6,
            ("cpb", "world", "window-grown"): (0.95, 0.95, 0.3),
        },
    )
    lines = exploratory_family(far, ["world"]).splitlines()
    rel = next(line for line in lines if line.startswith("| `rel`"))
    cpb = next(line for line in lines if line.startswith("| `cpb`"))
    assert rel.split("|")[5].strip() == "—"
    # cpb on its solved seeds 0 and 1, rel on the same: (0.95 + 0.95 - 0.9 - 0.8) / 2
    assert cpb.split("|")[5].strip().startswith("+10.0")
    assert "all 7 gaps" in lines[-1]


def test_a_planned_gap_on_a_split_code_is_read_seed_by_seed_and_on_the_solved_seeds():
    cell = {"dataset": D, "pos": "rel", "rendering": "world", "condition": "window-kept"}
    plan = {**PLAN, "predictions": [
        {"id": "X1", "text": "rel loses", "kind": "lift-change", "expect": "below -0.1",
         "cell": cell},
        {"id": "X2", "text": "none stays", "kind": "count", "cell": "far-relation:none",
         "expect": [0, 0]},
    ]}  # fmt: skip
    text = far_split_readings(FarTransfer(**{**FAR.__dict__, "plan": plan}))
    lines = text.splitlines()
    assert lines[0] == "X1  rel loses"  # the count prediction reads no gap
    # the planned verdict (on every seed: -28.3, its interval not below -10) before anything else
    assert lines[1] == "  planned reading: failed"
    assert lines[3].split() == ["rel", "solved", "yes", "yes", "no"]
    assert lines[4].split() == ["points", "-40.0", "-40.0", "-5.0"]
    assert "exploratory, on the 2 seeds where every code solved: -40.0" in lines[5]
    assert lines[5].endswith("(seeds chosen after the run: no verdict)")
    assert "within" not in text  # an exploratory reading is not held against the expectation


def test_a_gap_reading_a_moved_cell_that_split_is_marked_in_the_family_and_the_plan():
    far = _far(
        {"rel": 1.0, "cpb": 1.0},
        {
            ("rel", "world", "window-kept"): 0.6,
            ("rel", "world", "window-grown-geometric"): (0.95, 0.6, 0.6),
            ("cpb", "world", "window-kept"): 0.6,
            ("cpb", "world", "window-grown"): 0.95,
        },
    )
    lines = exploratory_family(far, ["world"]).splitlines()
    rel = [c.strip() for c in next(x for x in lines if x.startswith("| `rel`")).split("|")]
    cpb = [c.strip() for c in next(x for x in lines if x.startswith("| `cpb`")).split("|")]
    assert not rel[2].endswith("†") and rel[3].endswith("†") and rel[4].endswith("†")
    assert not cpb[3].endswith("†") and cpb[5].endswith("†")  # beside rel, which split
    grown = {"dataset": D, "pos": "rel", "rendering": "world", "condition": "window-grown"}
    kept = {**grown, "condition": "window-kept"}
    plan = {**PLAN, "predictions": [{"id": "X1", "text": "growing helps rel",
                                     "kind": "window-gain", "expect": "above 0", "a": grown,
                                     "b": kept}]}  # fmt: skip
    far = FarTransfer(**{**far.__dict__, "plan": plan})
    measured = check_far_transfer_prediction(far, plan["predictions"][0])[0]
    assert measured.endswith("(split at 48 px: rel grown-geometric 1 of 3)")


def test_each_daggered_gap_beside_rel_is_printed_seed_by_seed_with_its_count():
    far = _far(
        {"rel": 1.0, "cpb": 1.0, "abs": 1.0},
        {
            ("rel", "world", "window-grown-geometric"): (0.95, 0.6, 0.6),
            ("cpb", "world", "window-grown"): (0.95, 0.95, 0.3),
            ("abs", "world", "window-grown"): 0.95,
            **{(pos, "world", "window-kept"): 0.5 for pos in ("rel", "cpb", "abs")},
        },
    )
    blocks = [b for b in family_split_readings(far, ["world"]).split("\n\n") if " − rel" in b]
    # abs beside rel reads rel's split cell too; rel itself has no gap beside rel
    assert [b.splitlines()[0] for b in blocks] == [
        "world, window grown, as moved: cpb − rel",
        "world, window grown, as moved: abs − rel",
    ]
    lines = blocks[0].splitlines()
    assert lines[1].split() == ["seed", "0", "1", "2"]
    assert lines[2].split() == ["cpb", "grown", "at", "48", "solved", "yes", "yes", "no"]
    assert lines[3].split() == ["rel", "grown-geometric", "at", "48", "solved", "yes", "no", "no"]
    assert lines[4].split() == ["points", "+0.0", "+35.0", "-30.0"]
    assert (
        lines[5]
        == "  cpb ahead by more than a point on 1 of 3 seeds, behind on 1, within a point on 1"
    )


def test_each_daggered_window_gain_is_printed_seed_by_seed_with_its_count():
    far = _far(
        {"rel": 1.0, "cpb": 1.0},
        {
            ("rel", "world", "window-kept"): 0.5,
            ("rel", "world", "window-grown-geometric"): (0.95, 0.6, 0.5),
            ("cpb", "world", "window-kept"): 0.5,
            ("cpb", "world", "window-grown"): 0.95,
        },
    )
    blocks = family_split_readings(far, ["world"]).split("\n\n")
    # cpb's moved cells do not split, so its window gain is read as printed in the family
    assert [b.splitlines()[0] for b in blocks] == [
        "world, window grown − kept, as moved: rel",
        "world, window grown, as moved: cpb − rel",
    ]
    lines = blocks[0].splitlines()
    assert lines[1].split() == ["seed", "0", "1", "2"]
    assert lines[2].split() == ["rel", "grown-geometric", "at", "48", "solved", "yes", "no", "no"]
    assert lines[3].split() == ["points", "+45.0", "+10.0", "+0.0"]
    assert lines[4] == (
        "  growing the window gains more than a point on 2 of 3 seeds, "
        "loses more than a point on 0, within a point on 1"
    )


def test_glance_shows_a_split_cell_as_a_count_and_a_solved_cell_as_a_number():
    before = _records({"rel": 1.0, "abs": (1.0, 1.0, 0.6)})
    references = {"world": _records({"rel": 0.95}, "world", 48)}
    rows = _moves({("rel", "world", "window-kept"): ((0.9, 0.9, 0.5), 0.95),
                   ("rel", "world", "window-grown-geometric"): (0.6, 0.7),
                   ("abs", "world", "window-kept"): (0.55, 0.6),
                   ("abs", "world", "window-grown"): (0.5, (0.9, 0.5, 0.5))})  # fmt: skip
    plan = {**PLAN, "solved": {"threshold": 0.8}}
    lines = far_glance(reading(before, rows, references, plan), ["world"]).splitlines()
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
    assert lines[-1].startswith(f"*`{D}`: lift over the constant answer (points)")
    assert "accuracy ≥ 80 %" in lines[-1]
