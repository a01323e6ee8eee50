"""Experiment records that cannot be lost, edited or mismatched, each case pinned with a
minuscule run or an injected fault."""

import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from companion.experiments.results import load_results, summarize
from companion.experiments.runs import ablation
from companion.experiments.runs.ablation import (
    AblationPlan,
    StaleRunError,
    results_table,
    run_ablation,
)
from companion.experiments.runs.resolution_experiment import (
    TransferPlan,
    run_transfer,
)
from companion.experiments.runs.resolution_experiment import main as experiment_main
from companion.experiments.transfer_results import transfer_table
from companion.train import CHECKPOINT, CheckpointError, load_checkpoint, train
from companion.train import checkpoint as checkpoint_module
from companion.train.cli import run_reporting_errors

ROOT = Path(__file__).resolve().parents[1]
MOVE = dict(sizes=(48,), finetune_steps=1, finetune_batch_size=8)


def moved_in(folder: Path, **kw) -> TransferPlan:
    """The resolution experiment of the ablation ``mini`` in ``folder`` (results/, work/)."""
    return TransferPlan("mini", str(folder / "results"), str(folder / "work"), **{**MOVE, **kw})


@pytest.fixture(scope="module")
def plan_in(tiny_plan):
    """``plan_in(folder, **fields)``: one real Swin run (grid-cell, rel, seed 0): the experiment
    moves real models."""

    def make(tmp_path, **kw) -> AblationPlan:
        defaults = {"datasets": ("grid-cell",), "pos": ("rel",), "seeds": (0,)}
        return tiny_plan(tmp_path, **{**defaults, **kw})

    return make


@pytest.fixture(scope="module")
def moved_once(tmp_path_factory, plan_in):
    tmp = tmp_path_factory.mktemp("records")
    run_ablation(plan_in(tmp))
    run_transfer(moved_in(tmp))
    return tmp


@pytest.fixture
def folder(moved_once, tmp_path):
    """A private copy of the finished ablation and experiment (results/, work/)."""
    for name in ("results", "work"):
        shutil.copytree(moved_once / name, tmp_path / name)
    return tmp_path


# --------------------------------------------------------------------------- one unit


def test_re_running_the_ablation_keeps_the_experiments_results(folder, plan_in):
    transfer = (folder / "results" / "mini" / "transfer.json").read_bytes()
    run_ablation(plan_in(folder))  # every run reused
    assert (folder / "results" / "mini" / "transfer.json").read_bytes() == transfer
    assert (folder / "results" / "mini" / "transfer.md").is_file()
    # no leftovers (the publish lock's file stays, as a lock file does)
    assert sorted(p.name for p in (folder / "results").iterdir()) == [".mini.lock", "mini"]


def test_derived_results_from_other_runs_are_refused_before_training_or_removed_when_asked(
    folder, monkeypatch, plan_in
):
    monkeypatch.setattr(ablation, "train", None)  # any training would fail loudly
    with pytest.raises(ValueError, match=r"transfer\.json was computed from other runs.*--replace"):
        run_ablation(plan_in(folder, fresh=True))
    with pytest.raises(ValueError, match=r"transfer\.json was computed from other runs"):
        run_ablation(plan_in(folder, seeds=(0, 1)))
    monkeypatch.undo()
    run_ablation(plan_in(folder, fresh=True, replace_derived=True))
    assert not (folder / "results" / "mini" / "transfer.json").exists()


def test_the_experiment_records_the_hashes_of_the_runs_it_came_from(folder):
    results = load_results(folder / "results" / "mini")
    transfer = json.loads((folder / "results" / "mini" / "transfer.json").read_text())
    (run,) = results["runs"]
    assert transfer["sources"] == {
        "grid-cell__rel__seed0": {
            "record_sha256": run["record_sha256"],
            "checkpoint_sha256": run["checkpoint_sha256"],
        }
    }


def test_checkpoints_trained_again_since_publishing_are_refused(folder):
    ckpt = folder / "work" / "mini" / "grid-cell__rel__seed0" / CHECKPOINT
    saved = load_checkpoint(ckpt)
    saved["model"] = {k: v + 1 for k, v in saved["model"].items()}  # other weights, valid file
    checkpoint_module.save_checkpoint(ckpt, saved)
    with pytest.raises(ValueError, match="not the checkpoint the published results were"):
        run_transfer(moved_in(folder))


def test_transfer_json_is_not_overwritten_by_a_run_with_other_sizes(folder):
    with pytest.raises(ValueError, match=r"other settings \(sizes: saved \[48\], now \[64\]\)"):
        run_transfer(moved_in(folder, sizes=(64,)))
    run_transfer(moved_in(folder, replace=True, sizes=(64,)))
    transfer = json.loads((folder / "results" / "mini" / "transfer.json").read_text())
    assert transfer["settings"]["sizes"] == [64]


def test_an_interrupted_publish_leaves_the_previous_folder_whole(folder, monkeypatch, plan_in):
    before = (folder / "results" / "mini" / "results.json").read_bytes()

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(ablation, "results_table", killed)  # dies while staging
    with pytest.raises(KeyboardInterrupt):
        run_ablation(plan_in(folder))
    assert (folder / "results" / "mini" / "results.json").read_bytes() == before
    assert load_results(folder / "results" / "mini")["runs"]
    monkeypatch.undo()
    run_ablation(plan_in(folder))  # the next publish clears the staging folder
    assert sorted(p.name for p in (folder / "results").iterdir()) == [".mini.lock", "mini"]


def test_a_swap_killed_between_its_two_renames_is_put_back_by_the_next_publish(folder, plan_in):
    results = folder / "results"
    before = (results / "mini" / "results.json").read_bytes()
    (results / "mini").rename(results / ".mini.old")  # the old folder aside, the new one not in
    run_ablation(plan_in(folder))  # every run reused
    assert load_results(results / "mini")["runs"] and (results / "mini" / "transfer.json").is_file()
    assert sorted(p.name for p in results.iterdir()) == [".mini.lock", "mini"]
    assert json.loads(before)["runs"] == load_results(results / "mini")["runs"]


# ----------------------------------------------------------------------- nothing lost on publishing


def test_a_folder_changed_since_it_was_published_is_not_published_over(folder, plan_in):
    predictions = folder / "results" / "mini" / "results.md"
    predictions.write_text(predictions.read_text() + "an edit\n")
    with pytest.raises(ValueError, match=r"results\.md was changed"):
        run_ablation(plan_in(folder))  # every run reused: it would re-hash the edit
    with pytest.raises(ValueError, match=r"results\.md was changed"):  # read whole: refused first
        run_transfer(moved_in(folder, replace=True))
    assert "an edit" in predictions.read_text()  # refused, and left for the user to restore


def test_a_publish_that_would_lose_published_runs_is_refused_before_training(
    folder, plan_in, monkeypatch
):
    before = {p: p.read_bytes() for p in (folder / "results" / "mini").rglob("*") if p.is_file()}
    monkeypatch.setattr(ablation, "train", None)  # refused before any training
    with pytest.raises(ValueError, match=r"holds published runs this plan lacks \(grid-cell__rel"):
        run_ablation(plan_in(folder, pos=("none",), replace_derived=True, fresh=True))
    assert {p: p.read_bytes() for p in before} == before  # untouched
    assert not list((folder / "results").glob(".mini.staging*"))


def test_a_publish_with_other_settings_is_refused_naming_them(folder, plan_in, monkeypatch):
    published = folder / "results" / "mini"
    before = {p: p.read_bytes() for p in published.rglob("*") if p.is_file()}
    other = replace(plan_in(folder).base, lr=2e-3)
    monkeypatch.setattr(ablation, "train", None)  # refused before any training
    with pytest.raises(ValueError) as info:
        run_ablation(plan_in(folder, base=other, fresh=True))
    message = str(info.value)
    assert "\n" not in message and "lr: saved 0.001, now 0.002" in message
    assert "another --name" in message and "epochs" not in message  # only what differs is named
    assert {p: p.read_bytes() for p in before} == before  # untouched


def test_the_same_settings_publish_again_from_another_work_folder(folder, plan_in):
    shutil.copytree(folder / "work", folder / "elsewhere")
    run_ablation(plan_in(folder, work_dir=str(folder / "elsewhere")))  # every run reused
    assert load_results(folder / "results" / "mini")["runs"]


HOLD_THE_LOCK = """
import sys
from pathlib import Path
from companion.experiments.runs.publish import publish_lock
with publish_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


class Announcing:
    """A stderr that sets ``seen`` once a line containing ``text`` is written."""

    def __init__(self, text: str) -> None:
        self.text, self.seen = text, threading.Event()

    def write(self, line: str) -> int:
        if self.text in line:
            self.seen.set()
        return len(line)

    def flush(self) -> None:
        pass


@pytest.mark.slow
def test_publishes_to_one_name_wait_for_each_other(folder, plan_in, monkeypatch):
    target = folder / "results" / "mini"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(target)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        stderr = Announcing("waiting for another process publishing")
        monkeypatch.setattr(sys, "stderr", stderr)
        finished = threading.Event()
        publisher = threading.Thread(target=lambda: (run_ablation(plan_in(folder)), finished.set()))
        publisher.start()
        assert stderr.seen.wait(60)  # it reached the lock and waits there
        assert not finished.is_set()
        holder.stdin.write("\n")
        holder.stdin.flush()
        publisher.join(60)
        assert finished.is_set()
    finally:
        holder.kill()
        holder.wait()
    assert load_results(target)["runs"] and not list((folder / "results").glob(".mini.st*"))


# --------------------------------------------------------------------------- sealed records


def test_a_hand_edited_record_is_refused(folder, plan_in):
    path = folder / "work" / "mini" / "grid-cell__rel__seed0.json"
    record = json.loads(path.read_text())
    record["final"]["test_acc"] = 0.99
    path.write_text(json.dumps(record))
    with pytest.raises(StaleRunError, match="was edited"):
        run_ablation(plan_in(folder))


def test_a_record_whose_checkpoint_was_replaced_is_refused(folder, plan_in):
    shutil.copyfile(
        folder / "work" / "mini" / "grid-cell__rel__seed0" / "metrics.json",
        folder / "work" / "mini" / "grid-cell__rel__seed0" / CHECKPOINT,
    )
    with pytest.raises(StaleRunError, match="is missing or not the one"):
        run_ablation(plan_in(folder))


def _flip_tensor_bytes(path: Path, n: int = 64) -> None:
    """Flip ``n`` bytes inside the largest tensor's data, leaving the zip structure intact."""
    with zipfile.ZipFile(path) as archive:
        info = max(archive.infolist(), key=lambda i: i.file_size)
    data = bytearray(path.read_bytes())
    at = info.header_offset
    name_len, extra_len = (int.from_bytes(data[at + k : at + k + 2], "little") for k in (26, 28))
    start = at + 30 + name_len + extra_len + info.file_size // 2
    for i in range(start, start + n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_checkpoint_with_flipped_tensor_bytes_is_refused_naming_the_file(
    tmp_path, tiny_run, stand_in
):
    train(tiny_run(tmp_path, epochs=1), stand_in)
    path = tmp_path / "run" / CHECKPOINT
    _flip_tensor_bytes(path)
    assert zipfile.is_zipfile(path)
    with pytest.raises(CheckpointError, match=rf"{path} is corrupted: its member .* CRC-32"):
        train(tiny_run(tmp_path, epochs=1, resume=True), stand_in)


def test_a_checkpoint_claiming_epoch_7_of_2_is_refused(tmp_path, tiny_run, stand_in):
    train(tiny_run(tmp_path, stop_after_epochs=1), stand_in)
    path = tmp_path / "run" / CHECKPOINT
    saved = load_checkpoint(path)
    checkpoint_module.save_checkpoint(path, {**saved, "epoch": 7})
    with pytest.raises(CheckpointError, match="claims epoch 7 of 2"):
        train(tiny_run(tmp_path, resume=True), stand_in)


def test_weights_that_do_not_fit_the_model_are_one_line(tmp_path, tiny_run, stand_in):
    train(tiny_run(tmp_path, stop_after_epochs=1), stand_in)
    path = tmp_path / "run" / CHECKPOINT
    saved = load_checkpoint(path)
    saved["model"] = {"nonsense": torch.zeros(1)}
    checkpoint_module.save_checkpoint(path, saved)
    with pytest.raises(CheckpointError, match="its model state does not fit") as info:
        train(tiny_run(tmp_path, resume=True), stand_in)
    assert "\n" not in str(info.value)


def test_a_full_disk_is_one_line_and_keeps_the_previous_checkpoint(
    tmp_path, monkeypatch, tiny_run, stand_in
):
    train(tiny_run(tmp_path, stop_after_epochs=1), stand_in)
    before = (tmp_path / "run" / CHECKPOINT).read_bytes()

    def full(obj, f):
        raise RuntimeError("[enforce fail] PytorchStreamWriter failed writing file data/0\nmore")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OSError, match=r"could not write .*is the disk full\?") as info:
        train(tiny_run(tmp_path, resume=True), stand_in)
    assert "\n" not in str(info.value)
    assert (tmp_path / "run" / CHECKPOINT).read_bytes() == before


# --------------------------------------------------------------------------- honest counts


@pytest.mark.parametrize(
    ("kw", "flag"),
    [
        ({"seeds": (0, 0)}, "seeds: 0 given more than once"),
        ({"datasets": ("relation", "relation")}, "datasets: relation given more than once"),
        ({"pos": ("rel", "rel")}, "pos: rel given more than once"),
    ],
)
def test_repeated_grid_values_are_refused(tmp_path, kw, flag, tiny_plan):
    with pytest.raises(ValueError, match=flag):
        tiny_plan(tmp_path, **kw)


def test_repeated_sizes_are_refused():
    with pytest.raises(ValueError, match="sizes must not repeat a value"):
        TransferPlan("mini", sizes=(48, 48))


def test_one_seed_has_no_spread_and_no_interval():
    (row,) = summarize(
        [{"dataset": "relation", "pos": "rel", "seed": 0, "final": {"test_acc": 0.5}}]
    )
    assert row["std"] is None
    table = results_table([row], {"relation": 0.25})
    assert "| 50.0 |" in table and "±" not in table and "over 1 seed" in table
    transfer = [
        {**row, "size": 48, "rendering": "scaled", "condition": "window-kept", "metric": "acc"}
    ]
    assert "0.500 (n=1)" in transfer_table(transfer)


# --------------------------------------------------------------------------- one-line errors


def test_run_reporting_errors_never_prints_an_empty_message(capsys):
    def interrupt():
        raise KeyboardInterrupt

    def empty():
        raise ValueError("")

    assert run_reporting_errors("prog", interrupt, False, "stopped; resume later") == 130
    assert capsys.readouterr().err == "prog: stopped; resume later\n"
    assert run_reporting_errors("prog", empty, False) == 1
    assert capsys.readouterr().err == "prog: error: ValueError\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], r"jobs must be an int in [1, 1024], got 0"),
        (["--threads", "0"], r"threads must be an int in [1, 1024], got 0"),
        (["--sizes", "2048"], r"sizes must be an int in [1, 512], got 2048"),
        (["--finetune-steps", "-1"], "finetune_steps must be an int in [0, 10000000], got -1"),
        (["--finetune-lr", "0"], "finetune_lr must be a finite number in (0.0, 1.0]"),
    ],
)
def test_the_experiments_bad_flags_are_refused_up_front_in_one_line(capsys, args, message):
    with pytest.raises(SystemExit) as info:
        experiment_main(["--name", "x", *args])
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_the_experiments_bad_files_are_one_line_and_debug_keeps_the_traceback(folder, capsys):
    flags = ["--results-dir", str(folder / "results"), "--work-dir", str(folder / "work")]
    assert experiment_main(["--name", "nope", *flags]) == 1
    err = capsys.readouterr().err
    assert "nope is missing: no such results folder" in err and err.count("\n") == 1
    (folder / "results" / "mini" / "results.json").write_text("{not json")
    assert experiment_main(["--name", "mini", *flags]) == 1
    assert "results.json was changed" in capsys.readouterr().err
    with pytest.raises(ValueError):
        experiment_main(["--name", "mini", *flags, "--debug"])


def test_a_missing_work_checkpoint_is_named_without_a_resume_flag(folder, capsys):
    shutil.rmtree(folder / "work" / "mini" / "grid-cell__rel__seed0")
    flags = ["--results-dir", str(folder / "results"), "--work-dir", str(folder / "work")]
    assert experiment_main(["--name", "mini", *flags]) == 1
    err = capsys.readouterr().err
    assert "checkpoint.pt is missing" in err and "--resume" not in err


def test_a_results_dir_that_is_a_file_is_refused_before_training(tmp_path, monkeypatch, plan_in):
    (tmp_path / "file").write_text("mine")
    monkeypatch.setattr(ablation, "train", None)  # any training would fail loudly
    with pytest.raises(NotADirectoryError, match=r"--results-dir/--name .* cannot be created"):
        run_ablation(replace(plan_in(tmp_path), results_dir=str(tmp_path / "file")))
    assert not (tmp_path / "work").exists()


def test_missing_cifar10_is_one_line(tmp_path, capsys):
    from companion.train import main

    args = ["--dataset", "cifar10", "--data-dir", str(tmp_path / "none"), "--epochs", "1"]
    assert main([*args, "--out", str(tmp_path / "run"), "--no-progress", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert "CIFAR-10 is not in" in err and "Traceback" not in err and err.count("\n") == 1


def test_epochs_beyond_any_run_are_refused(capsys):
    from companion.train import main

    with pytest.raises(SystemExit):
        main(["--epochs", "100000000000000000000"])
    assert "epochs must be an int in [1, 100000]" in capsys.readouterr().err


# --------------------------------------------------------------------------- parallel runs


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


PARENT = (
    # Python's own Ctrl-C handling, as in a terminal's foreground job: where this test runs with
    # SIGINT ignored (a background job of a script, `make test &`), the child would inherit that.
    "import signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "import time\n"
    "from companion.experiments.runs.pool import run_all\n"
    "from companion.train.cli import run_reporting_errors\n"
    "work = lambda: run_all(time.sleep, [60] * 8, 2, 'go on')\n"
    "raise SystemExit(run_reporting_errors('prog', work, False))\n"
)


def test_sigterm_stops_the_work_as_ctrl_c_does(capsys):
    def work():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # not reached: the signal interrupts the sleep

    assert run_reporting_errors("prog", work, False, "stopped") == 130
    assert capsys.readouterr().err == "prog: stopped\n"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


@pytest.mark.slow  # four parent processes, each importing torch
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("how", "wait"),
    [("SIGTERM", 0.5), ("Ctrl-C", 0.5), ("SIGKILL", 0.5), ("Ctrl-C", 0.0)],
    ids=["SIGTERM", "Ctrl-C", "SIGKILL", "Ctrl-C-while-the-workers-start"],
)
def test_stopping_the_parent_stops_its_workers_at_once(how, wait):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], env=env, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while len(_children(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _children(parent.pid)
        assert len(workers) >= 2
        # 0.5 s: the workers have (most likely) picked up their tasks; 0: they are still
        # starting (importing), when a Ctrl-C must neither kill one half-way nor be lost.
        time.sleep(wait)
        if how == "Ctrl-C":  # the terminal signals the whole group, workers included
            os.killpg(parent.pid, signal.SIGINT)
        else:
            parent.send_signal(getattr(signal, how))
        code = parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(workers), "orphaned workers"
        if how != "SIGKILL":
            assert code == 130
            assert parent.stderr.read() == "prog: interrupted: 0 of 8 runs had finished; go on\n"
    finally:
        parent.kill()
        parent.wait()


#: Headers written before the commands moved into ``companion.commands`` spell them so.
MOVED_COMMANDS = {
    f"companion.{name}": f"companion.commands.{name}"
    for name in ("ablation", "resolution_experiment", "learned_embedding")
}


def test_the_commands_the_results_headers_record_still_run(monkeypatch, capsys):
    results = Path(__file__).resolve().parents[1] / "results"
    recorded = {
        json.loads(path.read_text())["header"]["command"].split()[2]  # python -m <module> ...
        for path in [*results.glob("*/results.json"), *results.glob("*/transfer.json")]
    }
    assert recorded and recorded <= {*MOVED_COMMANDS, *MOVED_COMMANDS.values()}
    for module in {MOVED_COMMANDS.get(m, m) for m in recorded}:
        monkeypatch.setattr(sys, "argv", [module, "--help"])
        with pytest.raises(SystemExit) as info:
            runpy.run_module(module, run_name="__main__")  # as python -m runs it
        assert info.value.code == 0
        assert f"usage: python -m {module}" in capsys.readouterr().out
