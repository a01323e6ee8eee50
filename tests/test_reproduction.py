"""A regenerated ablation folder is compared with an earlier one run by run, bit by bit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from companion.experiments.runs.reproduction import differences, main


def write_folder(folder: Path, seconds: float = 1.0) -> Path:
    run = {
        "dataset": "grid-cell", "pos": "rel", "seed": 0, "variant": "swin",
        "splits": {"test": {"accuracy": 0.5, "correct": "0a"}},
        "final": {"epoch": 2, "test_acc": 0.5, "epoch_time_s": seconds},
        "best_test_acc": 0.5, "wall_s": 2 * seconds, "code_sha256": str(seconds),
    }  # fmt: skip
    (folder / "curves").mkdir(parents=True)
    (folder / "bias").mkdir()
    header = {"wall_s": 60 * seconds}
    (folder / "results.json").write_text(json.dumps({"header": header, "runs": [run]}))
    epochs = [{"epoch": e, "test_acc": 0.25 * e, "epoch_time_s": seconds, "images_per_s": 9.0}
              for e in (1, 2)]  # fmt: skip
    (folder / "curves" / "grid-cell__rel__seed0.json").write_text(json.dumps({"epochs": epochs}))
    torch.save({"blocks.0": torch.arange(4.0)}, folder / "bias" / "grid-cell__rel.pt")
    return folder


def edit_run(folder: Path, change) -> None:
    path = folder / "results.json"
    results = json.loads(path.read_text())
    change(results["runs"][0])
    path.write_text(json.dumps(results))


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
    curve = new / "curves" / "grid-cell__rel__seed0.json"
    curve.write_text(curve.read_text().replace('"test_acc": 0.25', '"test_acc": 0.3'))
    torch.save({"blocks.0": torch.arange(4.0) + 1e-7}, new / "bias" / "grid-cell__rel.pt")
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
    edit_run(new, lambda r: r.update(seed=1))
    (new / "curves" / "grid-cell__rel__seed0.json").rename(
        new / "curves" / "grid-cell__rel__seed1.json"
    )
    assert main([str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert (
        "run grid-cell__rel__seed0 only in" in out and "does not reproduce (2 differences)" in out
    )


def test_a_folder_without_results_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no results\.json"):
        differences(write_folder(tmp_path / "old"), tmp_path)
