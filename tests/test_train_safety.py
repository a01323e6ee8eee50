"""The trainer's safety behaviour: checked --out, locks, kills, corrupt files, one-line errors,
and one config behind both command lines."""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from companion._io import file_sha256
from companion.experiments.runs.ablation import build_parser as ablation_parser
from companion.position import Position
from companion.train import (
    CHECKPOINT,
    CHECKPOINT_FORMAT,
    NonFiniteError,
    TrainConfig,
    TrainingInterrupted,
    main,
    param_groups,
    train,
)
from companion.train import build as build_module
from companion.train import checkpoint as checkpoint_module
from companion.train.cli import build_parser as train_parser
from companion.train.config import config_fields, model_options
from companion.train.rundir import RunLock

ROOT = Path(__file__).resolve().parents[1]
CLI = "--dataset relation --train-size 32 --test-size 16 --batch-size 16 --epochs 2 --no-progress"
CLI += " --device cpu --threads 1"


def run_cli(capsys, out, *extra):
    code = main([*CLI.split(), *extra, "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- one config


def _options(parser):
    return {a.dest: a for a in parser._actions if a.option_strings}


def test_every_training_flag_is_accepted_by_the_ablation_with_the_same_choices_and_help():
    trainer, ablation = _options(train_parser()), _options(ablation_parser())
    process = {f.name for f in config_fields("process")}
    for dest, action in trainer.items():
        assert action.help, f"--{dest} has no help text"
        if dest in process | {"help", "debug"}:
            continue
        assert dest in ablation, f"the ablation lacks companion-train's {action.option_strings}"
        twin = ablation[dest]
        assert twin.choices == action.choices and twin.type == action.type, dest
        assert twin.help and (twin.nargs == "+" or twin.default == action.default), dest
    assert all(a.help for a in ablation.values())


def test_the_ablations_help_shows_the_values_its_grid_flags_run(monkeypatch):
    """``--datasets``/``--pos``/``--seeds`` default to the grid's lists, not to the single
    training run's value, and their help says so."""
    monkeypatch.setenv("COLUMNS", "1000")  # no help text wrapped (nor split at a hyphen)
    parser = ablation_parser()
    help_text = re.sub(r"\n +(?=[^ -])", " ", parser.format_help())  # one line per flag
    grid = [f.metadata["grid"][0] for f in config_fields() if f.metadata["grid"]]
    assert sorted(grid) == ["datasets", "pos", "seeds"]
    actions = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
    for plural in grid:
        (line,) = [x for x in help_text.splitlines() if x.strip().startswith(f"--{plural} ")]
        shown = re.search(r"\(default: ([^()]*)\)$", line)
        assert shown, line
        default = actions[f"--{plural}"].default
        assert shown[1].split() == [str(v) for v in default], line
        assert len(default) > 1, plural  # a grid, not one value


def test_a_new_config_field_becomes_a_flag_of_both_tools_and_reaches_the_model(monkeypatch):
    """What a helper adding a model variant relies on (shown with a made-up field)."""
    import dataclasses

    from companion.train import config as config_module

    extra = config_module.setting(
        True, "shifted windows", kind="result", model=True
    )  # as a field of TrainConfig would be declared (named as the SwinConfig field it sets)
    with_shifted = dataclasses.make_dataclass(
        "WithShifted", [("shifted_windows", bool, extra)], bases=(TrainConfig,), frozen=True
    )
    monkeypatch.setattr(config_module, "TrainConfig", with_shifted)
    p = argparse.ArgumentParser()
    config_module.add_config_arguments(p, kinds=("result",), grid=True)
    args = p.parse_args(["--no-shifted-windows"])
    cfg = config_module.config_from_args(args, dataset="relation", pos="rel", seed=0)
    assert model_options(cfg) == {"pos": Position.parse("rel"), "shifted_windows": False}


def test_model_settings_are_passed_to_the_swin_by_name():
    model = build_module.build_model(TrainConfig(pos="abs", drop_path_rate=0.3), 4, None)
    assert model.config.pos.name == "abs" and model.head.fc.out_features == 4


def test_the_no_decay_set_comes_from_the_models_no_weight_decay(stand_in_class):
    class Named(stand_in_class):
        def no_weight_decay(self):
            return {"fc.weight"}

    model = Named(4)
    decay, no_decay = param_groups(model, 0.05)
    assert any(p is model.fc.weight for p in no_decay["params"])
    assert all(p is not model.fc.weight for p in decay["params"])


@pytest.mark.parametrize("flag", [["--lr", "inf"], ["--lr", "nan"], ["--weight-decay", "inf"]])
def test_non_finite_rates_are_refused_before_training(flag, capsys):
    with pytest.raises(SystemExit) as info:
        main([*CLI.split(), *flag])
    assert info.value.code == 2 and "must be a finite number" in capsys.readouterr().err


# --------------------------------------------------------------------------- numbers


def test_the_trainers_host_syncs_do_not_grow_with_the_number_of_steps(
    tmp_path, monkeypatch, tiny_run, stand_in
):
    """``.item()``/``.tolist()``/``bool()`` called from the companion package (torch's own CPU-side
    bookkeeping, e.g. AdamW's step counter, is not a device sync and is not counted)."""
    package = str(ROOT / "companion")

    def counting(real, calls):
        def wrapper(t, *args):
            if sys._getframe(1).f_code.co_filename.startswith(package):
                calls.append(real.__name__)
            return real(t, *args)

        return wrapper

    counts = []
    for n in (64, 128):
        calls = []
        for name in ("item", "tolist", "__bool__"):
            monkeypatch.setattr(torch.Tensor, name, counting(getattr(torch.Tensor, name), calls))
        train(tiny_run(tmp_path / str(n), epochs=1, train_size=n), stand_in)
        monkeypatch.undo()
        counts.append(len(calls))
    assert counts[0] == counts[1]


def test_a_nan_input_is_blamed_on_the_data_not_the_learning_rate(
    tmp_path, monkeypatch, tiny_run, stand_in
):
    real = build_module.make_dataset

    def zero_std(*args, **kwargs):
        data = real(*args, **kwargs)
        data.std = (0.0, 0.0, 0.0)  # a broken normalisation: 0/0 and x/0
        return data

    monkeypatch.setattr(build_module, "make_dataset", zero_std)
    with pytest.raises(NonFiniteError, match=r"input images hold NaN or inf in steps 1-4") as info:
        train(tiny_run(tmp_path, epochs=1), stand_in)
    assert "--lr" not in str(info.value)


def test_a_non_finite_test_metric_is_an_error_not_a_number(tmp_path, tiny_run, stand_in_class):
    class NanWhenTesting(stand_in_class):
        def forward(self, x):
            out = super().forward(x)
            return out if self.training else out * float("nan")

    with pytest.raises(NonFiniteError, match="test metrics after epoch 1 are not finite"):
        train(tiny_run(tmp_path), lambda n, pos: NanWhenTesting(n))
    assert not (tmp_path / "run" / "metrics.json").exists()


# --------------------------------------------------------------------------- --out


def test_an_out_that_is_a_file_is_refused_before_any_training(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    code, out, err = run_cli(capsys, tmp_path / "f")
    assert code == 1 and "--out" in err and "is a file" in err and "epoch" not in out
    code, _, err = run_cli(capsys, tmp_path / "f" / "sub")
    assert code == 1 and "cannot be created" in err


def test_an_out_holding_other_files_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    code, out, err = run_cli(capsys, tmp_path)
    assert code == 1 and "holds files this trainer did not write (notes.txt)" in err
    assert (tmp_path / "notes.txt").read_text() == "mine" and "epoch" not in out


def test_an_earlier_runs_metrics_are_never_overwritten(tmp_path, capsys):
    (tmp_path / "metrics.json").write_text("{}")
    code, _, err = run_cli(capsys, tmp_path)
    assert code == 1 and "metrics of an earlier run" in err
    assert (tmp_path / "metrics.json").read_text() == "{}"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_unwritable_out_is_refused_before_any_training_even_for_root(capsys):
    # Tried by creating a file there: os.access answers yes to root, for /proc too.
    code, out, err = run_cli(capsys, Path("/proc/companion-out"))
    assert code == 1 and "epoch" not in out
    assert err.startswith("companion-train: error: --out /proc/companion-out is not writable")


def _owner_note(out: Path, pid: int, host: str | None = None):
    """What a holder killed while holding the lock leaves beside it."""
    out.mkdir(parents=True, exist_ok=True)
    (out / ".lock.json").write_text(json.dumps({"pid": pid, "host": host or socket.gethostname()}))


def test_a_folder_locked_by_a_live_process_is_refused_at_once(tmp_path, tiny_run, stand_in):
    hold = (
        "import sys, time; from pathlib import Path; from companion.train.rundir import RunLock\n"
        "with RunLock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", hold, str(tmp_path / "run")]
    sleeper = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert sleeper.stdout.readline() == "held\n"
        start = time.perf_counter()
        with pytest.raises(BlockingIOError, match=rf"in use by process {sleeper.pid}"):
            train(tiny_run(tmp_path), stand_in)
        assert time.perf_counter() - start < 5
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stale_lock_is_taken_over_in_one_line_and_orphan_temp_files_are_cleaned_up(
    tmp_path, capsys, tiny_run, stand_in
):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _owner_note(tmp_path / "run", dead.pid)
    orphan = tmp_path / "run" / ".checkpoint.pt.k1ll3d.companion.tmp"
    orphan.write_bytes(b"half a checkpoint")
    train(tiny_run(tmp_path, epochs=1), stand_in)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        ".lock", CHECKPOINT, "metrics.csv", "metrics.json"
    ]  # fmt: skip
    took_over = [line for line in capsys.readouterr().err.splitlines() if "took over" in line]
    assert len(took_over) == 1 and f"process {dead.pid}" in took_over[0]


def test_a_users_own_tmp_and_rank_files_are_neither_deleted_nor_taken_for_the_trainers(
    tmp_path, tiny_run, stand_in
):
    for name in (".notes.tmp", "rank_state.pt", ".checkpoint.pt.tmp"):
        out = tmp_path / name.strip(".")
        out.mkdir()
        (out / name).write_text("mine")
        with pytest.raises(FileExistsError, match=f"did not write \\({re.escape(name)}\\)"):
            train(tiny_run(tmp_path, out=str(out)), stand_in)
        assert (out / name).read_text() == "mine"


def test_odd_owner_notes_name_an_unknown_holder_in_one_line(tmp_path):
    out = tmp_path / "run"
    with RunLock(out):
        (out / ".lock.json").write_text("\x00 not json")
        with pytest.raises(BlockingIOError, match=r"in use by process \? on \?"):
            RunLock(out).__enter__()


@pytest.mark.slow
def test_a_second_process_on_the_same_folder_fails_at_once(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "companion.train", *CLI.split(), "--out", str(out)]
    args[args.index("--epochs") + 1] = "1000"  # still running when the second one starts
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        first.stdout.readline()  # "training ...": the lock is held
        second = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert f"is in use by process {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.kill()
        first.wait()


# --------------------------------------------------------------------------- kills and resume


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (no except Exception handler catches it)."""


def test_a_kill_between_checkpoint_and_metrics_is_repaired_by_resume(
    tmp_path, monkeypatch, tiny_run, stand_in, same_weights, without_timing
):
    straight = train(tiny_run(tmp_path / "a"), stand_in)
    real = checkpoint_module.write_metrics

    def die_at_epoch_2(out, history, header):
        if len(history) == 2:
            raise Killed
        real(out, history, header)

    monkeypatch.setattr(checkpoint_module, "write_metrics", die_at_epoch_2)
    with pytest.raises(Killed):
        train(tiny_run(tmp_path / "b"), stand_in)
    monkeypatch.undo()
    saved = json.loads((tmp_path / "b" / "run" / "metrics.json").read_text())
    assert len(saved["epochs"]) == 1  # the checkpoint has 2 epochs, the metrics 1
    resumed = train(tiny_run(tmp_path / "b", resume=True), stand_in)
    assert same_weights(straight.model, resumed.model)
    repaired = json.loads((tmp_path / "b" / "run" / "metrics.json").read_text())
    expected = json.loads((tmp_path / "a" / "run" / "metrics.json").read_text())
    assert without_timing(repaired.pop("epochs")) == without_timing(expected.pop("epochs"))
    # The metrics name the checkpoint they go with (its bytes hold timings, so differ from a's).
    assert repaired.pop("checkpoint_sha256") == file_sha256(tmp_path / "b" / "run" / CHECKPOINT)
    assert expected.pop("checkpoint_sha256") == file_sha256(tmp_path / "a" / "run" / CHECKPOINT)
    assert repaired == expected


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path, capsys, without_timing):
    def cli(out, *extra):
        cmd = [*CLI.split(), "--out", str(out), *extra]
        cmd[cmd.index("--epochs") + 1] = "5"
        return cmd

    assert main(cli(tmp_path / "a")) == 0  # the uninterrupted run, in this process
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    python = [sys.executable, "-m", "companion.train"]
    victim = subprocess.Popen(
        python + cli(tmp_path / "b"), cwd=ROOT, env=env, stdout=subprocess.PIPE
    )
    while b"epoch 1/5" not in victim.stdout.readline():
        pass
    victim.send_signal(signal.SIGKILL)  # somewhere in epoch 2: possibly mid-write
    assert victim.wait() == -signal.SIGKILL
    assert (tmp_path / "b" / ".lock.json").exists()  # a kill leaves its owner note behind
    assert main(cli(tmp_path / "b", "--resume")) == 0, capsys.readouterr().err
    a = torch.load(tmp_path / "a" / CHECKPOINT, weights_only=True)
    b = torch.load(tmp_path / "b" / CHECKPOINT, weights_only=True)
    assert a["model"].keys() == b["model"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert without_timing(a["history"]) == without_timing(b["history"])
    assert [p.name for p in (tmp_path / "b").glob(".*")] == [".lock"]  # no note, no temp file


def test_ctrl_c_says_where_the_last_checkpoint_is(tmp_path, capsys, tiny_run, stand_in_class):
    class InterruptInEpoch2(stand_in_class):
        calls = 0

        def forward(self, x):
            if self.training:
                InterruptInEpoch2.calls += 1
                if InterruptInEpoch2.calls == 6:  # 4 steps per epoch: step 2 of epoch 2
                    raise KeyboardInterrupt
            return super().forward(x)

    with pytest.raises(TrainingInterrupted) as info:
        train(tiny_run(tmp_path, epochs=3), lambda n, pos: InterruptInEpoch2(n))
    message = str(info.value)
    assert message == (
        f"interrupted in epoch 2; the last checkpoint is {tmp_path / 'run' / CHECKPOINT} "
        f"(after epoch 1); continue with --resume"
    )
    assert not (tmp_path / "run" / ".lock.json").exists()  # the lock was released


def test_ctrl_c_on_the_command_line_is_one_line(monkeypatch, tmp_path, capsys):
    from companion.train import loop

    def interrupted(cfg):
        raise TrainingInterrupted("interrupted in epoch 3; the last checkpoint is X")

    monkeypatch.setattr(loop, "train", interrupted)
    code, _, err = run_cli(capsys, tmp_path)
    assert (
        code == 130 and err == "companion-train: interrupted in epoch 3; the last checkpoint is X\n"
    )


# --------------------------------------------------------------------------- bad checkpoints


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory, tiny_run, stand_in):
    out = tmp_path_factory.mktemp("good")
    train(tiny_run(out, epochs=1), stand_in)
    return (out / "run" / CHECKPOINT).read_bytes()


def _corrupt(kind: str, good: bytes, path: Path) -> None:
    import io

    def save(obj):
        buf = io.BytesIO()
        torch.save(obj, buf)
        path.write_bytes(buf.getvalue())

    if kind == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("not a checkpoint\n")
    elif kind == "flipped flag":  # the first central directory entry's flag bits
        path.write_bytes(_flipped(good, good.index(b"PK\x01\x02") + 8, 0xFF))
    elif kind in ("foreign dict", "bare tensor", "other format", "missing keys", "code"):
        ckpt = torch.load(io.BytesIO(good), weights_only=True)
        save(
            {
                "foreign dict": {"state_dict": ckpt["model"]},
                "bare tensor": torch.zeros(3),
                "other format": {**ckpt, "format": CHECKPOINT_FORMAT + 1},
                "missing keys": {k: v for k, v in ckpt.items() if k != "optimizer"},
                "code": {**ckpt, "evil": torch.nn.Linear(2, 2)},  # a pickled module, not weights
            }[kind]
        )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated", "is not a torch checkpoint (not a zip archive"),
        ("empty", "is empty (0 bytes)"),
        ("text", "is not a torch checkpoint"),
        ("foreign dict", "is not a companion-train checkpoint (no 'format' entry"),
        ("bare tensor", "holds a Tensor, not a companion-train checkpoint"),
        ("other format", f"has checkpoint format {CHECKPOINT_FORMAT + 1}, this trainer reads"),
        ("missing keys", "lacks ['optimizer']"),
        ("code", "holds objects that weights_only loading refuses"),
        ("flipped flag", "could not be read (NotImplementedError: "),
    ],
)
def test_a_bad_checkpoint_is_one_line_naming_the_file(
    kind, message, good_checkpoint, tmp_path, capsys
):
    path = tmp_path / CHECKPOINT
    _corrupt(kind, good_checkpoint, path)
    code, _, err = run_cli(capsys, tmp_path, "--resume")
    assert code == 1, err
    assert err.startswith(f"companion-train: error: {path} ") and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_debug_shows_the_traceback(good_checkpoint, tmp_path, capsys):
    _corrupt("empty", good_checkpoint, tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match="is empty"):
        run_cli(capsys, tmp_path, "--resume", "--debug")


def _flipped(good: bytes, position: int, mask: int) -> bytes:
    damaged = bytearray(good)
    damaged[position] ^= mask
    return bytes(damaged)


def _flip_positions(good: bytes) -> dict[str, int]:
    """Named byte positions of a checkpoint's zip archive where flipping every bit (``^ 0xFF``)
    breaks it (torch stores members uncompressed: each member's bytes follow its 30-byte local
    header, name and extra field)."""
    import io
    import zipfile

    def data_start(header: int) -> int:
        name, extra = (
            int.from_bytes(good[header + o : header + o + 2], "little") for o in (26, 28)
        )
        return header + 30 + name + extra

    with zipfile.ZipFile(io.BytesIO(good)) as archive:
        tensor = next(i for i in archive.infolist() if "/data/" in i.filename).header_offset
    central = good.index(b"PK\x01\x02")  # the first entry of the central directory
    locator = good.rindex(b"PK\x06\x07")  # torch writes zip64 end records
    assert central > len(good) // 2 and locator > len(good) - 100  # both near the end
    return {
        "first byte": 0,
        "pickle data": data_start(0),
        "tensor record signature": tensor,
        "tensor record name": tensor + 30,
        "tensor record data": data_start(tensor),
        "central directory signature": central,
        "central directory version": central + 6,
        "central directory flags": central + 8,
        "central directory name length": central + 28,
        "central directory local offset": central + 42,
        "zip64 end locator disk number": locator + 4,
    }


def _load_or_message(path: Path) -> str | None:
    """None if ``path`` loads, else the ``CheckpointError``'s message (any other error fails)."""
    try:
        checkpoint_module.load_checkpoint(path)
    except checkpoint_module.CheckpointError as exc:
        message = str(exc)
        assert message.startswith(f"{path} ") and "\n" not in message, message
        assert "start afresh" in message, message
        return message
    return None


def test_a_flipped_byte_in_a_checkpoint_is_a_one_line_checkpoint_error(good_checkpoint, tmp_path):
    path = tmp_path / CHECKPOINT
    path.write_bytes(good_checkpoint)
    assert _load_or_message(path) is None  # the positions below damage a checkpoint that loads
    for where, position in _flip_positions(good_checkpoint).items():
        path.write_bytes(_flipped(good_checkpoint, position, 0xFF))
        assert _load_or_message(path) is not None, f"a flipped byte ({where}) went unnoticed"


def test_no_flipped_byte_in_the_zip_directory_escapes_as_another_error(good_checkpoint, tmp_path):
    """Every byte from the central directory to the end, flipped: a one-line ``CheckpointError``
    or (a date, a comment) a checkpoint that still loads; never ``NotImplementedError`` & co."""
    path = tmp_path / CHECKPOINT
    start = good_checkpoint.index(b"PK\x01\x02")
    refused = 0
    for position in range(start, len(good_checkpoint)):
        path.write_bytes(_flipped(good_checkpoint, position, 0xFF))
        refused += _load_or_message(path) is not None
    assert refused > (len(good_checkpoint) - start) // 2
