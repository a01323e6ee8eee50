"""A stop is a stop: SIGINT and SIGTERM stop training at any moment, DataLoader workers or not,
with one line naming the last checkpoint, and never a traceback.

The signals are sent from fork hooks (``os.register_at_fork``), so each lands at a known fork of
a known epoch: before the fork, in the parent just after it (where ``logging``'s own hook lost
9 of 10 of them), or from the new worker (to the parent, or to the worker and the parent as a
terminal's Ctrl-C does). Each case runs once and must stop in the epoch it names.
"""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from companion.train import CHECKPOINT, TrainingInterrupted, main, train
from companion.train import stop as stop_module

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2  # forked at the start of every epoch: forks 1-2 in epoch 1, 3-4 in epoch 2
_PLAN: dict = {}  # what the fork hooks do; empty: nothing


def _before() -> None:
    if _PLAN:
        _PLAN["forks"] += 1
        if _PLAN["moment"] == "before" and _PLAN["forks"] == _PLAN["at"]:
            os.kill(os.getpid(), _PLAN["signal"])


def _after_in_parent() -> None:
    if _PLAN and _PLAN["moment"] == "parent" and _PLAN["forks"] == _PLAN["at"]:
        os.kill(os.getpid(), _PLAN["signal"])


def _after_in_child() -> None:  # in the new worker, which has a copy of _PLAN
    if _PLAN and _PLAN["forks"] == _PLAN["at"]:
        if _PLAN["moment"] in ("child", "group"):
            os.kill(os.getppid(), _PLAN["signal"])
        if _PLAN["moment"] in ("worker", "group"):  # as a terminal's Ctrl-C reaches it too
            os.kill(os.getpid(), _PLAN["signal"])


os.register_at_fork(
    before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child
)


@pytest.fixture
def signal_at_fork():
    """``signal_at_fork(moment, at, signum)``: send ``signum`` at the ``at``-th fork from now."""

    def arm(moment: str, at: int, signum: int) -> None:
        _PLAN.update(moment=moment, at=at, signal=signum, forks=0)

    yield arm
    _PLAN.clear()


def _expected(tmp_path: Path, at: int) -> str:
    if at <= WORKERS:
        return "interrupted in epoch 1; the last checkpoint is not written yet"
    return (
        f"interrupted in epoch 2; the last checkpoint is {tmp_path / 'run' / CHECKPOINT} "
        f"(after epoch 1); continue with --resume"
    )


# Every moment at every fork of both epochs; Ctrl-C at the odd forks, SIGTERM at the even ones.
CASES = [
    (moment, at, (signal.SIGINT, signal.SIGTERM)[(at - 1) % 2])
    for moment in ("before", "parent", "child", "group")
    for at in range(1, 2 * WORKERS + 1)
]


@pytest.mark.parametrize(("moment", "at", "signum"), CASES)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # "Exception ignored"
def test_a_signal_while_workers_fork_is_never_lost(
    moment, at, signum, tmp_path, tiny_run, stand_in, signal_at_fork, capfd
):
    cfg = tiny_run(tmp_path, num_workers=WORKERS)
    signal_at_fork(moment, at, signum)
    with pytest.raises(TrainingInterrupted) as info:
        train(cfg, stand_in)
    assert str(info.value) == _expected(tmp_path, at)
    assert capfd.readouterr().err == ""  # no "Exception ignored", no worker's traceback
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_ctrl_c_sent_to_a_worker_alone_is_left_to_its_parent(
    tmp_path, tiny_run, stand_in, signal_at_fork, capfd
):
    signal_at_fork("worker", 1, signal.SIGINT)
    result = train(tiny_run(tmp_path, num_workers=WORKERS), stand_in)
    assert [r["epoch"] for r in result.history] == [1, 2]
    assert capfd.readouterr().err == ""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_an_interrupt_python_swallows_still_stops_the_run(tmp_path, tiny_run, stand_in_class):
    """A ``KeyboardInterrupt`` raised in a ``__del__`` is printed and dropped by Python; the
    recorded stop ends the run at the next step all the same."""

    class Dropped:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # raises here, where Python cannot raise it

    class InterruptedInADel(stand_in_class):
        calls = 0

        def forward(self, x):
            if self.training:
                InterruptedInADel.calls += 1
                if InterruptedInADel.calls == 6:  # 4 steps per epoch: step 2 of epoch 2
                    Dropped()
            return super().forward(x)

    with pytest.raises(TrainingInterrupted, match="interrupted in epoch 2; "):
        train(tiny_run(tmp_path, epochs=3), lambda n, pos: InterruptedInADel(n))
    assert InterruptedInADel.calls == 6  # not one step more


def test_a_signal_within_deferred_is_raised_when_it_ends():
    with pytest.raises(KeyboardInterrupt), stop_module.stop_signals():
        with stop_module.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop_module.requested()  # recorded, not raised here
        pytest.fail("deferred() raises it on leaving")  # pragma: no cover


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_a_stop_lost_after_the_last_check_is_raised_when_the_block_ends():
    class Dropped:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt), stop_module.stop_signals():
        Dropped()  # the interrupt is raised in __del__, where Python drops it
        assert stop_module.requested()
    assert not stop_module.requested()  # and the block is gone with its handlers


def test_on_the_command_line_a_stop_at_a_fork_is_one_line_and_status_130(
    tmp_path, signal_at_fork, capsys
):
    signal_at_fork("parent", 3, signal.SIGTERM)
    argv = "--dataset relation --train-size 32 --test-size 16 --batch-size 16 --epochs 2"
    argv += " --no-progress --device cpu --threads 1 --num-workers 2"
    code = main([*argv.split(), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 130
    assert err == f"companion-train: {_expected(tmp_path, 3)}\n"


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([*env.values(), str(ROOT)])}
    return subprocess.run(
        [sys.executable, *code.split()], cwd=ROOT, env=environment, capture_output=True, text=True
    )


@pytest.mark.parametrize("command", ["companion.train", "companion.experiments.runs.split_codes"])
def test_ctrl_c_while_torch_imports_is_one_line_and_status_130(command, tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise KeyboardInterrupt\n")
    done = _python(f"-m {command} --help", fake=str(tmp_path))
    assert done.returncode in (130, -signal.SIGINT)  # exited as Ctrl-C ends a process
    assert done.stdout == ""
    assert done.stderr == f"python -m {command}: interrupted while starting: nothing was run\n"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_whole_process_group_is_one_line_naming_the_checkpoint(signum, tmp_path):
    """As a terminal's Ctrl-C or a scheduler's stop: the command and its workers all get it."""
    argv = "--dataset relation --train-size 256 --test-size 16 --batch-size 16 --epochs 50"
    argv += f" --no-progress --device cpu --threads 1 --num-workers 2 --out {tmp_path / 'run'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "companion.train", *argv.split()], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("epoch 1/"):
                break
        os.killpg(run.pid, signum)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130
    checkpoint = re.escape(str(tmp_path / "run" / CHECKPOINT))
    assert re.fullmatch(
        rf"companion-train: interrupted in epoch \d+; the last checkpoint is {checkpoint} "
        rf"\(after epoch \d+\); continue with --resume\n",
        err,
    )
