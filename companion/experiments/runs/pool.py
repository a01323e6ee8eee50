"""Runs in separate processes, ``jobs`` at a time, that stop together: the parent alone answers
Ctrl-C and SIGTERM (a worker starts with SIGINT ignored) and then stops every worker; a worker
whose parent dies, even by SIGKILL, ends itself within half a second.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context, spawn
from typing import Any, TypeVar

Item = TypeVar("Item")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while runs were going; the message says what finished."""


class WorkerDied(ChildProcessError):  # noqa: N818 (it says what happened, as Interrupted does)
    """A worker process ended before it answered (an ``OSError``: the commands print one line)."""


def run_all(task: Callable[[Item], Any], items: Sequence[Item], jobs: int, hint: str) -> list[Any]:
    """``[task(item) for item in items]``, ``jobs`` processes at a time (``jobs=1``: here). The
    first error is raised with its worker's traceback as its cause, and the other runs stop."""
    done: list[Any] = []
    if jobs == 1 or not items:
        try:
            for item in items:
                done.append(task(item))
        except KeyboardInterrupt:
            stopped = f"interrupted: {len(done)} of {len(items)} runs had finished; {hint}"
            raise Interrupted(stopped) from None
        return done
    pool = ProcessPoolExecutor(
        min(jobs, len(items)), get_context("spawn"), initializer=_ready, initargs=(os.getpid(),)
    )
    previous = spawn.get_executable()
    try:
        spawn.set_executable(_launcher())  # every worker starts with SIGINT ignored
        with _held(signal.SIGINT, signal.SIGTERM):  # raised once every worker has started
            futures = [pool.submit(task, item) for item in items]
        for future in as_completed(futures):
            done.append(future.result())  # the first error to arrive is raised here
        return [future.result() for future in futures]
    except KeyboardInterrupt:
        stopped = f"interrupted: {len(done)} of {len(items)} runs had finished; {hint}"
        raise Interrupted(stopped) from None
    except BrokenProcessPool:
        died = f"a worker process died; {len(done)} of {len(items)} runs had finished; {hint}"
        raise WorkerDied(died) from None
    finally:
        spawn.set_executable(previous)
        for process in list((pool._processes or {}).values()):  # at once: running runs stop
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _held(*signals: signal.Signals) -> Iterator[None]:
    """Within the block, ``signals`` handled in Python are held and the first one is handed to
    its handler when the block ends: a Ctrl-C while a worker starts would cut off the start's
    data half-sent (the worker dies printing a traceback) or leave a worker nobody stops."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers, and only it runs them
        return
    caught: list[int] = []
    previous: dict[int, Callable[[int, Any], Any]] = {}
    for signum in signals:
        handler = signal.getsignal(signum)
        if callable(handler):  # not an ignored or default signal
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        for number, kept in previous.items():
            signal.signal(number, kept)
        if caught:
            previous[caught[0]](caught[0], None)


def threads_per_worker(jobs: int, threads: int | None) -> int | None:
    """The torch threads each run gets: ``threads`` if given, else torch's default with one
    process and 1 with several (on 2 cores, two 2-thread processes ran 2.7 times slower)."""
    return threads if threads is not None or jobs == 1 else 1


_LAUNCHER: list[str] = []  # the launcher this process wrote, once


def _launcher() -> str:
    """A launcher that starts this Python with SIGINT ignored: an ignored signal stays ignored
    across ``exec``, so a terminal's Ctrl-C cannot stop a worker half-way through its start."""
    if not _LAUNCHER:
        folder = tempfile.mkdtemp(prefix="companion-pool-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "python")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(sys.executable)} \"$@\"\n")
        os.chmod(path, 0o700)
        _LAUNCHER.append(path)
    return _LAUNCHER[0]


def _ready(parent: int) -> None:
    """A worker's start: leave Ctrl-C to the parent, and end when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the parent died (an orphan is re-parented): nobody would read our results
