"""companion.commands.resolution_experiment: a minuscule ablation moved to 48 and 64 px, end to
end."""

import json

import pytest
import torch

from companion.experiments.evaluation import pack_bits
from companion.experiments.integrity import is_sealed
from companion.experiments.records import _transfer_rows
from companion.experiments.resolution_transfer import (
    transfer_conditions,
)
from companion.experiments.results import find_results, load_results, load_transfer
from companion.experiments.runs.ablation import AblationPlan, run_ablation
from companion.experiments.runs.resolution_experiment import (
    TransferPlan,
    main,
    run_transfer,
)
from companion.experiments.transfer_results import transfer_summary, transfer_table
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
    assert results["header"]["command"].startswith(
        "python -m companion.commands.resolution_experiment"
    )
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
    runs = str(finished.parent.parent / "runs")
    plan = TransferPlan("mini", str(tmp_path), runs, threads=1, finetune_steps=2)
    one = run_transfer(plan)["rows"]
    two = json.loads((finished / "transfer.json").read_text())["rows"]
    strip = [{k: v for k, v in r.items() if k != "finetune_s"} for r in json.loads(json.dumps(one))]
    assert strip == [{k: v for k, v in r.items() if k != "finetune_s"} for r in two]


def test_summary_groups_seeds_per_condition():
    rows = [
        {
            "dataset": "d",
            "pos": "rel",
            "variant": "swin",
            "seed": s,
            "size": 48,
            "rendering": "scaled",
            "condition": "window-kept",
            "acc": a,
        }
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


def test_a_records_old_condition_names_are_mapped_once_where_the_table_is_built():
    rows = _rows({("rel", "grid"): [0.5, 0.6], ("rel", "window-geometric"): [0.7, 0.8]})
    bits = pack_bits(torch.ones(8, dtype=torch.bool))
    record = {"header": {"git": {"commit": "c"}}, "rows": [{**r, "correct": bits} for r in rows]}
    before = {"test_sets": {"d": {"test": {"n": 8}}}}
    table = _transfer_rows("old", record, before)
    assert {r["condition"] for r in table} == {"window-kept", "window-grown-geometric"}


def test_the_committed_record_is_read_with_todays_names_only():
    folder = find_results("cpu-transfer")
    loaded = load_transfer(folder, load_results(folder))
    names = {r["condition"] for r in loaded["rows"]} - {"trained"}
    assert names == {c.name for pos in ("rel", "cpb") for c in transfer_conditions(pos)}
