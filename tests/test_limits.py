"""Limits refuse before work: sizes the machine cannot hold, in one line naming the setting, the
value and what is allowed; help texts show the defaults that really apply."""

import pytest
import torch

from companion import _checks
from companion.data import make_dataset
from companion.experiments.runs.ablation import build_parser as ablation_parser
from companion.experiments.runs.resolution_experiment import TransferPlan
from companion.experiments.runs.resolution_experiment import build_parser as transfer_parser
from companion.experiments.runs.split_codes import main as split_codes
from companion.train import TrainConfig, limits, main, train_steps

CLI = "--dataset relation --test-size 16 --batch-size 16 --epochs 1 --no-progress --device cpu"


def test_a_size_that_cannot_fit_names_the_largest_that_can():
    with pytest.raises(ValueError) as info:
        _checks.check_fits_in_memory("train_size", 348_618, 3080, "32-px images", 2**30)
    assert str(info.value) == (
        "train_size must be at most 348,617 here (32-px images take 3,080 bytes each, and 1.0 GiB "
        "of memory is available), got 348,618"
    )
    _checks.check_fits_in_memory("train_size", 348_617, 3080, "32-px images", 2**30)


def test_a_train_size_no_machine_holds_is_refused_at_once(tmp_path, capsys):
    code = main([*CLI.split(), "--train-size", "100000000", "--out", str(tmp_path / "run")])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err.startswith("companion-train: error: train_size must be at most ")
    assert captured.err.endswith("got 100,000,000\n")
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_batch_the_device_cannot_hold_is_refused_before_the_first_step(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(limits, "device_memory_bytes", lambda device: 2**20)
    code = main([*CLI.split(), "--train-size", "32", "--out", str(tmp_path / "run")])
    captured = capsys.readouterr()
    assert code == 1 and "epoch 1/" not in captured.out
    assert "error: batch_size must be at most " in captured.err
    assert "got 16\n" in captured.err


def test_a_fine_tune_batch_is_refused_under_the_callers_name(monkeypatch, stand_in):
    monkeypatch.setattr(limits, "device_memory_bytes", lambda device: 2**20)
    data = make_dataset("grid-cell", "train", 32)
    cfg = TrainConfig(dataset="grid-cell", batch_size=16, device="cpu")
    with pytest.raises(ValueError, match=r"^finetune_batch_size must be at most \d+ here "):
        train_steps(stand_in(data.num_classes, "rel"), data, cfg, 2, "finetune_batch_size")


def test_measuring_a_step_changes_neither_the_random_state_nor_the_mode(stand_in):
    model = stand_in(10, "rel").train()
    before = torch.random.get_rng_state()
    assert limits.saved_bytes_per_image(model, 32, torch.device("cpu")) > 3 * 32 * 32 * 4
    assert torch.equal(torch.random.get_rng_state(), before) and model.training


def test_a_range_with_an_open_end_is_named_whole():
    with pytest.raises(ValueError, match=r"finetune_lr must be a finite number in \(0.0, 1.0\]"):
        TransferPlan("mini", finetune_lr=2.0)


def test_help_shows_the_defaults_that_apply_as_they_are_typed():
    sizes = transfer_parser()._option_string_actions["--sizes"]
    assert sizes.help.endswith(f"(default: {' '.join(map(str, TransferPlan('mini').sizes))})")
    threads = ablation_parser()._option_string_actions["--threads"].help
    assert "torch's with --jobs 1, else 1" in threads


@pytest.mark.parametrize("folder", ["/nonexistent/folder", "."])
def test_split_codes_on_a_bad_folder_is_one_line(folder, capsys):
    assert split_codes([folder]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m companion.experiments.runs.split_codes: error: ")
    assert err.count("\n") == 1


def test_a_compiled_model_is_held_to_its_inputs_alone(monkeypatch, stand_in):
    """A compiled model may save less than the eager one measured: only its inputs count."""
    inputs = 16 * 9 * 3 * 32 * 32  # 16 images: uint8, then float32 twice
    monkeypatch.setattr(limits, "device_memory_bytes", lambda device: inputs)
    model, cpu = stand_in(10, "rel"), torch.device("cpu")
    limits.check_batch_fits("batch_size", 16, model, 32, cpu, compiled=True)
    with pytest.raises(ValueError, match="batch_size must be at most"):
        limits.check_batch_fits("batch_size", 16, model, 32, cpu)
