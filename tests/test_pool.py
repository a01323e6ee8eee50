"""``companion.experiments.runs.pool``: how many torch threads each worker gets, and what the
parent does when a run fails or a worker dies (it stops the others and says how to go on).

The runs of the process tests are module-level functions here, which the spawned workers import
by this module's name; ``run_all`` runs in a child process, so a regression fails on a timeout
instead of hanging the tests."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from multiprocessing.context import SpawnProcess
from pathlib import Path

import pytest

from companion.experiments.runs.pool import _held, _launcher, run_all, threads_per_worker

ROOT = Path(__file__).resolve().parents[1]
HINT = "run the same command again to continue"


@pytest.mark.parametrize("jobs", [2, 3, 16])
def test_several_workers_get_one_thread_each_by_default(jobs):
    assert threads_per_worker(jobs, None) == 1


def test_one_process_keeps_torchs_default():
    assert threads_per_worker(1, None) is None


@pytest.mark.parametrize(("jobs", "threads"), [(1, 2), (2, 2), (4, 1)])
def test_threads_asked_for_are_kept(jobs, threads):
    assert threads_per_worker(jobs, threads) == threads


@pytest.mark.slow
@pytest.mark.parametrize("death", ["sigkill", "sigterm", "exit-3"])
def test_a_worker_that_dies_in_a_run_stops_the_others(tmp_path, death):
    # a finishes; b would run for minutes; c (once a is done) ends its process.
    outcome = _run_all_in_child(tmp_path, ("a", "ok"), ("b", "sleep"), ("c", death))
    assert outcome["raised"] == "WorkerDied"
    assert re.fullmatch(
        r"a worker process died; [01] of 3 runs had finished; " + re.escape(HINT),
        outcome["message"],
    ), outcome["message"]
    assert outcome["seconds"] < 10  # seen within seconds, and b was stopped, not waited for


@pytest.mark.slow
def test_runs_without_deaths_come_back_in_order(tmp_path):
    outcome = _run_all_in_child(tmp_path, ("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert outcome["returned"] == ["a", "b", "c"]


@pytest.mark.slow
def test_an_error_in_a_run_is_raised_in_the_parent_as_before(tmp_path):
    outcome = _run_all_in_child(tmp_path, ("a", "ok"), ("f", "fail"), ("b", "sleep"))
    assert (outcome["raised"], outcome["message"]) == ("ValueError", "f failed")
    assert outcome["seconds"] < 10


@pytest.mark.slow
def test_an_error_in_a_run_carries_the_workers_traceback_as_its_cause(tmp_path):
    outcome = _run_all_in_child(tmp_path, ("f", "fail"))
    assert outcome["cause"].startswith("_RemoteTraceback(")
    assert "in _act" in outcome["cause"] and "ValueError: f failed" in outcome["cause"]


def test_workers_that_started_are_stopped_when_a_later_one_fails_to_start(monkeypatch):
    started = []
    real = SpawnProcess.start

    def start(process):  # the second start fails; the first worker must not be left running
        if started:
            raise OSError("no more processes")
        real(process)
        started.append(process)

    monkeypatch.setattr(SpawnProcess, "start", start)
    with pytest.raises(OSError, match="no more processes"):
        run_all(time.sleep, [60, 60], 2, HINT)
    assert [process.exitcode for process in started] == [-signal.SIGTERM]


def _run_all_in_child(folder: Path, *runs: tuple[str, str]) -> dict:
    """What :func:`_report` says of ``run_all`` over ``runs`` (name, what it does), 2 at a time,
    in a child process that must end within 60 s."""
    items = [(name, action, str(folder)) for name, action in runs]
    code = "import sys; sys.path.insert(0, sys.argv[1]); import test_pool; test_pool._report()"
    argv = [sys.executable, "-c", code, str(Path(__file__).parent), json.dumps(items)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.splitlines()[-1])


def _report() -> None:
    """In the child: run the items of ``sys.argv[2]`` and print what came of it, as JSON."""
    items = [tuple(item) for item in json.loads(sys.argv[2])]
    start = time.monotonic()
    try:
        outcome = {"returned": run_all(_act, items, 2, HINT)}
    except Exception as error:
        outcome = {
            "raised": type(error).__name__,
            "message": str(error),
            "cause": repr(error.__cause__),
        }
    print(json.dumps({**outcome, "seconds": time.monotonic() - start}))


def _act(item: tuple[str, str, str]) -> str:
    """A run, in a worker: ``item`` is (its name, what it does, the folder the runs share)."""
    name, action, folder = item
    shared = Path(folder)
    (shared / f"pid-{name}").write_text(str(os.getpid()))
    if action == "ok":
        (shared / f"done-{name}").touch()
    elif action == "fail":
        raise ValueError(f"{name} failed")
    elif action == "sleep":
        time.sleep(120)
    else:  # a death, once a is done and its result has reached the parent
        _wait_for(shared / "done-a")
        time.sleep(0.5)
        if action == "exit-3":
            os._exit(3)
        os.kill(os.getpid(), getattr(signal, action.upper()))
        time.sleep(120)  # the signal ends this process first
    return name


def _wait_for(path: Path) -> None:
    """Until ``path`` exists (another run writes it); a run that never comes fails after 30 s."""
    deadline = time.monotonic() + 30
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never came")
        time.sleep(0.01)


def test_a_dead_worker_is_reported_by_the_commands_in_one_line(capsys):
    from companion.experiments.runs.pool import WorkerDied
    from companion.train.cli import run_reporting_errors

    def died():
        raise WorkerDied("the worker running run r died (killed by SIGKILL, pid 7); go on so")

    assert run_reporting_errors("python -m companion.ablation", died, debug=False) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "python -m companion.ablation: error: the worker running run r died (killed by SIGKILL, "
        "pid 7); go on so"
    ]


def test_a_ctrl_c_while_the_pool_starts_is_held_then_raised_not_lost():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reached = False
    with pytest.raises(KeyboardInterrupt), _held(signal.SIGINT):
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, in this thread: held
        reached = True
    assert reached and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an ignored Ctrl-C stays ignored
    try:
        with _held(signal.SIGINT):
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_workers_are_launched_with_ctrl_c_ignored_by_the_shell():
    launcher = _launcher()
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    out = subprocess.run([launcher, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
