"""The trainer's GPU code path, exercised on the CPU as far as torch allows.

No GPU is needed: ``torch.autocast`` and ``torch.amp.GradScaler`` both accept ``"cpu"``, so the
loop's mixed-precision branches (bf16 autocast; fp16 autocast with loss scaling, unscaling for
clipping and the scaler's state in checkpoints) run here exactly as written, with only the
precision decision (which asks for CUDA) replaced. The CUDA-only lines left untested are
``torch.cuda.synchronize`` and NCCL; the CIFAR-10 path runs end to end on a small folder in
CIFAR-10's own on-disk format.
"""

import json
from dataclasses import replace

import pytest
import torch
from torch import nn

from companion.data import cifar as data_module
from companion.train import CHECKPOINT, TrainConfig, demo_config, main, pick_device, train
from companion.train import demo as demo_module
from companion.train import loop as loop_module
from companion.train.checkpoint import load_checkpoint
from companion.train.demo import FALLBACK_DATASET, train_demo, with_available_data


def cpu_supports(dtype: torch.dtype) -> str:
    """Why ``dtype`` autocast plus a CPU ``GradScaler`` cannot run here ("" when they can)."""
    try:
        with torch.autocast("cpu", dtype=dtype):
            out = nn.Linear(2, 2)(torch.ones(1, 2))
        torch.amp.GradScaler("cpu")
    except (RuntimeError, TypeError, ValueError) as exc:
        return f"this torch ({torch.__version__}) lacks CPU {dtype} autocast/GradScaler: {exc}"
    return (
        "" if out.dtype == dtype else f"CPU autocast ignores {dtype} in torch {torch.__version__}"
    )


class DtypeRecorder(nn.Module):
    """A tiny classifier that records the dtype its linear layer computes in (autocast's)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 4, stride=4)
        self.fc = nn.Linear(8 * 8 * 8, num_classes)
        self.seen: set[torch.dtype] = set()

    def forward(self, x):
        out = self.fc(torch.relu(self.conv(x)).flatten(1))
        self.seen.add(out.dtype)
        return out


def recorder(num_classes, pos):
    return DtypeRecorder(num_classes)


@pytest.fixture
def force_precision(monkeypatch):
    """Make the loop take ``precision`` on the CPU (the decision itself needs CUDA)."""

    def force(precision: str) -> None:
        reason = cpu_supports({"bf16": torch.bfloat16, "fp16": torch.float16}[precision])
        if reason:
            pytest.skip(reason)
        monkeypatch.setattr(loop_module, "resolve_precision", lambda *args: precision)

    return force


def test_bf16_autocast_runs_the_forward_pass_in_bfloat16_without_a_scaler(
    tmp_path, force_precision, tiny_run
):
    force_precision("bf16")
    result = train(tiny_run(tmp_path), recorder)
    assert torch.bfloat16 in result.model.seen
    assert result.header["precision"] == "bf16"
    saved = load_checkpoint(tmp_path / "run" / CHECKPOINT)
    assert saved["scaler"] == {}  # a disabled GradScaler saves no state
    assert all(torch.isfinite(torch.tensor(r["train_loss"])) for r in result.history)


def test_fp16_autocast_scales_the_loss_and_saves_the_scalers_state(
    tmp_path, force_precision, tiny_run
):
    force_precision("fp16")
    result = train(tiny_run(tmp_path, clip_grad=1.0), recorder)  # clipping unscales first
    assert torch.float16 in result.model.seen
    saved = load_checkpoint(tmp_path / "run" / CHECKPOINT)
    assert saved["scaler"]["scale"] > 1  # the loss really was multiplied before backward()
    assert all(torch.isfinite(torch.tensor(r["test_loss"])) for r in result.history)


def test_fp16_resume_restores_the_scaler_and_equals_an_uninterrupted_run(
    tmp_path, force_precision, tiny_run
):
    force_precision("fp16")
    whole = train(tiny_run(tmp_path / "whole"), recorder)
    train(tiny_run(tmp_path / "parts", stop_after_epochs=1), recorder)
    resumed = train(tiny_run(tmp_path / "parts", resume=True), recorder)
    a, b = whole.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    scale = [
        load_checkpoint(tmp_path / n / "run" / CHECKPOINT)["scaler"]["scale"]
        for n in ("whole", "parts")
    ]
    assert scale[0] == scale[1]


def test_the_small_swin_trains_under_bf16_autocast(tmp_path, force_precision, tiny_run):
    force_precision("bf16")
    cfg = tiny_run(tmp_path, model_config_name="tiny-cpu", pos="abs+rel", epochs=1, train_size=32)
    result = train(cfg)
    assert result.header["precision"] == "bf16" and len(result.history) == 1


def test_auto_device_takes_cuda_when_torch_reports_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto") == torch.device("cuda")
    assert demo_config("x").dataset == "cifar10"  # the live cell's GPU run


# --------------------------------------------------------------------------- CIFAR-10


def test_cifar10_trains_end_to_end_from_the_command_line(
    tmp_path, monkeypatch, capsys, write_fake_cifar
):
    md5s = write_fake_cifar(tmp_path / "data", per_batch=8)
    monkeypatch.setattr(data_module, "cifar10_md5s", lambda: md5s)
    out = tmp_path / "run"
    code = main(
        ["--config", "tiny-cpu", "--dataset", "cifar10", "--data-dir", str(tmp_path / "data"),
         "--epochs", "1", "--batch-size", "8", "--warmup-epochs", "0.5", "--device", "cpu",
         "--label-smoothing", "0.1", "--out", str(out), "--no-progress"]
    )  # fmt: skip
    assert code in (0, None)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"]["dataset"] == "cifar10" and len(metrics["epochs"]) == 1
    assert "on cifar10 (40 train / 8 test images)" in capsys.readouterr().out


def test_the_gpu_demo_falls_back_to_a_generated_task_when_cifar10_cannot_be_downloaded(
    tmp_path, monkeypatch, capsys
):
    def offline(root):
        raise RuntimeError(f"could not download CIFAR-10 into {root} (URLError: no network); x")

    monkeypatch.setattr(data_module, "_download_cifar10", offline)
    seen = []
    monkeypatch.setattr(demo_module, "train", lambda cfg: seen.append(cfg) or "trained")
    cfg = demo_config(tmp_path / "run", cuda=True)
    # A folder without CIFAR-10, so that the (failing) download is attempted.
    cfg = replace(cfg, data_dir=str(tmp_path / "no-cifar-here"))
    monkeypatch.setattr(demo_module, "demo_config", lambda out, cuda: cfg)
    assert train_demo(tmp_path / "run", cuda=True) == "trained"
    (used,) = seen
    assert used.dataset == FALLBACK_DATASET and not used.download
    assert used.model_config_name == cfg.model_config_name
    assert (used.pos, used.epochs) == (cfg.pos, cfg.epochs)
    note = capsys.readouterr().out.strip()
    assert "\n" not in note and "could not download CIFAR-10" in note and FALLBACK_DATASET in note


def test_the_gpu_demo_keeps_cifar10_when_it_is_there(tmp_path, monkeypatch, write_fake_cifar):
    md5s = write_fake_cifar(tmp_path / "data")
    monkeypatch.setattr(data_module, "cifar10_md5s", lambda: md5s)
    cfg = TrainConfig(dataset="cifar10", data_dir=str(tmp_path / "data"), download=True)
    assert with_available_data(cfg) is cfg


def test_the_cpu_demo_needs_no_data_check():
    cfg = demo_config("x", cuda=False)
    assert with_available_data(cfg) is cfg
