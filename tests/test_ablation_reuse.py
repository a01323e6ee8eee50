"""The ablation never publishes numbers it did not compute with the requested settings and code."""

import json
import shutil
from dataclasses import replace

import pytest

from companion.experiments.runs import ablation
from companion.experiments.runs.ablation import StaleRunError, main, run_ablation
from companion.train import train


@pytest.fixture
def plan_with(tiny_plan):
    """``plan_with(folder, **base_changes)``: a one-run ``tiny_plan`` (rel, seed 0) whose training
    settings are changed by ``base_changes``."""

    def make(tmp_path, **base_changes):
        plan = tiny_plan(tmp_path, pos=("rel",), seeds=(0,))
        return replace(plan, base=replace(plan.base, **base_changes))

    return make


def published(tmp_path, name="mini"):
    return (tmp_path / "results" / name / "results.json").read_text()


def test_other_epochs_are_refused_and_nothing_stale_is_published(tmp_path, plan_with, stand_in):
    run_ablation(plan_with(tmp_path, epochs=1), stand_in)
    before = published(tmp_path)
    with pytest.raises(ValueError, match=r"other settings \(epochs: saved 1, now 2\).*--name"):
        run_ablation(plan_with(tmp_path, epochs=2), stand_in)  # the published runs: refused first
    elsewhere = str(tmp_path / "elsewhere")  # the saved runs: refused too
    with pytest.raises(StaleRunError, match=r"epochs: saved 1, now 2.*pass --fresh.*new --name"):
        run_ablation(replace(plan_with(tmp_path, epochs=2), results_dir=elsewhere), stand_in)
    assert published(tmp_path) == before


def test_fresh_trains_again_and_publishes_the_new_runs(tmp_path, plan_with, stand_in):
    run_ablation(plan_with(tmp_path, epochs=1), stand_in)
    shutil.rmtree(tmp_path / "results" / "mini")  # removed first, to be replaced
    results = run_ablation(replace(plan_with(tmp_path, epochs=2), fresh=True), stand_in)
    assert results["plan"]["train"]["epochs"] == 2
    assert [r["final"]["epoch"] for r in results["runs"]] == [2]
    assert json.loads(published(tmp_path)) == results


def test_changed_code_is_refused(tmp_path, monkeypatch, plan_with, stand_in):
    run_ablation(plan_with(tmp_path), stand_in)
    monkeypatch.setattr(ablation, "source_digest", lambda: "0" * 64)
    with pytest.raises(StaleRunError, match="the companion code changed since"):
        run_ablation(plan_with(tmp_path), stand_in)


def test_results_come_from_the_runs_records_not_the_command_line(tmp_path, plan_with, stand_in):
    """A setting that does not change the numbers (threads) may differ on a reuse; what is
    published is what the runs recorded."""
    run_ablation(plan_with(tmp_path, threads=None), stand_in)
    results = run_ablation(plan_with(tmp_path, threads=1), stand_in)
    assert results["plan"]["train"]["threads"] is None
    record = json.loads((tmp_path / "work" / "mini" / "relation__rel__seed0.json").read_text())
    assert results["runs"][0]["settings"] == record["settings"]


def test_a_failed_run_never_replaces_published_results(tmp_path, monkeypatch, tiny_plan, stand_in):
    plan = tiny_plan(tmp_path, pos=("none", "rel"), seeds=(0,))
    run_ablation(plan, stand_in)
    before = published(tmp_path)
    calls = []

    def fail_second(cfg, factory):
        calls.append(cfg.pos)
        if len(calls) == 2:
            raise FloatingPointError("the loss became NaN or inf")
        return train(cfg, factory)

    monkeypatch.setattr(ablation, "train", fail_second)
    with pytest.raises(FloatingPointError):
        run_ablation(replace(plan, fresh=True), stand_in)
    assert published(tmp_path) == before
    assert {p.name for p in (tmp_path / "results").glob(".mini*")} <= {".mini.lock"}


def test_a_leftover_checkpoint_resumes_only_with_the_same_settings(tmp_path, plan_with, stand_in):
    plan = plan_with(tmp_path, epochs=2)
    cfg = plan.config("relation", "rel", 0)
    train(replace(cfg, stop_after_epochs=1), stand_in)  # an interrupted ablation
    with pytest.raises(StaleRunError, match=r"checkpoint\.pt was made with other settings.*lr"):
        run_ablation(plan_with(tmp_path, epochs=2, lr=2e-3), stand_in)
    resumed = run_ablation(plan, stand_in)
    straight = run_ablation(replace(plan, name="straight"), stand_in)

    def without_timing(runs):
        return [{k: v for k, v in r["final"].items() if "time" not in k and "_s" not in k}
                for r in runs]  # fmt: skip

    assert without_timing(resumed["runs"]) == without_timing(straight["runs"])


def _cli(tmp_path, *extra):
    argv = ["--name", "cli", "--datasets", "relation", "--pos", "rel", "--seeds", "0"]
    argv += ["--epochs", "1", "--train-size", "16", "--test-size", "8", "--batch-size", "16"]
    argv += ["--results-dir", str(tmp_path / "r"), "--work-dir", str(tmp_path / "w"), *extra]
    return main(argv)


def test_command_line_errors_are_one_line(tmp_path, capsys):
    assert _cli(tmp_path) == 0
    capsys.readouterr()
    assert _cli(tmp_path, "--lr", "2e-3") == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m companion.commands.ablation: error: ") and "--name" in err
    assert len(err.strip().splitlines()) == 1
    (tmp_path / "w" / "cli" / "relation__rel__seed0.json").write_text("{not json")
    assert _cli(tmp_path) == 1
    err = capsys.readouterr().err
    assert "is not a run record (not JSON" in err and len(err.strip().splitlines()) == 1
    assert _cli(tmp_path, "--fresh") == 0


def test_negative_seeds_are_rejected_by_the_command_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--name", "x", "--seeds", "-1"])
    assert info.value.code == 2
    assert "seeds: seed must be an int in [0, 4294967295], got -1" in capsys.readouterr().err


def test_the_ablation_grid_is_dataset_pos_and_seed():
    # A field given ``grid=`` becomes a multi-value flag, but the plan, the run keys and the
    # tables know only these three axes: a new axis must be added there as well.
    assert ablation.GRID == {"dataset": "datasets", "pos": "pos", "seed": "seeds"}
