"""The trainer: exact resume, divergence stop, files, checks, command line."""

import argparse
import csv
import dataclasses
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from book_figures import (
    assert_fits_the_page,
    assert_legible_on_a_phone,
    assert_nothing_sticks_out_or_overlaps,
)
from torch import nn

from companion import train as train_module
from companion.data import cifar as data_module
from companion.experiments.paper import POS_TO_TABLE4_ROW
from companion.figures.training import plot_learning_curves, plot_lr_schedule
from companion.train import (
    CHECKPOINT,
    METRIC_COLUMNS,
    POS_CHOICES,
    TrainConfig,
    demo_config,
    main,
    native_bf16,
    param_groups,
    pick_device,
    resolve_precision,
    train,
    train_demo,
    train_on_gpu,
    warmup_cosine,
)

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- resume


def test_one_epoch_then_resume_equals_two_epochs_exactly(
    tmp_path, tiny_run, stand_in, same_weights, without_timing
):
    straight = train(tiny_run(tmp_path / "a"), stand_in)
    train(tiny_run(tmp_path / "b", stop_after_epochs=1), stand_in)
    resumed = train(tiny_run(tmp_path / "b", resume=True), stand_in)
    assert same_weights(straight.model, resumed.model)
    assert without_timing(straight.history) == without_timing(resumed.history)


def test_swin_with_stochastic_depth_resumes_exactly(tmp_path, tiny_run, same_weights):
    kw = dict(model_config_name="tiny-cpu", pos="abs+rel", drop_path_rate=0.2, train_size=48)
    straight = train(tiny_run(tmp_path / "a", **kw))
    train(tiny_run(tmp_path / "b", stop_after_epochs=1, **kw))
    resumed = train(tiny_run(tmp_path / "b", resume=True, **kw))
    assert same_weights(straight.model, resumed.model)


def test_checkpoint_loads_with_weights_only_and_holds_every_state(tmp_path, tiny_run, stand_in):
    train(tiny_run(tmp_path, epochs=1), stand_in)
    ckpt = torch.load(tmp_path / "run" / CHECKPOINT, weights_only=True)
    assert ckpt["epoch"] == 1
    for key in ("model", "optimizer", "scheduler", "scaler", "rng", "history", "config"):
        assert key in ckpt
    assert set(ckpt["rng"]) == {"torch", "cuda", "python", "numpy", "data_order", "augment"}
    assert not list((tmp_path / "run").glob("*.tmp"))  # atomic writes leave no temp files


def test_published_records_name_the_model_config_config_and_are_still_read_and_matched():
    """The field was ``config`` when the published runs recorded their settings: a record keeps
    that key (and the flag ``--config``), so a published run is read back and reused as it is."""
    from companion.experiments.runs.ablation import COMPARED_KINDS
    from companion.train.checkpoint import settings_differences
    from companion.train.config import (
        add_config_arguments,
        config_from_args,
        recorded_settings,
        settings_from_record,
    )

    published = json.loads((ROOT / "results" / "cpu-transfer-far" / "results.json").read_text())
    saved = published["runs"][0]["settings"]
    assert saved["config"] == "tiny-cpu" and "model_config_name" not in saved
    cfg = TrainConfig(**settings_from_record(saved))
    assert cfg.model_config_name == "tiny-cpu"
    assert settings_differences(saved, recorded_settings(cfg, COMPARED_KINDS)) == []
    other = dataclasses.replace(cfg, model_config_name="cifar")
    assert settings_differences(saved, recorded_settings(other, COMPARED_KINDS)) == [
        "config: saved 'tiny-cpu', now 'cifar'"
    ]
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert config_from_args(parser.parse_args(["--config", "cifar"])).model_config_name == "cifar"


def test_resume_without_a_checkpoint_says_where_it_looked(tmp_path, tiny_run, stand_in):
    with pytest.raises(FileNotFoundError, match=r"no checkpoint at .*checkpoint\.pt"):
        train(tiny_run(tmp_path, resume=True), stand_in)


def test_a_second_run_into_the_same_folder_must_say_resume(tmp_path, tiny_run, stand_in):
    train(tiny_run(tmp_path, epochs=1), stand_in)
    with pytest.raises(FileExistsError, match="pass --resume"):
        train(tiny_run(tmp_path, epochs=1), stand_in)


def test_resume_with_other_settings_names_what_differs(tmp_path, tiny_run, stand_in):
    train(tiny_run(tmp_path, stop_after_epochs=1), stand_in)
    with pytest.raises(ValueError, match=r"lr: saved 0.001, now 0.002"):
        train(tiny_run(tmp_path, resume=True, lr=2e-3), stand_in)


# --------------------------------------------------------------------------- divergence


def test_a_diverging_loss_stops_with_the_step_named(tmp_path, tiny_run, stand_in):
    match = r"loss became NaN or inf in steps 1-\d+ \(epoch 1\): training diverged; lower --lr"
    with pytest.raises(FloatingPointError, match=match):
        train(tiny_run(tmp_path, lr=1e30, clip_grad=0.0, warmup_epochs=0.0), stand_in)


def test_a_diverging_loss_from_the_command_line_is_one_clear_line(tmp_path, capsys):
    args = "--dataset relation --train-size 32 --test-size 16 --batch-size 16 --lr 1e30"
    args += " --clip-grad 0 --warmup-epochs 0 --epochs 1 --no-progress --device cpu"
    code = main([*args.split(), "--out", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert "error: the loss became NaN or inf" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- metrics


def test_metrics_json_and_csv_hold_one_row_per_epoch(tmp_path, tiny_run, stand_in):
    result = train(tiny_run(tmp_path), stand_in)
    out = tmp_path / "run"
    saved = json.loads((out / "metrics.json").read_text())
    assert [r["epoch"] for r in saved["epochs"]] == [1, 2]
    assert saved["config"]["dataset"] == "grid-cell" and saved["precision"] == "fp32"
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert tuple(rows[0]) == METRIC_COLUMNS and len(rows) == 2
    last = result.history[-1]
    assert 0 <= last["test_acc"] <= 1 and last["images_per_s"] > 0
    assert last["lr"] == pytest.approx(0.0, abs=1e-12)  # cosine ends at 0


def test_progress_bars_do_not_change_the_result(tmp_path, tiny_run, stand_in, same_weights):
    quiet = train(tiny_run(tmp_path / "a", epochs=1), stand_in)
    loud = train(tiny_run(tmp_path / "b", epochs=1, progress=True), stand_in)
    assert same_weights(quiet.model, loud.model)


def test_training_learns_the_grid_cell_task_above_chance(tmp_path, tiny_run, stand_in):
    cfg = tiny_run(tmp_path, epochs=4, train_size=512, test_size=128, lr=3e-3, batch_size=32)
    result = train(cfg, stand_in)
    assert result.history[-1]["test_acc"] > 3 / 16  # chance is 1/16


def test_cifar_training_reads_the_folder_and_augments(
    tmp_path, monkeypatch, tiny_run, stand_in, write_fake_cifar
):
    md5s = write_fake_cifar(tmp_path / "data", per_batch=8)
    monkeypatch.setattr(data_module, "cifar10_md5s", lambda: md5s)
    cfg = tiny_run(tmp_path, dataset="cifar10", data_dir=str(tmp_path / "data"), epochs=1)
    cfg = dataclasses.replace(cfg, train_size=None, test_size=None)
    result = train(cfg, stand_in)
    assert len(result.history) == 1


def test_compile_flag_compiles_the_model(tmp_path, monkeypatch, tiny_run, stand_in):
    compiled = []

    def fake_compile(module, *args, **kwargs):
        compiled.append(module)
        return module

    monkeypatch.setattr(torch, "compile", fake_compile)
    train(tiny_run(tmp_path, epochs=1, compile=True), stand_in)
    assert len(compiled) == 1


# --------------------------------------------------------------------------- pieces


def test_warmup_rises_linearly_then_cosine_falls_to_zero():
    f = warmup_cosine(total_steps=110, warmup_steps=10)
    assert [f(s) for s in (0, 4, 9)] == pytest.approx([0.1, 0.5, 1.0])
    assert f(10) == pytest.approx(1.0) and f(60) == pytest.approx(0.5)
    assert f(109) == pytest.approx(0.5 * (1 + math.cos(math.pi * 99 / 100)))
    values = [f(s) for s in range(10, 110)]
    assert all(a >= b for a, b in itertools.pairwise(values))


def test_warmup_cosine_rejects_a_warmup_longer_than_training():
    with pytest.raises(ValueError, match="warmup_steps=5"):
        warmup_cosine(total_steps=4, warmup_steps=5)


def test_position_tables_norms_and_biases_get_no_weight_decay():
    from companion.swin import swin_from_config

    model = swin_from_config("tiny-cpu", pos="abs+rel")
    decay, no_decay = param_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    skipped = {names[id(p)] for p in no_decay["params"]}
    assert "absolute.pos_embed" in skipped
    assert any(n.endswith("relative_position_bias_table") for n in skipped)
    assert all(p.dim() >= 2 for p in decay["params"]) and no_decay["weight_decay"] == 0.0


def test_the_multi_tensor_optimiser_step_gives_the_per_parameter_loop_s_weights_bit_for_bit(
    same_weights,
):
    # build_optimizer uses foreach kernels on a CPU (faster there); the ablation's records stay
    # comparable with runs trained by the per-parameter loop only if nothing changes.
    from companion.swin import swin_from_config
    from companion.train.build import build_optimizer

    cfg = TrainConfig(model_config_name="tiny-cpu", pos="abs+rel", dataset="grid-cell", lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 3, 32, 32, generator=gen), torch.randint(0, 16, (8,), generator=gen)
    models = []
    for foreach in (True, False):
        torch.manual_seed(0)
        model = swin_from_config("tiny-cpu", num_classes=16, pos="abs+rel")
        optimizer, schedule = build_optimizer(cfg, model, [5])
        assert optimizer.defaults["foreach"] is True
        for group in optimizer.param_groups:
            group["foreach"] = foreach
        for _ in range(5):
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x), y).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            schedule.step()
        models.append(model)
    assert same_weights(*models)


@pytest.mark.parametrize(
    ("requested", "device", "bf16", "expected"),
    [
        ("auto", "cuda", True, "bf16"),
        ("auto", "cuda", False, "fp16"),
        ("auto", "cpu", False, "fp32"),
        ("auto", "mps", False, "fp32"),
        ("fp16", "cuda", True, "fp16"),
        ("fp32", "cuda", True, "fp32"),
    ],
)
def test_precision_auto_is_bf16_then_fp16_on_gpus_and_fp32_elsewhere(
    requested, device, bf16, expected
):
    assert resolve_precision(requested, device, bf16) == expected


@pytest.mark.parametrize(
    ("requested", "device", "bf16", "message"),
    [
        ("fp16", "cpu", False, "precision='fp16' needs a CUDA device"),
        ("bf16", "cuda", False, "precision='bf16' is only emulated by this GPU"),
        ("fp8", "cuda", True, "precision must be one of"),
    ],
)
def test_precision_rejects_what_the_device_cannot_do(requested, device, bf16, message):
    with pytest.raises(ValueError, match=message):
        resolve_precision(requested, device, bf16)


@pytest.mark.parametrize(
    ("gpu", "capability", "expected"),
    [("T4", (7, 5), "fp16"), ("V100", (7, 0), "fp16"), ("A100", (8, 0), "bf16"),
     ("H100", (9, 0), "bf16")],
)  # fmt: skip
def test_auto_precision_follows_the_gpus_compute_capability_not_emulation(
    monkeypatch, gpu, capability, expected
):
    # torch.cuda.is_bf16_supported() says True on all four (it counts emulation): not asked.
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    native = native_bf16(torch.device("cuda"))
    assert resolve_precision("auto", "cuda", native) == expected
    assert not native_bf16(torch.device("cpu"))


def test_auto_device_falls_back_to_the_cpu_here():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert pick_device("auto").type in ("cpu", "mps")
    with pytest.raises(ValueError, match="CUDA is not available"):
        pick_device("cuda")


def test_the_pos_choices_are_the_rows_of_the_paper_table():
    from companion.swin_configs import POS_CHOICES as SWIN_POS

    # Swin's Table 4 has a row for each of Swin v1's codes; chapter 6 adds later codes (cpb, RoPE).
    assert set(POS_TO_TABLE4_ROW) <= set(POS_CHOICES) <= set(SWIN_POS)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"epochs": 0}, ValueError, r"epochs must be an int in \[1, 100000\], got 0"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
        ({"lr": -1.0}, ValueError, "lr must be a finite number > 0.0, got -1.0"),
        ({"lr": math.inf}, ValueError, "lr must be a finite number"),
        ({"weight_decay": math.nan}, ValueError, "weight_decay must be a finite number"),
        ({"pos": "sincos"}, ValueError, "pos must be one of"),
        ({"dataset": "mnist"}, ValueError, "dataset must be one of"),
        ({"model_config_name": "huge"}, ValueError, "model_config_name must be one of"),
        ({"device": "gpu"}, ValueError, "device must be one of auto, cpu"),
        ({"label_smoothing": 1.5}, ValueError, "label_smoothing must be a finite number in"),
        ({"warmup_epochs": 20.0}, ValueError, "warmup_epochs must be a number in"),
        ({"precision": "fp8"}, ValueError, "precision must be one of"),
    ],
)
def test_bad_settings_are_rejected_naming_the_setting(change, error, message):
    with pytest.raises(error, match=message):
        TrainConfig(**change)


def test_a_batch_larger_than_the_data_is_rejected(tmp_path, tiny_run, stand_in):
    with pytest.raises(ValueError, match="batch_size must be at most"):
        train(tiny_run(tmp_path, batch_size=128), stand_in)


def test_bad_flags_exit_with_status_2_and_a_message(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--epochs", "0"])
    assert info.value.code == 2
    assert "epochs must be an int in [1, 100000], got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--pos", "sincos"])
    assert "--pos: pos must be one of ['none', 'abs'" in capsys.readouterr().err


def test_the_module_runs_from_the_command_line(tmp_path):
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "companion.train", "--dataset", "relation", "--epochs", "1"]
    cmd += ["--train-size", "32", "--test-size", "16", "--batch-size", "16", "--threads", "1"]
    cmd += ["--out", str(out), "--no-progress"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "epoch 1/1" in proc.stdout and (out / "metrics.csv").is_file()


def test_train_module_exposes_main_for_the_console_script():
    assert callable(train_module.main)


def test_demo_trains_cifar10_on_a_gpu_and_a_short_task_on_a_cpu(tmp_path):
    gpu, cpu = demo_config(tmp_path, cuda=True), demo_config(tmp_path, cuda=False)
    assert (gpu.model_config_name, gpu.dataset, gpu.download) == ("cifar", "cifar10", True)
    assert (cpu.model_config_name, cpu.dataset, cpu.device) == ("tiny-cpu", "grid-cell", "cpu")
    # Both exist, so both were checked when built (TrainConfig is frozen and checks itself).


def test_train_demo_trains_the_demo_config(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(train_module.demo, "train", lambda cfg: seen.append(cfg) or "done")
    assert train_demo(tmp_path) == "done"
    assert seen == [demo_config(tmp_path)]


@pytest.mark.parametrize(
    ("name", "capability", "precision"),
    [("Tesla T4", (7, 5), "fp16"), ("NVIDIA A100-SXM4-40GB", (8, 0), "bf16")],
)
def test_the_colab_gpu_cell_trains_the_cifar_swin_in_the_gpus_precision(
    tmp_path, monkeypatch, capsys, name, capability, precision
):
    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(train_module.demo, "with_available_data", lambda cfg: cfg)
    monkeypatch.setattr(train_module.demo, "train", lambda cfg: seen.append(cfg) or "trained")
    assert train_on_gpu(tmp_path) == "trained"
    (cfg,) = seen
    assert (cfg.model_config_name, cfg.dataset, cfg.precision, cfg.progress) == (
        "cifar",
        "cifar10",
        "auto",
        True,
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"{name}, compute capability {capability[0]}.{capability[1]}: {precision}"
    assert lines[1] == "(This run is yours: the book's own results are CPU runs.)"


def test_the_colab_gpu_cell_says_in_one_line_that_there_is_no_gpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(train_module.demo, "train", None)  # must not be called
    assert train_on_gpu(tmp_path) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("No GPU in this runtime")
    assert not any(tmp_path.iterdir())


def test_learning_curves_figure_has_a_panel_per_metric(tmp_path, tiny_run, stand_in):
    history = train(tiny_run(tmp_path, epochs=1), stand_in).history
    fig = plot_learning_curves({"stand-in": history}, metrics=("train_loss", "test_acc", "lr"))
    assert len(fig.axes) == 3


def test_lr_schedule_figure_draws_every_step():
    fig = plot_lr_schedule(total_steps=50, warmup_steps=5, peak_lr=1e-3)
    (line,) = fig.axes[0].get_lines()[:1]
    assert len(line.get_xdata()) == 50 and max(line.get_ydata()) == pytest.approx(1e-3)


def test_lr_schedule_figure_is_legible_on_a_phone():
    fig = plot_lr_schedule(total_steps=2500, warmup_steps=250, peak_lr=1e-3)
    assert_fits_the_page(fig)
    assert_nothing_sticks_out_or_overlaps(fig)
    assert_legible_on_a_phone(fig)


# --------------------------------------------------------------------------- controlled variants


def test_the_variant_setting_reaches_the_model(stand_in):
    from companion.merging import PoolMerging
    from companion.train.build import build_model

    model = build_model(TrainConfig(variant="pool-merge+no-shift"), 4, None)
    assert isinstance(model.layers[1].downsample, PoolMerging)
    assert all(block.shift_size == (0, 0) for stage in model.layers for block in stage.blocks)
    assert not isinstance(build_model(TrainConfig(), 4, None).layers[1].downsample, PoolMerging)
    with pytest.raises(ValueError, match="variant must be 'swin' with a model factory"):
        build_model(TrainConfig(variant="torus"), 4, stand_in)


def test_bad_variants_are_refused_naming_the_setting():
    with pytest.raises(ValueError, match="variant must be one of"):
        TrainConfig(variant="wobble")
    table = r"shapes a relative position bias table, which pos='{}' does not have.*variant="
    with pytest.raises(ValueError, match=table.format("abs") + "'abs-offset-bias'"):
        TrainConfig(pos="abs", variant="abs-offset-bias")
    TrainConfig(pos="abs+rel", variant="abs-offset-bias+torus")
    for pos in ("cpb", "rope-axial"):
        with pytest.raises(ValueError, match=table.format(pos) + "'abs-offset-bias'"):
            TrainConfig(pos=pos, variant="abs-offset-bias")
        with pytest.raises(ValueError, match=f"torus=True wraps .* pos='{pos}'.*variant='torus'"):
            TrainConfig(pos=pos, variant="torus")
    TrainConfig(pos="rope-mixed", variant="no-shift+pool-merge")


def test_a_train_config_is_frozen_and_checked_whenever_it_is_built():
    cfg = TrainConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.epochs = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="epochs must be an int"):
        dataclasses.replace(cfg, epochs=0)  # a changed copy is checked again
    with pytest.raises(ValueError, match="warmup_epochs must be a number in"):
        TrainConfig(epochs=2, warmup_epochs=3.0)


def test_variant_is_a_flag_recorded_in_the_checkpoint_and_resume_must_match_it(tmp_path, tiny_run):
    out = tmp_path / "run"
    flags = ["--dataset", "grid-cell", "--epochs", "2", "--batch-size", "16", "--train-size",
             "32", "--test-size", "16", "--device", "cpu", "--warmup-epochs", "0.5",
             "--no-progress", "--out", str(out), "--variant", "pool-merge"]  # fmt: skip
    assert main([*flags, "--stop-after-epochs", "1"]) == 0
    saved = torch.load(out / CHECKPOINT, weights_only=True)
    assert saved["config"]["variant"] == "pool-merge"
    with pytest.raises(ValueError, match="variant: saved 'pool-merge', now 'swin'"):
        train(tiny_run(tmp_path, resume=True, epochs=2, train_size=32, test_size=16))


def test_img_size_and_rendering_draw_the_data_and_size_the_model(tmp_path):
    from companion.train.build import build_model, load_data
    from companion.train.runtime import DistInfo

    cfg = TrainConfig(dataset="relation", img_size=48, rendering="world", train_size=8,
                      test_size=4)  # fmt: skip
    train_data, test_data = load_data(cfg, DistInfo())
    assert train_data.images.shape[-2:] == test_data.images.shape[-2:] == (48, 48)
    model = build_model(cfg, 4, None)
    assert tuple(model.img_size) == (48, 48)
    assert model(train_data.normalize(train_data.images[:2])).shape == (2, 4)
    flags = ["--dataset", "relation", "--epochs", "1", "--batch-size", "4", "--train-size", "8",
             "--test-size", "4", "--device", "cpu", "--no-progress", "--out", str(tmp_path / "r"),
             "--img-size", "48", "--rendering", "world", "--warmup-epochs", "0"]  # fmt: skip
    assert main(flags) == 0
    saved = torch.load(tmp_path / "r" / CHECKPOINT, weights_only=True)
    assert (saved["config"]["img_size"], saved["config"]["rendering"]) == (48, "world")


def test_img_size_and_rendering_are_checked_against_the_dataset():
    with pytest.raises(ValueError, match=r"img_size and rendering must keep their defaults for "
                                         r"cifar10.*img_size=48"):  # fmt: skip
        TrainConfig(dataset="cifar10", img_size=48)
    with pytest.raises(ValueError, match=r"img_size must be a multiple of 8 .*got 44"):
        TrainConfig(dataset="relation", img_size=44)
    with pytest.raises(ValueError, match=r"img_size must be an int in \[32, 512\], got 24"):
        TrainConfig(dataset="relation", img_size=24)
    with pytest.raises(ValueError, match=r"'world' is defined for grid-cell, relation, far-relat"):
        TrainConfig(dataset="far-relation-heldout", rendering="world")
    with pytest.raises(ValueError, match=r"rendering must be one of"):
        TrainConfig(rendering="stretched")
