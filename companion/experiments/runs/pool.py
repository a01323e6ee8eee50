"""Runs in parallel processes that stop when told: no orphans, no queue drained first.

The ablation's and the resolution experiment's ``--jobs`` hand their runs to :func:`run_all`: each
worker is a spawned process with a pipe of its own, handed one run at a time, so the parent always
knows which run a worker is on. The parent alone answers Ctrl-C and SIGTERM; the workers ignore
SIGINT from their first instruction (:func:`_launcher`), a Ctrl-C while they start is held
(:func:`_held`), and on an interrupt or an error they are stopped at once. A worker whose parent
dies (even by SIGKILL) ends itself within half a second; one that dies is seen at once.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing import get_context, spawn
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

Item = TypeVar("Item")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while runs were going; the message says what finished."""


class RemoteTraceback(Exception):  # noqa: N818 (it is a traceback, shown as the cause)
    """Where a run failed in its worker: the worker's traceback, as text."""


class WorkerDied(ChildProcessError):  # noqa: N818 (it says what happened, as Interrupted does)
    """A worker process ended while runs were going. (An ``OSError``: the commands report it in
    one line, ``companion.train.cli.run_reporting_errors``, with status 1.)"""


def run_all(
    task: Callable[[Item], Any],
    items: Sequence[Item],
    jobs: int,
    resume_hint: str,
    *,
    describe: Callable[[Item], str] = str,
) -> list[Any]:
    """``[task(item) for item in items]``, ``jobs`` processes at a time (``jobs=1``: in this
    process; ``task`` picklable otherwise). The first run's error to arrive is raised here, with
    the worker's traceback as its cause, and the runs still going are stopped (what finished is
    kept by the caller); an interrupt raises :class:`Interrupted`, a dead worker
    :class:`WorkerDied` naming its item (``describe``), each saying how many finished, then
    ``resume_hint``."""
    done: dict[int, Any] = {}
    workers: list[tuple[BaseProcess, Connection]] = []
    running: dict[int, int | None] = {}  # worker -> the index of the run it is on (None: idle)
    waiting = list(enumerate(items))[::-1]  # popped from the end: in order
    try:
        if jobs == 1:
            for index, item in enumerate(items):
                done[index] = task(item)
            return list(done.values())
        with _held(signal.SIGINT, signal.SIGTERM):  # raised once the workers can be stopped
            workers = _start_workers(task, min(jobs, len(items)))
        for w, (_, conn) in enumerate(workers):
            running[w] = _hand(conn, waiting)
        while len(done) < len(items):
            ready = wait([c for _, c in workers] + [p.sentinel for p, _ in workers])
            for w, (process, conn) in enumerate(workers):
                answer = _receive(conn) if conn in ready else None  # sent before it ended: first
                if answer is not None:
                    failed, value = answer
                    if failed:
                        error, where = value
                        raise error from RemoteTraceback(where)
                    held = running[w]
                    assert held is not None  # a worker answers only a run it was handed
                    done[held] = value
                    running[w] = _hand(conn, waiting)
                elif conn in ready or process.sentinel in ready:  # it ended
                    process.join()
                    on = running[w]
                    what = None if on is None else describe(items[on])
                    raise WorkerDied(_died(process, what, len(done), len(items), resume_hint))
        return [done[index] for index in range(len(items))]
    except KeyboardInterrupt:
        stopped = f"interrupted: {len(done)} of {len(items)} runs had finished; {resume_hint}"
        raise Interrupted(stopped) from None
    finally:
        for process, conn in workers:  # at once: running runs stop, waiting ones never start
            process.terminate()  # SIGTERM ends a worker, whatever run it is in
            process.join()
            conn.close()


def threads_per_worker(jobs: int, threads: int | None) -> int | None:
    """The torch threads each run gets: ``threads`` if given, else torch's default in this
    process (``jobs=1``) and 1 in each of several: torch's default (every core) in each of
    several processes oversubscribes a small CPU (on 2 cores, two 2-thread processes moved the
    resolution experiment's test runs 2.7 times slower than two 1-thread ones)."""
    return threads if threads is not None or jobs == 1 else 1


def _receive(conn: Connection) -> tuple[bool, Any] | None:
    """A worker's answer, or ``None`` when its pipe ended (it died, maybe while it answered)."""
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


def _hand(conn: Connection, waiting: list[tuple[int, Any]]) -> int | None:
    """Send a worker the next waiting run; its index (``None``: none left, or the worker's pipe
    is gone: it died after its last answer, which the caller sees next as a dead worker)."""
    if not waiting:
        return None
    try:
        conn.send(waiting[-1][1])
    except OSError:
        return None
    return waiting.pop()[0]


def _died(process: BaseProcess, what: str | None, done: int, total: int, hint: str) -> str:
    """What :class:`WorkerDied` says: which run (``what``; ``None``: the worker was idle) died
    how, how many finished, how to go on."""
    how = f"{_how(process.exitcode)}, pid {process.pid}"
    if what is None:
        who, left = "a worker process died before reporting its run", f", {total - done} had not"
    else:
        who, left = f"the worker running {what} died", ""
    return f"{who} ({how}); {done} of {total} runs had finished{left}; {hint}"


@contextmanager
def _held(*signals: signal.Signals) -> Iterator[None]:
    """Within the block, ``signals`` whose handler is Python's are held: the first one is handed
    to its handler when the block ends, so a Ctrl-C while the workers start neither leaves
    workers that nobody stops nor is lost. Ignored or default signals, and threads other than
    the main one (where Python runs handlers), are left as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for signum in signals:
        handler = signal.getsignal(signum)
        if callable(handler):
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            previous[signal.Signals(caught[0])](caught[0], None)


def _start_workers(task: Callable[[Any], Any], jobs: int) -> list[tuple[BaseProcess, Connection]]:
    """``jobs`` spawned workers running :func:`_work`, each with its end of a pipe."""
    context, launcher = get_context("spawn"), _launcher()
    previous = spawn.get_executable()
    if launcher is not None:
        spawn.set_executable(launcher)
    workers: list[tuple[BaseProcess, Connection]] = []
    try:
        for _ in range(jobs):
            mine, theirs = context.Pipe()
            process = context.Process(target=_work, args=(task, theirs, os.getpid()), daemon=True)
            workers.append((process, mine))
            process.start()
            theirs.close()
    except BaseException:  # the ones that started are stopped, not left waiting for a run
        for started, end in workers:
            if started.pid is not None:
                started.terminate()
                started.join()
            end.close()
        raise
    finally:
        spawn.set_executable(previous)
    return workers


_LAUNCHER: list[str] = []  # the launcher this process wrote, once


def _launcher() -> str | None:
    """A launcher that starts this Python with SIGINT ignored (``trap '' INT``; ``None`` without
    a POSIX shell): an ignored signal stays ignored across ``exec``, so a terminal's Ctrl-C (sent
    to the whole process group) cannot stop a worker half-way through its start. (The parent
    never ignores SIGINT itself, even for a moment: one of its threads could take it.)"""
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return None
    if not _LAUNCHER:
        folder = tempfile.mkdtemp(prefix="companion-pool-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "python")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(sys.executable)} \"$@\"\n")
        os.chmod(path, 0o700)
        _LAUNCHER.append(path)
    return _LAUNCHER[0]


def _how(exitcode: int | None) -> str:
    """How a process ended, from its ``exitcode``."""
    if exitcode is None:
        return "exit code unknown"
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        return f"killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"killed by signal {-exitcode}"


def _work(task: Callable[[Any], Any], conn: Connection, parent: int) -> None:
    """A worker: leave Ctrl-C to the parent, end when the parent is gone, and run what the
    parent sends, answering ``(False, result)`` or ``(True, (error, its traceback))`` for each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    while True:
        item = conn.recv()
        try:
            answer = (False, task(item))
        except Exception as exc:
            answer = (True, (exc, traceback.format_exc()))
        try:
            conn.send(answer)
        except Exception:  # pickling failed before anything was written: send the error's text
            error, where = answer[1] if answer[0] else (answer[1], traceback.format_exc())
            conn.send((True, (RuntimeError(repr(error)), where)))


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the parent died (an orphan is re-parented): nobody would read our results
