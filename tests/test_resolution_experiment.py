"""companion.resolution_experiment: a minuscule ablation moved to 48 and 64 px, end to end."""

import json
import statistics

import pytest

from companion.experiments.integrity import is_sealed
from companion.experiments.resolution_transfer import (
    RECORDED_NAMES,
    grown_condition,
    transfer_conditions,
)
from companion.experiments.results import find_results
from companion.experiments.runs.ablation import AblationPlan, run_ablation
from companion.experiments.runs.resolution_experiment import MoveSettings, main, run_transfer
from companion.experiments.stats import holm
from companion.experiments.transfer_results import (
    family_note,
    holm_family,
    load_transfer,
    transfer_gap,
    transfer_summary,
    transfer_table,
    window_gain_pairs,
    window_gain_table,
    with_todays_names,
)
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
    assert is_sealed(results)  # its rows as the run computed them (load_transfer checks it)
    assert results["header"]["command"].startswith("python -m companion.resolution_experiment")
    assert "git" in results["header"] and "wall_s" in results["header"]
    conditions = {(r["pos"], r["size"], r["condition"]) for r in results["rows"]}
    assert ("rel", 64, "window-grown-bicubic") in conditions
    assert ("rope-axial", 48, "window-grown") in conditions and ("rel", 32, "trained") in conditions
    # per run: trained, then 2 renderings x 2 sizes x conditions (rel: 3, rope: 2)
    assert len(results["rows"]) == (1 + 2 * 2 * 3) + (1 + 2 * 2 * 2)
    assert {r["rendering"] for r in results["rows"]} == {"scaled", "world"}
    assert all(0 <= r["acc"] <= 1 for r in results["rows"])
    assert all("acc_finetuned" in r for r in results["rows"] if r["size"] != 32)
    assert (
        "| grid-cell | rel | world | 64 | window-grown-geometric |"
        in (finished / "transfer.md").read_text()
    )
    assert results["settings"]["images"].startswith("drawn at each size")
    assert results["settings"]["renderings"] == ["scaled", "world"]
    assert results["header"]["jobs"] == 2


@pytest.mark.slow
def test_two_processes_move_the_runs_as_one_does(finished, tmp_path):
    # The pool only changes who does the work: rows (and their order) are the same, bit for bit
    # up to the per-process thread count, which is 1 on both sides here (the fixture's two
    # processes get one thread each by default).
    import shutil

    folder = tmp_path / "mini"
    shutil.copytree(finished, folder)
    work = finished.parent.parent / "runs" / "mini"
    one = run_transfer(folder, work, MoveSettings(finetune_steps=2), jobs=1, threads=1)["rows"]
    two = json.loads((finished / "transfer.json").read_text())["rows"]
    strip = [{k: v for k, v in r.items() if k != "finetune_s"} for r in json.loads(json.dumps(one))]
    assert strip == [{k: v for k, v in r.items() if k != "finetune_s"} for r in two]


def test_summary_groups_seeds_per_condition():
    rows = [
        {"dataset": "d", "pos": "rel", "seed": s, "size": 48, "condition": "window-kept", "acc": a}
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
    rows = _rows({("rel", "window-kept"): [0.9, 0.8, 0.7], ("abs", "window-kept"): [0.5, 0.5, 0.4]})
    gap = transfer_gap(rows, "d", 48, ("rel", "window-kept"), ("abs", "window-kept"))
    assert gap["seeds"] == [0, 1, 2]
    assert gap["mean"] == pytest.approx(100 / 3)  # differences 40, 30, 30 points
    # paired t interval: mean ± t(0.975, 2) * sd / sqrt(3), t = 4.302653
    half = 4.302653 * statistics.stdev([40, 30, 30]) / 3**0.5
    assert gap["high"] - gap["mean"] == pytest.approx(half, rel=1e-5)
    assert gap["excludes_zero"]


def test_transfer_gap_uses_only_shared_seeds_and_refuses_fewer_than_two():
    rows = _rows({("rel", "window-kept"): [0.9, 0.8], ("abs", "window-kept"): [0.5]})
    with pytest.raises(ValueError, match="at least 2 seeds"):
        transfer_gap(rows, "d", 48, ("rel", "window-kept"), ("abs", "window-kept"))


def test_window_gain_table_pairs_each_codes_grown_window_with_its_kept_one_in_both_metrics():
    cells = {
        ("rel", "window-kept"): [0.2, 0.3, 0.1],
        ("rel", "window-grown-geometric"): [0.6, 0.7, 0.5],  # +40 points on every seed
        ("rel", "window-grown-bicubic"): [0.0, 0.0, 0.0],  # not the condition the table reads
        ("cpb", "window-kept"): [0.5, 0.4, 0.6],
        ("cpb", "window-grown"): [0.5, 0.5, 0.5],
    }
    rows = [{**r, "acc_finetuned": r["acc"]} for r in _rows(cells)]
    table = window_gain_table(rows, ["d"], [48], ["rel", "cpb"]).splitlines()
    assert table[0] == "window-grown - window-kept"
    assert table[2] == "d, scaled, at 48 px"
    assert table[3].startswith("  rel        +40.0 [") and table[3].count("*") == 2
    assert table[4].startswith("  cpb         +0.0 [") and "*" not in table[4]
    assert grown_condition("rel", "bicubic") == "window-grown-bicubic"
    assert grown_condition("cpb", "bicubic") == "window-grown"


def test_holm_family_adjusts_every_gap_of_every_metric_as_one_family():
    cells = {
        ("rel", "window-kept"): [0.2, 0.3, 0.1, 0.2],
        ("rel", "window-grown-geometric"): [0.6, 0.72, 0.5, 0.61],
        ("cpb", "window-kept"): [0.5, 0.4, 0.6, 0.5],
        ("cpb", "window-grown"): [0.5, 0.52, 0.47, 0.5],
    }
    rows = [{**r, "acc_finetuned": r["acc"]} for r in _rows(cells)]
    pairs = window_gain_pairs(["d"], [48], ["rel", "cpb"])
    grown = ("rel", "window-grown-geometric")
    assert pairs[0] == ("d", "scaled", 48, grown, ("rel", "window-kept"))
    family = holm_family(rows, pairs)
    assert len(family) == 4  # 2 gaps x 2 metrics
    raw = [transfer_gap(rows, d, s, a, b, m, rendering=r)["p"] for d, r, s, a, b, m in family]
    assert list(family.values()) == pytest.approx(holm(raw))
    assert "family of 4 gaps" in " ".join(family_note(family).split())
    table = window_gain_table(rows, ["d"], [48], ["rel", "cpb"], family=family).splitlines()
    assert table[3].count("p_Holm") == 2 and table[3].rstrip().endswith("H")
    assert "p_Holm 1.000" in table[4] and not table[4].rstrip().endswith("H")
    with pytest.raises(ValueError, match="family: holds no gap"):  # cpb's gaps are outside it
        window_gain_table(rows, ["d"], [48], ["rel", "cpb"], family=holm_family(rows, pairs[:1]))


def test_transfer_gap_p_is_below_005_exactly_when_the_interval_excludes_zero():
    rows = _rows({("rel", "window-kept"): [0.9, 0.8, 0.7], ("abs", "window-kept"): [0.5, 0.5, 0.4]})
    gap = transfer_gap(rows, "d", 48, ("rel", "window-kept"), ("abs", "window-kept"))
    assert gap["excludes_zero"] and 0 < gap["p"] < 0.05


def test_a_records_old_condition_names_are_read_as_todays():
    rows = _rows({("rel", "grid"): [0.5, 0.6], ("rel", "window-geometric"): [0.7, 0.8]})
    summary = transfer_summary(rows)
    loaded = with_todays_names(json.loads(json.dumps({"rows": rows, "summary": summary})))
    assert {r["condition"] for r in loaded["rows"]} == {"window-kept", "window-grown-geometric"}
    assert {s["condition"] for s in loaded["summary"]} == {"window-kept", "window-grown-geometric"}
    assert loaded["renamed"] == {
        "grid": "window-kept",
        "window-geometric": "window-grown-geometric",
    }
    assert "| d | rel | scaled | 48 | window-kept |" in transfer_table(summary)  # as today


def test_the_committed_record_is_read_with_todays_names_only():
    loaded = load_transfer(find_results("cpu-transfer"))
    names = {r["condition"] for r in loaded["rows"]} - {"trained"}
    assert names == {c.name for pos in ("rel", "cpb") for c in transfer_conditions(pos)}
    assert set(loaded["renamed"]) <= set(RECORDED_NAMES)


def test_transfer_gap_reads_only_the_rows_of_its_rendering():
    rows = _rows({("rel", "window-kept"): [0.9, 0.8, 0.7], ("abs", "window-kept"): [0.5, 0.5, 0.4]})
    world = [{**r, "rendering": "world", "acc": 1.0 - r["acc"]} for r in rows]
    args = ("d", 48, ("rel", "window-kept"), ("abs", "window-kept"))
    assert transfer_gap(rows + world, *args)["mean"] == pytest.approx(100 / 3)
    assert transfer_gap(rows + world, *args, rendering="world")["mean"] == pytest.approx(-100 / 3)
    pairs = window_gain_pairs(["d"], [48], ["cpb"], renderings=("scaled", "world"))
    assert [p[1] for p in pairs] == ["scaled", "world"]
