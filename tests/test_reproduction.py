"""A regenerated ablation folder is compared with an earlier one run by run, bit by bit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from companion.experiments.integrity import ResultsError, seal, write_manifest
from companion.experiments.results import run_key, summarize
from companion.experiments.runs.reproduction import differences, main


def publish(folder: Path, runs: list[dict], curves: dict[str, list], header: dict) -> None:
    """Write ``folder`` as the ablation publishes one: runs sealed with their curves, the summary
    from the runs, every file hashed."""
    sealed = []
    for run in runs:
        key = run_key(run["dataset"], run["pos"], run["seed"], run["variant"])
        body = seal(
            {**{k: v for k, v in run.items() if k != "record_sha256"}, "epochs": curves[key]}
        )
        sealed.append({k: v for k, v in body.items() if k != "epochs"})
        (folder / "curves" / f"{key}.json").write_text(json.dumps({"epochs": curves[key]}))
    plan = {
        "datasets": sorted({r["dataset"] for r in runs}),
        "pos": sorted({r["pos"] for r in runs}),
        "seeds": sorted({r["seed"] for r in runs}),
    }
    results = {"header": header, "plan": plan, "runs": sealed, "summary": summarize(sealed)}
    (folder / "results.json").write_text(json.dumps(results))
    write_manifest(folder)


def write_folder(folder: Path, seconds: float = 1.0) -> Path:
    run = {
        "dataset": "grid-cell", "pos": "rel", "seed": 0, "variant": "swin",
        "splits": {"test": {"accuracy": 0.5, "correct": "0a"}},
        "final": {"epoch": 2, "test_acc": 0.5, "epoch_time_s": seconds},
        "best_test_acc": 0.5, "wall_s": 2 * seconds, "code_sha256": str(seconds),
    }  # fmt: skip
    (folder / "curves").mkdir(parents=True)
    (folder / "bias").mkdir()
    epochs = [{"epoch": e, "test_acc": 0.25 * e, "epoch_time_s": seconds, "images_per_s": 9.0}
              for e in (1, 2)]  # fmt: skip
    torch.save({"blocks.0": torch.arange(4.0)}, folder / "bias" / "grid-cell__rel.pt")
    publish(folder, [run], {"grid-cell__rel__seed0": epochs}, {"wall_s": 60 * seconds})
    return folder


def loaded(folder: Path) -> tuple[list[dict], dict[str, list], dict]:
    results = json.loads((folder / "results.json").read_text())
    curves = {
        p.stem: json.loads(p.read_text())["epochs"] for p in (folder / "curves").glob("*.json")
    }
    return results["runs"], curves, results["header"]


def edit_run(folder: Path, change) -> None:
    """Another run than the published one, published as the ablation would (sealed, hashed)."""
    runs, curves, header = loaded(folder)
    change(runs[0])
    publish(folder, runs, curves, header)


def test_a_folder_regenerated_on_a_slower_machine_reproduces_the_first(tmp_path: Path) -> None:
    old = write_folder(tmp_path / "old")
    new = write_folder(tmp_path / "new", seconds=3.0)  # other timings, header and digest
    assert differences(old, new) == []


def test_one_flipped_test_image_is_named(tmp_path: Path) -> None:
    old = write_folder(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    edit_run(new, lambda r: r["splits"]["test"].update(correct="0b"))
    assert differences(old, new) == ["grid-cell__rel__seed0: splits differs"]


def test_a_changed_curve_point_and_bias_table_are_named(tmp_path: Path) -> None:
    old = write_folder(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    runs, curves, header = loaded(new)
    curves["grid-cell__rel__seed0"][0]["test_acc"] = 0.3
    torch.save({"blocks.0": torch.arange(4.0) + 1e-7}, new / "bias" / "grid-cell__rel.pt")
    publish(new, runs, curves, header)
    assert differences(old, new) == [
        "grid-cell__rel__seed0: curve differs",
        "bias/grid-cell__rel.pt differs",
    ]


def test_a_missing_run_is_named_and_the_command_exits_with_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_folder(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    runs, curves, header = loaded(new)
    runs[0]["seed"] = 1
    (new / "curves" / "grid-cell__rel__seed0.json").unlink()
    publish(new, runs, {"grid-cell__rel__seed1": curves["grid-cell__rel__seed0"]}, header)
    assert main([str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert (
        "run grid-cell__rel__seed0 only in" in out and "does not reproduce (2 differences)" in out
    )


def test_a_folder_without_results_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no results\.json"):
        differences(write_folder(tmp_path / "old"), tmp_path)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda r: r["summary"][0].update(mean=0.9), "summary is not the one its runs give"),
        (lambda r: r["runs"][0]["splits"]["test"].update(correct="0b"), "record_sha256"),
    ],
    ids=["summary", "per-image bits"],
)
def test_a_folder_edited_after_it_was_published_is_refused_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tamper, message
) -> None:
    old = write_folder(tmp_path / "old")
    new = tmp_path / "new"
    shutil.copytree(old, new)
    path = new / "results.json"
    results = json.loads(path.read_text())
    tamper(results)
    path.write_text(json.dumps(results))
    with pytest.raises(ResultsError, match=r"results\.json was changed or damaged"):
        differences(old, new)
    write_manifest(new)  # the hash list made to match: the runs' own seals still refuse it
    with pytest.raises(ResultsError, match=message):
        differences(old, new)
    assert main([str(old), str(new)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "reproduces" not in err[0]


def test_a_folder_from_before_hashing_is_read_checked_and_a_tampered_one_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_folder(tmp_path / "old")  # as published before folders were hashed:
    (old / "SHA256SUMS").unlink()  # no hash list, no "hashed" mark in its header
    new = write_folder(tmp_path / "new", seconds=3.0)
    assert differences(old, new) == []  # the recipe in results/README.md: no hashing step
    assert main([str(old), str(new)]) == 0
    assert "reproduces" in capsys.readouterr().out
    path, kept = old / "results.json", (old / "results.json").read_text()
    for tamper, message in [
        (lambda r: r["summary"][0].update(mean=0.9), "summary is not the one its runs give"),
        (lambda r: r["runs"][0]["splits"]["test"].update(correct="0b"), "record_sha256"),
        (lambda r: r["header"].update(hashed="after the run"), "SHA256SUMS is missing"),
    ]:
        results = json.loads(kept)
        tamper(results)
        path.write_text(json.dumps(results))
        with pytest.raises(ResultsError, match=message):  # checked without a hash list
            differences(old, new)
    path.write_text(kept)
    curve = old / "curves" / "grid-cell__rel__seed0.json"
    curve.write_text(curve.read_text().replace('"test_acc": 0.5', '"test_acc": 0.75'))
    with pytest.raises(ResultsError, match="record_sha256"):  # a curve is checked too
        differences(old, new)


def test_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nowhere"), str(write_folder(tmp_path / "new"))]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no results.json in" in err[0]
