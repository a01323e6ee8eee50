"""companion.resolution_experiment: a minuscule ablation moved to 48 and 64 px, end to end."""

import json
import statistics

import pytest

from companion.experiments.ablation import AblationPlan, run_ablation
from companion.experiments.resolution_experiment import (
    MoveSettings,
    main,
    run_transfer,
    transfer_gap,
    transfer_gaps_table,
    transfer_summary,
    transfer_table,
    window_gain_table,
)
from companion.experiments.resolution_transfer import grown_condition
from companion.train import TrainConfig


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("transfer")
    base = TrainConfig(
        epochs=1, batch_size=16, train_size=32, test_size=16, device="cpu", progress=False
    )
    plan = AblationPlan(
        name="mini",
        datasets=("grid-cell",),
        pos=("rel", "rope-axial"),
        seeds=(0,),
        base=base,
        results_dir=str(tmp / "results"),
        work_dir=str(tmp / "runs"),
    )
    run_ablation(plan)
    argv = ["--name", "mini", "--results-dir", str(tmp / "results"), "--work-dir"]
    assert main([*argv, str(tmp / "runs"), "--finetune-steps", "2", "--jobs", "2"]) == 0
    return tmp / "results" / "mini"


@pytest.mark.slow
def test_every_run_is_moved_under_every_condition_with_provenance(finished):
    results = json.loads((finished / "transfer.json").read_text())
    assert results["header"]["command"].startswith("python -m companion.resolution_experiment")
    assert "git" in results["header"] and "wall_s" in results["header"]
    conditions = {(r["pos"], r["size"], r["condition"]) for r in results["rows"]}
    assert ("rel", 64, "window-bicubic") in conditions
    assert ("rope-axial", 48, "window") in conditions and ("rel", 32, "trained") in conditions
    assert len(results["rows"]) == 2 * (1 + 2 * 3) - 2  # rel: 3 conditions, rope: 2, per size
    assert all(0 <= r["acc"] <= 1 for r in results["rows"])
    assert all("acc_finetuned" in r for r in results["rows"] if r["size"] != 32)
    assert "| grid-cell | rel | 64 | window-geometric |" in (finished / "transfer.md").read_text()
    assert results["settings"]["images"].startswith("rendered at each size")
    assert results["header"]["jobs"] == 2


@pytest.mark.slow
def test_two_processes_move_the_runs_as_one_does(finished, tmp_path):
    # The pool only changes who does the work: rows (and their order) are the same, bit for bit
    # up to the per-process thread count, which is pinned to 1 on both sides here.
    import shutil

    folder = tmp_path / "mini"
    shutil.copytree(finished, folder)
    work = finished.parent.parent / "runs" / "mini"
    settings = MoveSettings(finetune_steps=2)
    one = run_transfer(folder, work, settings, jobs=1, threads=1)["rows"]
    two = run_transfer(folder, work, settings, jobs=2, threads=1)["rows"]
    strip = [{k: v for k, v in r.items() if k != "finetune_s"} for r in one]
    assert strip == [{k: v for k, v in r.items() if k != "finetune_s"} for r in two]


def test_summary_groups_seeds_per_condition():
    rows = [
        {"dataset": "d", "pos": "rel", "seed": s, "size": 48, "condition": "grid", "acc": a}
        for s, a in ((0, 0.5), (1, 0.7))
    ]
    (summary,) = transfer_summary(rows)
    assert summary["seeds"] == [0, 1] and summary["variant"] == "swin"
    assert summary["n"] == 2 and summary["mean"] == pytest.approx(0.6)
    assert "0.600 ± 0.141 (n=2)" in transfer_table([summary])


def _rows(cells):
    return [
        {"dataset": "d", "pos": pos, "condition": cond, "size": 48, "seed": s, "acc": acc}
        for (pos, cond), accs in cells.items()
        for s, acc in enumerate(accs)
    ]


def test_transfer_gap_pairs_seeds_and_reports_a_t_interval_in_points():
    rows = _rows({("rel", "grid"): [0.9, 0.8, 0.7], ("abs", "grid"): [0.5, 0.5, 0.4]})
    gap = transfer_gap(rows, "d", 48, ("rel", "grid"), ("abs", "grid"))
    assert gap["seeds"] == [0, 1, 2]
    assert gap["mean"] == pytest.approx(100 / 3)  # differences 40, 30, 30 points
    # paired t interval: mean ± t(0.975, 2) * sd / sqrt(3), t = 4.302653
    half = 4.302653 * statistics.stdev([40, 30, 30]) / 3**0.5
    assert gap["high"] - gap["mean"] == pytest.approx(half, rel=1e-5)
    assert gap["excludes_zero"]


def test_transfer_gap_uses_only_shared_seeds_and_refuses_fewer_than_two():
    rows = _rows({("rel", "grid"): [0.9, 0.8], ("abs", "grid"): [0.5]})
    with pytest.raises(ValueError, match="at least 2 seeds"):
        transfer_gap(rows, "d", 48, ("rel", "grid"), ("abs", "grid"))


def test_transfer_gaps_table_marks_intervals_that_exclude_zero():
    rows = _rows({("rel", "grid"): [0.9, 0.8, 0.7], ("abs", "grid"): [0.9, 0.7, 0.8]})
    table = transfer_gaps_table(rows, [("d", 48, ("rel", "grid"), ("abs", "grid"))])
    assert "rel:grid" in table and "abs:grid" in table and not table.rstrip().endswith("*")


def test_window_gain_table_pairs_each_codes_grown_window_with_its_kept_one_in_both_metrics():
    cells = {
        ("rel", "grid"): [0.2, 0.3, 0.1],
        ("rel", "window-geometric"): [0.6, 0.7, 0.5],  # +40 points on every seed
        ("rel", "window-bicubic"): [0.0, 0.0, 0.0],  # not the condition the table reads
        ("cpb", "grid"): [0.5, 0.4, 0.6],
        ("cpb", "window"): [0.5, 0.5, 0.5],
    }
    rows = [{**r, "acc_finetuned": r["acc"]} for r in _rows(cells)]
    table = window_gain_table(rows, ["d"], [48], ["rel", "cpb"]).splitlines()
    assert table[1] == "d at 48 px"
    assert table[2].startswith("  rel        +40.0 [") and table[2].count("*") == 2
    assert table[3].startswith("  cpb         +0.0 [") and "*" not in table[3]
    assert grown_condition("rel", "bicubic") == "window-bicubic"
    assert grown_condition("cpb", "bicubic") == "window"
